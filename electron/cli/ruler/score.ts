// Scoring as RULER does it (string match, ignoring case): every expected value must be in the answer, and
// a question with several values scores the fraction found (RULER's string_match_all). A single-value
// question is stricter than RULER's containment: the answer must begin with the value, so that echoing the
// haystack cannot score; what follows the value is not read (a greedy decode runs on past the answer, as
// RULER's does). In the haystack (answerability), values count as whole words: 12 is not in 123.

/** How a question is scored. */
export type Scoring = 'exact' | 'all';

const normalize = (s: string) => s.toLowerCase().replace(/\s+/g, ' ').trim();
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The places `value` stands in `text` as a whole word (no letter or digit right before or after it). */
function wordPattern(value: string): RegExp {
  return new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegExp(normalize(value))}(?![\\p{L}\\p{N}])`, 'gu');
}

/** How often `value` stands in `text` as a whole word, ignoring case and runs of white space. */
export function countWord(text: string, value: string): number {
  return normalize(text).match(wordPattern(value))?.length ?? 0;
}

/** 1 when the answer, after leading white space and punctuation, begins with the value. */
export function scoreExact(output: string, value: string): number {
  return normalize(output)
    .replace(/^[\s"'“‘:,.*-]+/u, '')
    .startsWith(normalize(value))
    ? 1
    : 0;
}

/** The fraction of the values the answer holds (RULER's string_match_all). */
export function scoreAll(output: string, values: readonly string[]): number {
  const text = normalize(output);
  return values.filter((v) => text.includes(normalize(v))).length / values.length;
}

export function score(scoring: Scoring, output: string, values: readonly string[]): number {
  return scoring === 'exact' ? scoreExact(output, values[0]) : scoreAll(output, values);
}
