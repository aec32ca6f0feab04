// Page text from positioned text runs (pdf.js text items), in reading order. Pure: no pdf.js here, so the
// rules are tested on hand-made runs.
//
// 1. Runs are grouped by writing direction (upright text, then text rotated by 90°, 180°, ... such as
//    margin stamps); each group is laid out in its own rotated frame, so rotated pages read like upright.
// 2. Fragments: consecutive runs on one baseline, moving forward, joined into pieces of lines. A space goes
//    where the gap between runs is wider than 0.15 em (or pdf.js put a whitespace item there). A gap wider
//    than 2 em ends the fragment (a column gutter or a table cell boundary). A run repeated on top of
//    itself (fake bold by overprinting) is dropped.
// 3. Reading order by recursive XY-cut on the fragments: a vertical gutter (>= 1 em) with column-like text
//    on both sides (each side at least 2 lines and 8 em wide, lines filling at least half the side) splits
//    the region into columns read left to right; otherwise the widest horizontal gap splits it into a part
//    above and a part below; when neither exists, fragments are read by rows (baseline, then x). Narrow
//    table-like columns are therefore read row by row.
// 4. Fragments left on one baseline in one column are joined into lines.
// 5. Paragraphs: a new paragraph at a change of font size (> 15%), a vertical gap above 1.7 times the
//    page's usual line pitch, or an indented first line; a line starting with a list marker, a line made
//    of several fragments (table cells) and a line after a table-of-contents entry (dot leaders) start a
//    new line. Otherwise a line continues the previous one (joined with a space) when the previous line was
//    wrapped: it reaches the right edge of its column so closely that the next line's first word would not
//    have fitted (or it ends with a hyphen). Lines that end short keep their line break (verse, addresses,
//    headings, table rows).
// 6. Hyphenation (when the document is rendered, see renderParagraphs): a wrapped line ending in letter +
//    hyphen is joined without a space; the hyphen is dropped when the next line starts with a lower-case
//    letter, unless the document elsewhere writes the joined word with a hyphen ("well-known"). Soft
//    hyphens are always dropped.
// 7. Whitespace: runs of spaces collapse to one, lines are trimmed, Latin ligatures are spelled out, NFC.

export interface TextRun {
  str: string;
  /** Start of the baseline in display space (y grows downward). */
  x: number;
  y: number;
  /** Advance along the writing direction. */
  width: number;
  /** Font size (em) in display units. */
  size: number;
  /** Unit writing direction in display space: (1, 0) for upright text. */
  dx: number;
  dy: number;
  hasEOL?: boolean;
}

export interface Paragraph {
  lines: string[];
  /** wrap[k]: line k continues line k - 1 (joined with a space or by hyphenation); else a line break. */
  wrap: boolean[];
  /** Font size of the first line. */
  size: number;
}

interface Frag {
  text: string;
  x0: number;
  x1: number;
  y: number;
  size: number;
  pendingSpace: boolean;
  firstWord: number;
  firstWordDone: boolean;
  lastStr: string;
  lastX: number;
  col: number;
}

interface Line {
  text: string;
  x0: number;
  x1: number;
  y: number;
  size: number;
  col: number;
  firstWord: number;
  /** Fragments joined into this line: more than one means cells of a table row. */
  cells: number;
}

/** Latin ligatures spelled out (the page text of every format uses the same table, documents/pages.ts). */
export const LIGATURES: Record<string, string> = {
  '\ufb00': 'ff',
  '\ufb01': 'fi',
  '\ufb02': 'fl',
  '\ufb03': 'ffi',
  '\ufb04': 'ffl',
  '\ufb05': 'st',
  '\ufb06': 'st',
};

/** Whitespace and character clean-up of one line (soft hyphens are kept for the line-end rule). */
export function cleanLine(s: string): string {
  return s
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f\u200b\u2060\ufeff]/g, '')
    .replace(/[\ufb00-\ufb06]/g, (c) => LIGATURES[c])
    .replace(/[\s\u00a0\u2000-\u200a\u202f\u205f\u3000]+/g, ' ')
    .trim()
    .normalize('NFC');
}

/** The middle value (the upper of the two middle ones for an even count); 0 for none. */
export function median(xs: readonly number[]): number {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

/** A table-of-contents entry: dot leaders, then a page number or label. */
const LEADER = /(?:\.\s?){4,}\s*\S{1,8}$/;
const MARKER = /^(?:[•◦▪▫‣∙●○■□◆◇►▸–—*-]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)]|\(?[ivxIVX]{1,5}[.)]|\[\d{1,3}\])(?:\s|$)/;

