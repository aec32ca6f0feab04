// Search in a document: over the app's text of its pages (what the text layer and the text view are mapped
// from), so one search serves every kind of document. Case-insensitive; a space in the query matches any
// run of whitespace (a line break in the page text included).
export interface SearchHit {
  page: number;
  start: number;
  end: number;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The query as a pattern, or null when it has nothing to look for. */
export function searchPattern(query: string): RegExp | null {
  const words = query.trim().split(/\s+/).filter(Boolean);
  if (!words.length) return null;
  return new RegExp(words.map(escapeRegExp).join('\\s+'), 'giu');
}

/** Every hit of the query, page by page, in text order; at most `limit`. */
export function searchPages(
  pages: readonly { page: number; text: string }[],
  query: string,
  limit = 1000,
): SearchHit[] {
  const re = searchPattern(query);
  if (!re) return [];
  const hits: SearchHit[] = [];
  for (const p of pages) {
    re.lastIndex = 0;
    for (let m = re.exec(p.text); m; m = re.exec(p.text)) {
      if (m[0].length === 0) {
        re.lastIndex++;
        continue;
      }
      hits.push({ page: p.page, start: m.index, end: m.index + m[0].length });
      if (hits.length >= limit) return hits;
    }
  }
  return hits;
}

/** The hit after (step 1) or before (step -1) `current`, wrapping around; -1 when there are none. */
export function stepHit(count: number, current: number, step: 1 | -1): number {
  if (count === 0) return -1;
  if (current < 0) return step === 1 ? 0 : count - 1;
  return (current + step + count) % count;
}
