// The room a document leaves for its conversation, and the pages that fit a context with that room: one rule
// for the app core (read-plan.ts, the documents service) and the UI (the pages it offers to compress instead
// of a document read with re-based positions). Plain functions with no imports of Node, so the renderer
// imports them as they are.
import type { DocumentPage } from '../api/contract.ts';

/** Positions kept for the conversation after a document when the settings say nothing: at most this, and at
 * most a quarter of the context. */
export const DEFAULT_CONVERSATION_ROOM = 1024;
/** The least room a document may leave: less, and it is read with re-based positions instead. */
export const MIN_CONVERSATION_ROOM = 64;

/** The room kept for the conversation in a context of `positions`: the setting, or 1,024; at most a quarter. */
export function conversationRoom(positions: number, setting: number | null): number {
  return Math.max(1, Math.min(setting ?? DEFAULT_CONVERSATION_ROOM, Math.floor(positions / 4)));
}

/** The largest number of pages from the first that fit in `budget` tokens, given each page's token range. */
export function pagesThatFit(pages: readonly DocumentPage[], budget: number): number {
  let n = 0;
  for (const p of pages) {
    if (p.tokenEnd > budget) break;
    n++;
  }
  return n;
}

/**
 * The pages, from the first, whose tokens (counted from the start of the prefix, so the system prompt is
 * included) end within the context less the conversation's room: [first, last], or null when not even the
 * first page fits.
 */
export function fittingPages(
  pages: readonly DocumentPage[],
  contextTokens: number,
  roomSetting: number | null,
): [number, number] | null {
  const n = pagesThatFit(pages, contextTokens - conversationRoom(contextTokens, roomSetting));
  return n > 0 ? [pages[0].page, pages[n - 1].page] : null;
}