/** Builds fragments from runs in stream order (rule 2), in a frame where the text runs along +x. */
function fragments(runs: readonly TextRun[]): Frag[] {
  const out: Frag[] = [];
  let cur: Frag | null = null;
  for (const r of runs) {
    const size = r.size > 0.5 ? r.size : 1;
    if (!r.str || !/\S/.test(r.str)) {
      if (cur && r.str) cur.pendingSpace = true;
      continue;
    }
    if (cur && r.str === cur.lastStr && Math.abs(r.x - cur.lastX) < 0.3 * size && Math.abs(r.y - cur.y) < 0.2 * size)
      continue;
    const width = Math.max(0, r.width);
    let same = false;
    let gap = 0;
    if (cur) {
      const s = Math.max(cur.size, size);
      gap = r.x - cur.x1;
      same = Math.abs(r.y - cur.y) <= 0.45 * s && gap >= -0.5 * s && gap <= 2 * s;
    }
    if (cur && same) {
      const space = cur.pendingSpace || gap > 0.15 * Math.min(cur.size, size);
      const sep = space && !/\s$/.test(cur.text) && !/^\s/.test(r.str) ? ' ' : '';
      if (sep || /^\s/.test(r.str)) cur.firstWordDone = true;
      cur.text += sep + r.str;
      cur.x1 = Math.max(cur.x1, r.x + width);
      // The baseline of a line is the one of its biggest text (superscripts do not move it).
      if (size > cur.size * 1.05) {
        cur.y = r.y;
        cur.size = size;
      }
    } else {
      cur = {
        text: r.str,
        x0: r.x,
        x1: r.x + width,
        y: r.y,
        size,
        pendingSpace: false,
        firstWord: 0,
        firstWordDone: false,
        lastStr: '',
        lastX: 0,
        col: 0,
      };
      out.push(cur);
    }
    if (!cur.firstWordDone) {
      const word = /^\S*/.exec(r.str.trimStart())![0];
      cur.firstWord += r.str.length ? (width * word.length) / r.str.length : 0;
      if (word.length < r.str.trimStart().length) cur.firstWordDone = true;
    }
    cur.pendingSpace = false;
    cur.lastStr = r.str;
    cur.lastX = r.x;
    if (/\s$/.test(r.str)) cur.firstWordDone = true;
  }
  return out;
}

const top = (f: Frag) => f.y - 0.7 * f.size;
const bottom = (f: Frag) => f.y + 0.15 * f.size;

function byRows(frags: Frag[]): Frag[] {
  const s = [...frags].sort((a, b) => a.y - b.y || a.x0 - b.x0);
  const rows: Frag[][] = [];
  for (const f of s) {
    const row = rows[rows.length - 1];
    if (row && Math.abs(f.y - row[0].y) <= 0.45 * Math.max(f.size, row[0].size)) row.push(f);
    else rows.push([f]);
  }
  return rows.flatMap((r) => r.sort((a, b) => a.x0 - b.x0));
}

function columnLike(side: Frag[], em: number): boolean {
  if (side.length < 2) return false;
  const x0 = Math.min(...side.map((f) => f.x0));
  const x1 = Math.max(...side.map((f) => f.x1));
  const w = x1 - x0;
  return w >= 8 * em && median(side.map((f) => f.x1 - f.x0)) >= 0.5 * w;
}

