// One KV head's kept entries folded onto the document: which tokens of which pages the head kept (read from
// the saved cache by engine/session-file.ts), as counts per page and as character spans of each page's text,
// the observation window that every head keeps told apart from what the head chose.
import type { DocumentPage, KeptPositions } from '../api/contract.ts';

export interface KeptPositionsInput {
  layer: number;
  head: number;
  /** The head's kept positions, as the cache holds them (the document's own token indices: not re-based). */
  positions: ArrayLike<number>;
  /** Per prefix token: [page, charStart, charEnd] (page 0: not document text). */
  charMap: Int32Array;
  /** The pages read, with their token ranges. */
  pages: readonly DocumentPage[];
  prefixTokens: number;
  /** The observation window: the prefix's last tokens, kept by every head. */
  window: number;
}

export function foldKeptPositions(i: KeptPositionsInput): KeptPositions {
  const windowStart = Math.max(0, i.prefixTokens - i.window);
  const sorted = Int32Array.from(i.positions).sort();
  const perPage = new Map<number, number>();
  const spans: KeptPositions['spans'] = [];
  let inWindow = 0,
    outside = 0;
  for (const t of sorted) {
    const w = t >= windowStart && t < i.prefixTokens;
    if (w) inWindow++;
    const page = t >= 0 && t * 3 + 2 < i.charMap.length ? i.charMap[t * 3] : 0;
    if (page <= 0) {
      outside++; // the system prompt or the chat template around the pages
      continue;
    }
    perPage.set(page, (perPage.get(page) ?? 0) + 1);
    const start = i.charMap[t * 3 + 1],
      end = i.charMap[t * 3 + 2];
    const last = spans[spans.length - 1];
    // Neighbouring kept tokens of one page (and one kind) make one span.
    if (last && last.page === page && last.window === w && start <= last.end) last.end = Math.max(last.end, end);
    else if (end > start) spans.push({ page, start, end, window: w });
  }
  return {
    layer: i.layer,
    head: i.head,
    kept: sorted.length,
    prefixTokens: i.prefixTokens,
    window: Math.min(i.window, i.prefixTokens),
    inWindow,
    outsidePages: outside,
    pages: i.pages
      .filter((p) => p.tokenEnd > p.tokenStart)
      .map((p) => ({ page: p.page, tokens: p.tokenEnd - p.tokenStart, kept: perPage.get(p.page) ?? 0 })),
    spans,
  };
}
