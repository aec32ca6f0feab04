// From the engine's tokens back to the document: which page and which characters each token came from, the
// tokens of a page range, and the compression's per-token retention folded onto passages of text.
//
// Input: the pages and, per page, the byte length of each token the engine made of that page's text (the
// UTF-8 length of each piece; the ids themselves are not needed). Tokens are laid over the UTF-8 bytes of
// the page text in order. A token's characters are the smallest range of UTF-16 code units (JavaScript
// string indices, as in RetainedPassage) covering its bytes: when a multi-byte character is split across
// tokens (byte-level BPE does that), each of those tokens maps to that whole character, and a token of
// 4-byte character (an emoji) covers its surrogate pair. Tokens of a page's lead (a separator tokenized
// with the page) or past its text's end (template tokens) map to an empty range at the nearest end.
// All functions are pure and linear in the tokens.

export interface PageTokens {
  /** The engine's token ids (optional; when given, their count must match `bytes`). */
  ids?: ArrayLike<number>;
  /** UTF-8 byte length of each token's piece. */
  bytes: ArrayLike<number>;
  /** Index in the engine's token sequence of this page's first token; default: right after the previous page's. */
  start?: number;
  /** Bytes at the start of these tokens that are not page text (e.g. a "\n\n" separator); default 0. */
  leadBytes?: number;
}

export interface MappedPage {
  page: number;
  text: string;
  /** The page's tokens: [tokenStart, tokenEnd) in the engine's sequence. */
  tokenStart: number;
  tokenEnd: number;
  /** UTF-8 bytes of the text, and of the tokens after the lead; equal when the tokens cover the text exactly. */
  textBytes: number;
  tokenBytes: number;
}

export interface TokenMap {
  /** Token indices covered: [start, end) of the engine's sequence. Gaps between pages map to page 0. */
  readonly start: number;
  readonly end: number;
  readonly pages: readonly MappedPage[];
  /** Per token (index - start): page number (0: not page text), and its character range in that page. */
  readonly page: Int32Array;
  readonly charStart: Int32Array;
  readonly charEnd: Int32Array;
}

export interface TokenSpan {
  page: number;
  charStart: number;
  charEnd: number;
}

/** Start bytes and start indices of each code point of a string, with a sentinel at the end. */
function codePoints(text: string): { byte: Uint32Array; char: Uint32Array; count: number } {
  const byte = new Uint32Array(text.length + 1);
  const char = new Uint32Array(text.length + 1);
  let b = 0;
  let k = 0;
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i);
    byte[k] = b;
    char[k] = i;
    k++;
    if (c < 0x80) {
      b += 1;
      i += 1;
    } else if (c < 0x800) {
      b += 2;
      i += 1;
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      b += 4;
      i += 2;
    } else {
      b += 3;
      i += 1;
    } // BMP, or a lone surrogate (encoded as U+FFFD, 3 bytes)
  }
  byte[k] = b;
  char[k] = text.length;
  return { byte, char, count: k };
}

