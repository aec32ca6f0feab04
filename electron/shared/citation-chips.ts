// Which of an answer's cited pages get a chip under it: one rule for the app core (Message.pageRefs) and the UI
// (the chips of a chat over a set, whose pages need their documents). Plain, importing nothing.

/** Page chips at most, and the least share of the best page's a page needs for one. */
export const MAX_PAGE_REFS = 3;
const PAGE_REF_MIN_OF_BEST = 0.25;

/** The cited pages that get a chip: the best ones, those with at least a quarter of the first's share. */
export function citedChips<C extends { share: number }>(citations: readonly C[]): C[] {
  const best = citations[0]?.share ?? 0;
  return citations.filter((c) => c.share >= best * PAGE_REF_MIN_OF_BEST).slice(0, MAX_PAGE_REFS);
}