/** Recursive XY-cut (rule 3); appends fragments in reading order with their column ids. */
function xyCut(frags: Frag[], col: number, ids: { next: number }, out: Frag[], depth: number): void {
  const finish = () => {
    for (const f of byRows(frags)) {
      f.col = col;
      out.push(f);
    }
  };
  if (frags.length <= 1 || depth > 256) {
    finish();
    return;
  }
  const em = median(frags.map((f) => f.size));

  const xs = [...frags].sort((a, b) => a.x0 - b.x0);
  const gaps: { at: number; w: number }[] = [];
  let reach = xs[0].x1;
  for (let i = 1; i < xs.length; i++) {
    if (xs[i].x0 > reach) gaps.push({ at: reach, w: xs[i].x0 - reach });
    reach = Math.max(reach, xs[i].x1);
  }
  gaps.sort((a, b) => b.w - a.w);
  for (const g of gaps) {
    if (g.w < em) break;
    const left = frags.filter((f) => f.x1 <= g.at + 1e-6);
    const right = frags.filter((f) => f.x1 > g.at + 1e-6);
    if (columnLike(left, em) && columnLike(right, em)) {
      xyCut(left, ids.next++, ids, out, depth + 1);
      xyCut(right, ids.next++, ids, out, depth + 1);
      return;
    }
  }

  const ys = [...frags].sort((a, b) => top(a) - top(b));
  let best = { at: 0, w: 0 };
  let reachY = bottom(ys[0]);
  for (let i = 1; i < ys.length; i++) {
    const t = top(ys[i]);
    if (t > reachY && t - reachY > best.w) best = { at: (t + reachY) / 2, w: t - reachY };
    reachY = Math.max(reachY, bottom(ys[i]));
  }
  if (best.w > 0) {
    xyCut(
      frags.filter((f) => top(f) < best.at),
      col,
      ids,
      out,
      depth + 1,
    );
    xyCut(
      frags.filter((f) => top(f) >= best.at),
      col,
      ids,
      out,
      depth + 1,
    );
    return;
  }
  finish();
}

/** Lays out the runs of one writing direction, already rotated so the text runs along +x. */
function layoutFrame(runs: readonly TextRun[]): Paragraph[] {
  const frags = fragments(runs);
  if (!frags.length) return [];
  const ordered: Frag[] = [];
  xyCut(frags, 0, { next: 1 }, ordered, 0);

  // Rule 4: fragments on one baseline in one column become one line.
  const lines: Line[] = [];
  for (const f of ordered) {
    const text = cleanLine(f.text);
    if (!text) continue;
    const prev = lines[lines.length - 1];
    if (
      prev &&
      prev.col === f.col &&
      Math.abs(f.y - prev.y) <= 0.45 * Math.max(f.size, prev.size) &&
      f.x0 >= prev.x1 - 0.5 * prev.size
    ) {
      prev.text += ' ' + text;
      prev.x1 = Math.max(prev.x1, f.x1);
      prev.cells++;
      continue;
    }
    lines.push({ text, x0: f.x0, x1: f.x1, y: f.y, size: f.size, col: f.col, firstWord: f.firstWord, cells: 1 });
  }
  if (!lines.length) return [];

  // Column edges; a column of one or two lines is measured against the whole frame.
  const all = { x0: Math.min(...lines.map((l) => l.x0)), x1: Math.max(...lines.map((l) => l.x1)) };
  const cols = new Map<number, { x0: number; x1: number; n: number }>();
  for (const l of lines) {
    const c = cols.get(l.col) ?? { x0: Infinity, x1: -Infinity, n: 0 };
    c.x0 = Math.min(c.x0, l.x0);
    c.x1 = Math.max(c.x1, l.x1);
    c.n++;
    cols.set(l.col, c);
  }
  const edge = (l: Line) => {
    const c = cols.get(l.col)!;
    return c.n >= 3 ? c : all;
  };
  const pitches: number[] = [];
  for (let i = 1; i < lines.length; i++) {
    const a = lines[i - 1];
    const b = lines[i];
    const d = b.y - a.y;
    if (
      a.col === b.col &&
      Math.abs(a.size - b.size) <= 0.15 * Math.max(a.size, b.size) &&
      d > 0.5 * a.size &&
      d < 2.5 * a.size
    )
      pitches.push(d / a.size);
  }
  const pitch = pitches.length ? median(pitches) : 1.2;

  // The right edge a line is measured against: the furthest line end nearby (three lines either way in its
  // column, same size), so an indented block (a quotation) has its own edge; a column's own edge when
  // there are too few neighbours to tell.
  const localRight = (i: number) => {
    const a = lines[i];
    let right = -Infinity;
    let n = 0;
    for (let j = Math.max(0, i - 3); j <= Math.min(lines.length - 1, i + 3); j++) {
      const l = lines[j];
      if (l.col !== a.col || Math.abs(l.size - a.size) > 0.15 * Math.max(l.size, a.size)) continue;
      right = Math.max(right, l.x1);
      n++;
    }
    return n >= 3 ? right : edge(a).x1;
  };
  const wrapped = (i: number) => {
    const a = lines[i - 1];
    const b = lines[i];
    if (/\p{L}[-\u00ad\u2010]$/u.test(a.text) && /^\p{L}/u.test(b.text)) return true;
    // The next word plus a space, and half an em of slack for ragged-right setting and width estimates.
    return localRight(i - 1) - a.x1 < b.firstWord + 1.1 * a.size;
  };
  const paragraphs: Paragraph[] = [];
  let para: Paragraph = { lines: [lines[0].text], wrap: [false], size: lines[0].size };
  for (let i = 1; i < lines.length; i++) {
    const a = lines[i - 1];
    const b = lines[i];
    const s = Math.max(a.size, b.size);
    let kind: 'wrap' | 'break' | 'para';
    if (Math.abs(a.size - b.size) > 0.15 * s) kind = 'para';
    else if (a.col !== b.col) kind = wrapped(i) && !MARKER.test(b.text) ? 'wrap' : 'para';
    else {
      const d = b.y - a.y;
      const indented = b.x0 > a.x0 + a.size && a.x0 <= edge(a).x0 + 0.5 * a.size && !MARKER.test(a.text);
      if (d > 1.7 * pitch * a.size) kind = 'para';
      else if (MARKER.test(b.text) || a.cells > 1 || b.cells > 1 || LEADER.test(a.text)) kind = 'break';
      else if (d < 0.3 * a.size) kind = 'break';
      else if (indented) kind = 'para';
      else kind = wrapped(i) ? 'wrap' : 'break';
    }
    if (kind === 'para') {
      paragraphs.push(para);
      para = { lines: [b.text], wrap: [false], size: b.size };
    } else {
      para.lines.push(b.text);
      para.wrap.push(kind === 'wrap');
    }
  }
  paragraphs.push(para);
  return paragraphs;
}

