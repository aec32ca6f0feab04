// How a document sits in its context after its last read, and what its budget came to, for every place that
// says so (the library card, the document header, the chat, the read note): one reading of DocumentSummary.
import type { DocumentSummary } from '../../../electron/api/contract.ts';
import { budgetKind } from '../../../electron/shared/kv/budget.ts';
import { formatCount, formatPercent } from './format.ts';

/** Where the document's kept entries sit (DocumentSummary.kept.placement); null before a read recorded it. */
export function readKind(d: Pick<DocumentSummary, 'kept'>): 'own' | 'packed' | 'rebased' | null {
  return d.kept?.placement ?? null;
}

/**
 * The budget the read actually kept, "81 per head ≈ 20%", and why it is not the settings' when it is not
 * ("the context's positions hold no more", "raised above the window"); null before a read or without
 * compression.
 */
export function keptBudget(d: Pick<DocumentSummary, 'kept' | 'tokens' | 'compression'>): {
  text: string;
  why: string | null;
} | null {
  const perHead = d.kept?.perHead;
  if (perHead == null || d.tokens <= 0 || !d.compression || d.compression.method === 'full') return null;
  const share = perHead / d.tokens;
  const text = `${formatCount(perHead)} per head ≈ ${formatPercent(share, share < 0.1 ? 1 : 0)}`;
  const k = budgetKind(d.compression.budget);
  const asked = 'ratio' in k ? Math.round(k.ratio * d.tokens) : k.tokensPerHead;
  // A rounding apart is the same budget.
  if (Math.abs(perHead - asked) <= Math.max(1, 0.02 * asked)) return { text, why: null };
  const setting = 'ratio' in k ? formatPercent(k.ratio) : `${formatCount(k.tokensPerHead)} per head`;
  return {
    text,
    why:
      perHead < asked
        ? `The settings ask for ${setting}; the context's positions hold no more than ${formatCount(perHead)} per head beside the conversation's room.`
        : `The settings ask for ${setting}; raised to ${formatCount(perHead)} per head, above the observation window that every head keeps.`,
  };
}