/** Maps every token of every page to (page, charStart, charEnd). */
export function mapTokens(
  pages: readonly { page: number; text: string }[],
  tokens: readonly PageTokens[],
  opts: { start?: number } = {},
): TokenMap {
  if (pages.length !== tokens.length)
    throw new RangeError(`mapTokens: ${pages.length} pages but token lists for ${tokens.length}`);
  const starts: number[] = [];
  let at = opts.start ?? tokens[0]?.start ?? 0;
  const first = at;
  for (const t of tokens) {
    if (t.ids && t.ids.length !== t.bytes.length) throw new RangeError('mapTokens: ids and bytes differ in length');
    if (t.start !== undefined) {
      if (t.start < at)
        throw new RangeError(`mapTokens: page tokens overlap (a page starts at ${t.start}, before ${at})`);
      at = t.start;
    }
    starts.push(at);
    at += t.bytes.length;
  }
  const end = at;
  const n = end - first;
  const page = new Int32Array(n);
  const charStart = new Int32Array(n);
  const charEnd = new Int32Array(n);
  const mapped: MappedPage[] = [];

  pages.forEach((p, pi) => {
    const t = tokens[pi];
    const cp = codePoints(p.text);
    const total = cp.byte[cp.count];
    const lead = t.leadBytes ?? 0;
    // Index of the code point containing byte b (b < total), found with a forward-only pointer.
    let k0 = 0;
    let k1 = 0;
    let off = -lead;
    let sum = 0;
    for (let j = 0; j < t.bytes.length; j++) {
      const len = Math.max(0, t.bytes[j] | 0);
      sum += len;
      const g = starts[pi] + j - first;
      page[g] = p.page;
      const b0 = Math.min(Math.max(off, 0), total);
      const b1 = Math.min(Math.max(off + len, 0), total);
      off += len;
      if (b1 <= b0) {
        // An empty token (a lead byte, a special token, past the end): an empty range where it stands.
        while (k0 + 1 < cp.count && cp.byte[k0 + 1] <= b0) k0++;
        const c = b0 >= total ? p.text.length : cp.byte[k0] === b0 ? cp.char[k0] : cp.char[k0 + 1];
        charStart[g] = c;
        charEnd[g] = c;
        continue;
      }
      while (k0 + 1 < cp.count && cp.byte[k0 + 1] <= b0) k0++;
      if (k1 < k0) k1 = k0;
      while (k1 + 1 < cp.count && cp.byte[k1 + 1] <= b1 - 1) k1++;
      charStart[g] = cp.char[k0];
      charEnd[g] = cp.char[k1 + 1];
    }
    mapped.push({
      page: p.page,
      text: p.text,
      tokenStart: starts[pi],
      tokenEnd: starts[pi] + t.bytes.length,
      textBytes: total,
      tokenBytes: sum - lead,
    });
  });
  return { start: first, end, pages: mapped, page, charStart, charEnd };
}

/** The page and characters of token t (an index in the engine's sequence), or null outside the pages. */
export function tokenSpan(map: TokenMap, t: number): TokenSpan | null {
  const i = t - map.start;
  if (i < 0 || t >= map.end || map.page[i] === 0) return null;
  return { page: map.page[i], charStart: map.charStart[i], charEnd: map.charEnd[i] };
}

/** The tokens of pages first..last (inclusive, by page number): [tokenStart, tokenEnd), or null when none. */
export function pageTokenRange(
  map: TokenMap,
  first: number,
  last = first,
): { tokenStart: number; tokenEnd: number } | null {
  let tokenStart = Infinity;
  let tokenEnd = -Infinity;
  for (const p of map.pages) {
    if (p.page < first || p.page > last || p.tokenEnd === p.tokenStart) continue;
    tokenStart = Math.min(tokenStart, p.tokenStart);
    tokenEnd = Math.max(tokenEnd, p.tokenEnd);
  }
  return tokenStart === Infinity ? null : { tokenStart, tokenEnd };
}

/** The tokens that overlap characters [start, end) of a page, or null when none does. */
export function charRangeTokens(
  map: TokenMap,
  page: number,
  start: number,
  end: number,
): { tokenStart: number; tokenEnd: number } | null {
  const p = map.pages.find((q) => q.page === page);
  if (!p) return null;
  let a = -1;
  let b = -1;
  for (let t = p.tokenStart; t < p.tokenEnd; t++) {
    const i = t - map.start;
    const s = map.charStart[i];
    const e = map.charEnd[i];
    const overlaps = e > s ? s < end && e > start : s >= start && s < end;
    if (overlaps) {
      if (a < 0) a = t;
      b = t + 1;
    }
  }
  return a < 0 ? null : { tokenStart: a, tokenEnd: b };
}

/** The pages tokens [tokenStart, tokenEnd) come from, in order (for citing pages). */
export function pagesOfTokens(map: TokenMap, tokenStart: number, tokenEnd: number): number[] {
  const out: number[] = [];
  for (let t = Math.max(tokenStart, map.start); t < Math.min(tokenEnd, map.end); t++) {
    const p = map.page[t - map.start];
    if (p && out[out.length - 1] !== p && !out.includes(p)) out.push(p);
  }
  return out;
}