/** The paragraphs of a page from its text runs, in reading order (rules 1 to 5). */
export function layoutPage(runs: readonly TextRun[]): Paragraph[] {
  const groups = new Map<number, TextRun[]>();
  for (const r of runs) {
    let deg = (Math.atan2(r.dy, r.dx) * 180) / Math.PI;
    deg = Math.round(deg / 5) * 5;
    deg = ((deg % 360) + 360) % 360;
    const g = groups.get(deg);
    if (g) g.push(r);
    else groups.set(deg, [r]);
  }
  const order = [...groups.entries()].sort((a, b) => (a[0] === 0 ? -1 : b[0] === 0 ? 1 : b[1].length - a[1].length));
  const out: Paragraph[] = [];
  for (const [deg, group] of order) {
    const rad = (deg * Math.PI) / 180;
    const c = Math.cos(rad);
    const s = Math.sin(rad);
    const frame = deg === 0 ? group : group.map((r) => ({ ...r, x: r.x * c + r.y * s, y: -r.x * s + r.y * c }));
    out.push(...layoutFrame(frame));
  }
  return out;
}

/** Words written with a hyphen inside a line anywhere in the document ("well-known"), lower-cased. */
export function hyphenatedWords(pages: readonly (readonly Paragraph[])[]): Set<string> {
  const out = new Set<string>();
  for (const page of pages)
    for (const p of page)
      for (const l of p.lines)
        for (const m of l.matchAll(/\p{L}+(?:[-\u2010]\p{L}+)+/gu)) out.add(m[0].toLowerCase().replace(/\u2010/g, '-'));
  return out;
}

/** Joins a wrapped line to the next (rule 6). */
export function joinWrapped(a: string, b: string, hyphenated: ReadonlySet<string>): string {
  const h = /(\p{L}+)([-\u00ad\u2010])$/u.exec(a);
  if (!h || !/^\p{L}/u.test(b)) return a + ' ' + b;
  if (h[2] === '\u00ad') return a.slice(0, -1) + b;
  if (/^\p{Ll}/u.test(b)) {
    const next = /^\p{L}+/u.exec(b)![0];
    if (!hyphenated.has(`${h[1]}-${next}`.toLowerCase())) return a.slice(0, -1) + b;
  }
  return a + b;
}

/** The text of paragraphs: wrapped lines joined, line breaks kept, a blank line between paragraphs. */
export function renderParagraphs(paragraphs: readonly Paragraph[], hyphenated: ReadonlySet<string>): string {
  return paragraphs
    .map((p) => {
      let s = '';
      p.lines.forEach((l, i) => {
        if (i === 0) s = l;
        else if (p.wrap[i]) s = joinWrapped(s, l, hyphenated);
        else s += '\n' + l;
      });
      return s.replace(/\u00ad/g, '');
    })
    .filter((s) => s.trim())
    .join('\n\n');
}
