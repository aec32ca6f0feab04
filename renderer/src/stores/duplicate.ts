// The question of a file the library has already (documents.import refused it as DUPLICATE): open the
// document it has, or import the file again beside it.
import { create } from 'zustand';

import { selectDocument } from './ui.ts';

export interface DuplicateQuestion {
  fileName: string;
  /** The document the library has with the same content. */
  existingId: string;
  existingTitle: string;
  /** Imports the file again, keeping both. */
  keepBoth: () => Promise<void>;
}

export const useDuplicate = create<{ question: DuplicateQuestion | null }>()(() => ({ question: null }));

export function resetDuplicate(): void {
  useDuplicate.setState({ question: null }, true);
}

/** The details of a DUPLICATE refusal (contract: documents.import). */
export function duplicateOf(e: unknown): { documentId: string; title: string } | null {
  const d = (e as { code?: string; details?: unknown }).details as
    | { documentId?: unknown; title?: unknown }
    | undefined;
  if ((e as { code?: string }).code !== 'DUPLICATE' || typeof d?.documentId !== 'string') return null;
  return { documentId: d.documentId, title: typeof d.title === 'string' ? d.title : '' };
}

export function askDuplicate(q: DuplicateQuestion): void {
  useDuplicate.setState({ question: q });
}

export function closeDuplicate(): void {
  useDuplicate.setState({ question: null });
}

/** Answers the duplicate question: open the document the library has, or import the file again beside it. */
export async function resolveDuplicate(choice: 'open' | 'keep'): Promise<void> {
  const q = useDuplicate.getState().question;
  closeDuplicate();
  if (!q) return;
  if (choice === 'open') selectDocument(q.existingId);
  else await q.keepBoth();
}
