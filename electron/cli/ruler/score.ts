// Scoring as RULER does it (string match, case-insensitive): every expected value must be in the answer,
// and a task with several values scores the fraction found (string_match_all). A single-answer question is
// stricter than RULER's containment: the answer must begin with the value, so echoing the haystack cannot
// score. Values match as whole words: 12 is not found in 123.

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

/** 1 when the answer, after leading white space and punctuation, begins with the value as a whole word. */
export function scoreExact(output: string, value: string): number {
  const start = normalize(output).replace(/^[\s"'“‘:,.*-]+/u, '');
  const m = wordPattern(value).exec(start);
  return m !== null && m.index === 0 ? 1 : 0;
}

/** The fraction of the values the answer holds as whole words (RULER's string_match_all). */
export function scoreAll(output: string, values: readonly string[]): number {
  return values.filter((v) => countWord(output, v) > 0).length / values.length;
}

export function score(scoring: Scoring, output: string, values: readonly string[]): number {
  return scoring === 'exact' ? scoreExact(output, values[0]) : scoreAll(output, values);
}
