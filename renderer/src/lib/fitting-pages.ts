// Which pages of a document fit its context with room left for the conversation: what the user is offered
// to compress instead when a document was read with re-based positions. The rule is the app core's
// (electron/services/read-plan.ts conversationRoom and prefix.ts pagesThatFit), restated here because that
// module estimates memory with node:os and cannot reach the renderer; fitting-pages.test.ts holds the two equal.
import type { DocumentPage } from '../../../electron/api/contract.ts';

/** Positions kept for the conversation when the settings say nothing (read-plan.ts DEFAULT_CONVERSATION_ROOM). */
export const DEFAULT_CONVERSATION_ROOM = 1024;

/** The room kept for the conversation in a context of `contextTokens`: the setting, or 1,024; at most a quarter. */
export function conversationRoom(contextTokens: number, setting: number | null): number {
  return Math.max(1, Math.min(setting ?? DEFAULT_CONVERSATION_ROOM, Math.floor(contextTokens / 4)));
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
  const budget = contextTokens - conversationRoom(contextTokens, roomSetting);
  let n = 0;
  for (const p of pages) {
    if (p.tokenEnd > budget) break;
    n++;
  }
  return n > 0 ? [pages[0].page, pages[n - 1].page] : null;
}
