// The room a document leaves for its conversation, and the pages that fit a context with that room: one rule
// for the app core (read-plan.ts, the documents service) and the UI (the ranges of pages it offers to compress
// instead of a document read with re-based positions); and which pages a read took in. Plain functions with
// no imports of Node, so the renderer imports them as they are.

/** A page with the token range a read made of it (the contract's DocumentPage has this shape). */
export interface DocumentPage {
  page: number;
  text: string;
  /** -1 when the read left the page out. */
  tokenStart: number;
  tokenEnd: number;
}

/** Positions kept for the conversation after a document when the settings say nothing: at most this, and at
 * most a quarter of the context. */
export const DEFAULT_CONVERSATION_ROOM = 1024;
/** The least room a document may leave: less, and it is read with re-based positions instead. */
export const MIN_CONVERSATION_ROOM = 64;

/** The room kept for the conversation in a context of `positions`: the setting, or 1,024; at most a quarter. */
export function conversationRoom(positions: number, setting: number | null): number {
  return Math.max(1, Math.min(setting ?? DEFAULT_CONVERSATION_ROOM, Math.floor(positions / 4)));
}

/** A read of a document, what ranges of its pages are measured by. */
export interface PagesRead {
  /** The pages in order, each with the token range it became, counted from the start of the prefix. */
  pages: readonly DocumentPage[];
  /** The whole prefix: the system prompt and the chat template around the pages, and the pages. */
  prefixTokens: number;
  /** The context (positions) the ranges must fit, with the room for the conversation. */
  contextTokens: number;
}

/** The pages a read took in (DocumentSummary.readPages): those of its range, or all of them. The cache holds
 * these only: its prefix text, its retention map and the pages its answers cite are made of them. */
export function pagesRead<P extends { page: number }>(
  pages: readonly P[],
  readPages: readonly [number, number] | null,
): P[] {
  return readPages ? pages.filter((p) => p.page >= readPages[0] && p.page <= readPages[1]) : [...pages];
}

/** A page the last read left out (-1) was not measured: what it takes is unknown, so no range holds it. */
const measured = (p: DocumentPage) => p.tokenStart >= 0;
/** A page that became no tokens (no text: its range is empty), or was not measured, takes no room. */
const hasTokens = (p: DocumentPage) => measured(p) && p.tokenEnd > p.tokenStart;

/**
 * For each page, the last page of the longest range from it that fits, or null when not even that page does
 * (or it was not measured: a range stops before a page the last read left out):
 * the prefix's tokens that are no page's (the system prompt and the template, before and after the pages) and
 * the tokens from the range's first page to its last, separators included, within the context less the
 * conversation's room. In one pass, for a page list of any length.
 */
export function fittingEnds(read: PagesRead, roomSetting: number | null): (number | null)[] {
  const { pages } = read;
  const withTokens = pages.filter(hasTokens);
  const before = withTokens.length ? withTokens[0].tokenStart : 0;
  const after = Math.max(0, read.prefixTokens - (withTokens.length ? withTokens.at(-1)!.tokenEnd : 0));
  const budget = read.contextTokens - conversationRoom(read.contextTokens, roomSetting) - before - after;
  const ends: (number | null)[] = pages.map(() => null);
  if (budget < 0) return ends;
  // Where a range from each page starts taking tokens: at its first page from there that has some.
  const startsAt = new Array<number>(pages.length);
  for (let i = pages.length - 1, at = Infinity; i >= 0; i--)
    startsAt[i] = at = hasTokens(pages[i]) ? pages[i].tokenStart : at;
  // j: the first page from i on that was not measured or whose tokens end beyond the budget. A later start
  // takes fewer tokens, so j never moves back.
  for (let i = 0, j = 0; i < pages.length; i++) {
    j = Math.max(j, i);
    while (j < pages.length && measured(pages[j]) && !(hasTokens(pages[j]) && pages[j].tokenEnd - startsAt[i] > budget))
      j++;
    if (j > i) ends[i] = pages[j - 1].page;
  }
  return ends;
}

/** The last page of the longest range from page `first` (or the next page there is) that fits (fittingEnds);
 * null when not even that page fits, or there is no page from `first` on. */
export function lastFittingPage(read: PagesRead, first: number, roomSetting: number | null): number | null {
  const i = read.pages.findIndex((p) => p.page >= first);
  return i < 0 ? null : fittingEnds(read, roomSetting)[i];
}

/** The longest range of pages from the document's first that fits (fittingEnds), or null when not even the
 * first page fits. */
export function fittingPages(read: PagesRead, roomSetting: number | null): [number, number] | null {
  const last = read.pages.length ? fittingEnds(read, roomSetting)[0] : null;
  return last === null ? null : [read.pages[0].page, last];
}