export type PassageRule = 'sentences' | 'lines';

/** Lines that stand on their own: Markdown headings, list items, table rows. */
const STRUCTURED_LINE = /^\s*(?:#{1,6}\s|[-*+•]\s|\d{1,3}[.)]\s|\|)/;

export interface RetainedPassage {
  page: number;
  start: number;
  end: number;
  retention: number;
}

/**
 * Passages of a page's text, as [start, end) ranges without surrounding whitespace.
 *   lines:     each non-empty line.
 *   sentences: split after sentence-final punctuation (. ! ? … and CJK 。！？, with closing quotes and
 *              brackets) followed by whitespace, at blank lines, and at line breaks unless the sentence
 *              clearly runs on (the line ends with a lower-case letter, comma, semicolon or hyphen, or the
 *              next line starts with a lower-case letter, and neither line is a Markdown heading, a list
 *              item or a table row), so hard-wrapped text keeps its sentences while headings, list items
 *              and table rows become passages of their own.
 */
export function passages(text: string, rule: PassageRule): { start: number; end: number }[] {
  const cuts: number[] = [0];
  if (rule === 'lines') {
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) cuts.push(i + 1);
  } else {
    for (const m of text.matchAll(/[.!?…。！？]+["'’”»)\]]*(?=\s)|\n/g)) {
      const i = m.index! + m[0].length;
      if (m[0] === '\n') {
        const before = text.slice(Math.max(0, m.index! - 1), m.index!);
        const after = text.slice(i, i + 1);
        const blank = after === '\n' || before === '\n';
        const lineStart = text.lastIndexOf('\n', m.index! - 1) + 1;
        const structured =
          STRUCTURED_LINE.test(text.slice(lineStart, m.index!)) || STRUCTURED_LINE.test(text.slice(i, i + 8));
        if (!blank && !structured && (/[\p{Ll},;\-–]/u.test(before) || /\p{Ll}/u.test(after))) continue;
      }
      cuts.push(i);
    }
  }
  cuts.push(text.length);
  const out: { start: number; end: number }[] = [];
  for (let k = 0; k + 1 < cuts.length; k++) {
    let s = cuts[k];
    let e = cuts[k + 1];
    while (s < e && /\s/.test(text[s])) s++;
    while (e > s && /\s/.test(text[e - 1])) e--;
    if (e > s && (!out.length || s >= out[out.length - 1].end)) out.push({ start: s, end: e });
  }
  return out;
}

/**
 * Folds per-token retention (indexed by the engine's token index, values 0..1) onto passages: each token
 * counts for the passage holding its first non-space character; a passage's retention is the mean over
 * its tokens. Tokens without retention (past the array, NaN) are skipped, and so are passages without
 * tokens.
 */
export function foldRetention(
  map: TokenMap,
  retention: ArrayLike<number>,
  rule: PassageRule = 'sentences',
): RetainedPassage[] {
  const out: RetainedPassage[] = [];
  for (const p of map.pages) {
    const ps = passages(p.text, rule);
    const sum = new Float64Array(ps.length);
    const cnt = new Int32Array(ps.length);
    let k = 0;
    for (let t = p.tokenStart; t < p.tokenEnd; t++) {
      const i = t - map.start;
      let c = map.charStart[i];
      const e = map.charEnd[i];
      while (c < e && /\s/.test(p.text[c])) c++;
      if (c >= e) continue;
      const r = t < retention.length ? retention[t] : NaN;
      if (!Number.isFinite(r)) continue;
      while (k < ps.length && ps[k].end <= c) k++;
      if (k >= ps.length) break;
      if (c < ps[k].start) continue;
      sum[k] += Math.min(1, Math.max(0, r));
      cnt[k]++;
    }
    ps.forEach((q, j) => {
      if (cnt[j]) out.push({ page: p.page, start: q.start, end: q.end, retention: sum[j] / cnt[j] });
    });
  }
  return out;
}
