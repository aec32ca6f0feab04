// The library's questions to the user and what answers them (a file already in the library: duplicate.ts):
// the password of an encrypted PDF (asked when its import says one is needed, and again,
// saying so, when it was wrong), renaming documents, trying a failed import again where that can help,
// and dismissing failed imports. The password goes to the core in one call and is kept nowhere here.
import { create } from 'zustand';

import type { DocumentSummary } from '../../../electron/api/contract.ts';
import { api, errorMessage } from '../api/client.ts';
import { deleteDocument, recompressDocument, useDocuments } from './documents.ts';
import { registerTask } from './tasks.ts';
import { notify } from './ui.ts';

export interface PasswordQuestion {
  documentId: string;
  fileName: string;
  /** The last password given was wrong. */
  wrong: boolean;
}

export interface LibraryState {
  password: PasswordQuestion | null;
  /** The failed imports' section is open. */
  failedOpen: boolean;
  /** Documents picked for a chat over a set, in the order picked (the order the model reads them). */
  picked: string[];
}

const initial: LibraryState = { password: null, failedOpen: true, picked: [] };
export const useLibrary = create<LibraryState>()(() => ({ ...initial }));

export function resetLibrary(): void {
  useLibrary.setState({ ...initial }, true);
}

/** Picks a document for a chat over a set, or puts it back. */
export function togglePicked(documentId: string): void {
  useLibrary.setState((s) => ({
    picked: s.picked.includes(documentId) ? s.picked.filter((id) => id !== documentId) : [...s.picked, documentId],
  }));
}

export function clearPicked(): void {
  useLibrary.setState({ picked: [] });
}

export function askPassword(d: Pick<DocumentSummary, 'id' | 'fileName' | 'errorCode'>): void {
  useLibrary.setState({
    password: { documentId: d.id, fileName: d.fileName, wrong: d.errorCode === 'PASSWORD_WRONG' },
  });
}

export function closePassword(): void {
  useLibrary.setState({ password: null });
}

/**
 * A document changed: when its import has just stopped for a password, the password is asked for (again,
 * saying it was wrong, after a wrong one).
 */
export function onDocumentChanged(before: DocumentSummary | undefined, d: DocumentSummary): void {
  if (d.status === 'failed' && d.remedy === 'password' && before && before.status !== 'failed') askPassword(d);
}

useDocuments.subscribe((s, prev) => {
  if (s.byId === prev.byId) return;
  for (const id of Object.keys(s.byId)) if (s.byId[id] !== prev.byId[id]) onDocumentChanged(prev.byId[id], s.byId[id]);
});

/** Reads a failed import's file again (the core holds it), with the PDF's password where one is needed. */
export async function importAgain(documentId: string, password?: string): Promise<void> {
  const title = useDocuments.getState().byId[documentId]?.fileName ?? null;
  try {
    const r = await api().call('documents.import', password === undefined ? { documentId } : { documentId, password });
    registerTask(r.taskId, 'import', r.documentId, title);
  } catch (e) {
    notify(`Could not read the file again: ${errorMessage(e)}`);
  }
}

/** Answers an import waiting before a long OCR: all its pages, or a range of them. */
export async function chooseOcrPages(documentId: string, pages: 'all' | [number, number]): Promise<void> {
  try {
    await api().call('documents.chooseOcrPages', { documentId, pages });
  } catch (e) {
    notify(`The pages were not chosen: ${errorMessage(e)}`);
  }
}

export async function submitPassword(password: string): Promise<void> {
  const q = useLibrary.getState().password;
  closePassword();
  if (q) await importAgain(q.documentId, password);
}

/** What helps a failed document, run: its remedy (contract.ts failureRemedy). */
export function runRemedy(d: DocumentSummary): void {
  if (d.remedy === 'compress') void recompressDocument(d.id, d.readPages ?? undefined);
  else if (d.remedy === 'import') void importAgain(d.id);
  else if (d.remedy === 'password') askPassword(d);
}

export async function renameDocument(documentId: string, title: string): Promise<boolean> {
  try {
    const d = await api().call('documents.rename', { documentId, title });
    useDocuments.setState((s) => (s.byId[d.id] ? { byId: { ...s.byId, [d.id]: d } } : s));
    return true;
  } catch (e) {
    notify(`The document was not renamed: ${errorMessage(e)}`);
    return false;
  }
}

/** Removes failed imports from the library (they hold no pages or cache worth keeping). */
export async function dismissFailed(ids: readonly string[]): Promise<void> {
  for (const id of ids) await deleteDocument(id);
}

export function setFailedOpen(open: boolean): void {
  useLibrary.setState({ failedOpen: open });
}

/**
 * A document whose import or read its user cancelled: the core keeps it as failed (CANCELLED), to be read
 * again or go on from its checkpoint, but it is no failure and stays in the library's list.
 */
export function wasCancelled(d: Pick<DocumentSummary, 'status' | 'errorCode'>): boolean {
  return d.status === 'failed' && d.errorCode === 'CANCELLED';
}

function isFailure(d: DocumentSummary | undefined): boolean {
  return d?.status === 'failed' && !wasCancelled(d);
}

type DocumentList = { order: string[]; byId: Record<string, DocumentSummary> };

/** Failed documents, newest first: the failed imports, listed apart. */
export function failedIds(s: DocumentList): string[] {
  return s.order.filter((id) => isFailure(s.byId[id]));
}

/** The library's list: every document but the failed imports. */
export function workingIds(s: DocumentList): string[] {
  return s.order.filter((id) => !isFailure(s.byId[id]));
}
