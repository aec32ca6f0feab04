// From the app's page text to a rendered document's text (a Word document's HTML, Markdown rendered): the
// page text was made from the same source, block by block and in order, but each side has characters the
// other lacks (the page text's list markers "•", "1." and table separators " | ", Markdown's "#", "*" and
// link targets; the HTML's footnote marks), and whitespace differs. alignTexts walks both in order, matching
// character for character and skipping whitespace; at a mismatch it skips, on one side or the other,
// whichever reaches the next matching pair soonest (within a look-ahead). Pure, tested on both formats'
// shapes; the overlay then draws each range of the page text over the characters it maps to.

/** For each character of `source`, the index of the same character in `target`, or -1 (whitespace, or not there). */
export function alignTexts(source: string, target: string, lookahead = 24): Int32Array {
  const map = new Int32Array(source.length).fill(-1);
  const ws = (c: string) => /\s/.test(c);
  // The next non-whitespace index from k (or the length).
  const next = (s: string, k: number) => {
    while (k < s.length && ws(s[k])) k++;
    return k;
  };
  // Does source[i] pair with target[j], and the following non-whitespace characters too (two in a row)?
  const pairs = (i: number, j: number) => {
    if (source[i] !== target[j]) return false;
    const i2 = next(source, i + 1),
      j2 = next(target, j + 1);
    return i2 >= source.length || j2 >= target.length || source[i2] === target[j2];
  };
  let i = next(source, 0),
    j = next(target, 0);
  while (i < source.length && j < target.length) {
    if (source[i] === target[j]) {
      map[i] = j;
      i = next(source, i + 1);
      j = next(target, j + 1);
      continue;
    }
    // Skip on the side that reaches a matching pair in fewer characters.
    let skipSource = -1,
      skipTarget = -1;
    for (let k = 1, a = i; k <= lookahead && a < source.length; k++) {
      a = next(source, a + 1);
      if (a < source.length && pairs(a, j)) {
        skipSource = a;
        break;
      }
    }
    for (let k = 1, b = j; k <= lookahead && b < target.length; k++) {
      b = next(target, b + 1);
      if (b < target.length && pairs(i, b)) {
        skipTarget = b;
        break;
      }
    }
    if (skipSource >= 0 && (skipTarget < 0 || skipSource - i <= skipTarget - j)) i = skipSource;
    else if (skipTarget >= 0) j = skipTarget;
    else {
      i = next(source, i + 1);
      j = next(target, j + 1);
    }
  }
  return map;
}

/** A range of the source mapped through `map`: from its first mapped character to its last, or null. */
export function mapRange(map: Int32Array, start: number, end: number): [number, number] | null {
  let a = Math.max(0, start);
  const e = Math.min(map.length, end);
  while (a < e && map[a] < 0) a++;
  if (a >= e) return null;
  let b = e - 1;
  while (b > a && map[b] < 0) b--;
  return [map[a], map[b] + 1];
}

/** The pages' texts as one text (a blank line between pages) and where each page starts in it. */
export function joinPages(pages: readonly { page: number; text: string }[]): {
  text: string;
  base: Map<number, number>;
} {
  const base = new Map<number, number>();
  let at = 0;
  const parts: string[] = [];
  for (const p of pages) {
    base.set(p.page, at);
    parts.push(p.text);
    at += p.text.length + 2;
  }
  return { text: parts.join('\n\n'), base };
}
