// Where an answer's evidence can be located: the pages that share the most word sequences with it.
// A plain lexical measure (shared three-word sequences, then shared rare words), cheap enough to run after
// every answer; good enough to point a reader at the right page, not a claim of attribution.

const WORD = /[\p{L}\p{N}]+/gu;

function words(text: string): string[] {
  return (text.toLowerCase().match(WORD) ?? []).filter((w) => w.length > 1 || /\p{N}/u.test(w));
}

/** Up to `max` page numbers, best first, whose text shares enough with the answer. */
export function evidencePages(answer: string, pages: readonly { page: number; text: string }[], max = 3): number[] {
  return evidenceScores(answer, pages, max).map((s) => s.page);
}

/** evidencePages with each page's score (shared three-word sequences count twice, then rare words by their
 * rarity over the pages). */
export function evidenceScores(
  answer: string,
  pages: readonly { page: number; text: string }[],
  max = 3,
): { page: number; score: number }[] {
  const a = words(answer);
  if (a.length < 3) return [];
  const trigrams = new Set<string>();
  for (let i = 0; i + 2 < a.length; i++) trigrams.add(`${a[i]} ${a[i + 1]} ${a[i + 2]}`);
  // Document frequency of the answer's words over the pages, so common words count for little.
  const pageWords = pages.map((p) => words(p.text));
  const df = new Map<string, number>();
  for (const ws of pageWords) for (const w of new Set(ws)) df.set(w, (df.get(w) ?? 0) + 1);
  const answerWords = new Set(a.filter((w) => w.length > 3));
  const scored = pages.map((p, i) => {
    const ws = pageWords[i];
    let shared = 0;
    for (let k = 0; k + 2 < ws.length; k++) if (trigrams.has(`${ws[k]} ${ws[k + 1]} ${ws[k + 2]}`)) shared++;
    let rare = 0;
    for (const w of new Set(ws)) if (answerWords.has(w)) rare += Math.log((pages.length + 1) / (df.get(w) ?? 1));
    return { page: p.page, score: shared * 2 + rare, shared };
  });
  const best = scored.filter((s) => s.shared > 0 || s.score >= 2).sort((x, y) => y.score - x.score || x.page - y.page);
  return best.slice(0, max).map(({ page, score }) => ({ page, score }));
}
