// Pages for formats without fixed pages (DOCX, Markdown, plain text), and the text clean-up they share.
//
// The paging rule (one rule for all three formats):
//   - A document is a sequence of blocks: headings, paragraphs, list items, table rows, code blocks.
//     Blocks on one page are joined by their separator: a blank line ("\n\n") between paragraphs, a single
//     newline between the items of one list or the rows of one table.
//   - A page holds about PAGE_CHARS (3,000) characters. A block that would push the page past that starts
//     a new page; pages break only between blocks, never inside one, unless a single block is itself longer
//     than a page: then it is cut at the last line break, else sentence end, else space in the second half
//     of the page-sized window (and at PAGE_CHARS exactly only when there is none, never inside a
//     surrogate pair).
//   - A heading starts a new page once the current page is at least half full, so sections tend to begin
//     pages; a heading is never left as the last block of a page (it moves to the next page with its text).
//   - Every page has text; page numbers run from 1.
// Plain text with form feeds is paged by the form feeds instead (text.ts).
import type { RecognizedPage } from './ocr.ts';

import { LIGATURES } from '../shared/pdf-layout.ts';

export const PAGE_CHARS = 3000;

export interface Block {
  text: string;
  /** Heading level 1..6 for headings. */
  heading?: number;
  /** The separator before this block when it follows another on the same page (default: blank line). */
  sep?: '\n' | '\n\n';
}

export interface PageText {
  /** 1-based. */
  page: number;
  text: string;
  /** For a page read by OCR: its words, where they are on the page, and how sure the recogniser was. */
  ocr?: RecognizedPage;
}

/** What a parse reports progress on: reading the pages (their text layers), then recognising those without. */
export type ParseStage = 'read' | 'ocr';

/** Cuts a text longer than `max` into pieces of at most `max` characters at the best boundary available. */
export function splitLong(text: string, max: number): string[] {
  const out: string[] = [];
  let rest = text;
  while (rest.length > max) {
    const window = rest.slice(0, max + 1);
    const floor = Math.floor(max / 2);
    // Each candidate is [end of the piece, start of the rest].
    let cut: [number, number] | null = null;
    const nl = window.lastIndexOf('\n', max);
    if (nl >= floor) cut = [nl, nl + 1];
    if (!cut) {
      // Sentence ends: Latin punctuation before whitespace, or CJK full stops (no space follows those).
      const re = /[.!?…]["'’”)\]]*\s|[。！？][」』）”]*/g;
      for (let m = re.exec(window); m; m = re.exec(window)) {
        const ws = /\s$/.test(m[0]);
        const end = ws ? m.index + m[0].length - 1 : m.index + m[0].length;
        if (end >= floor && end <= max) cut = [end, ws ? end + 1 : end];
      }
    }
    if (!cut) {
      const ws = Math.max(window.lastIndexOf(' ', max), window.lastIndexOf('\t', max));
      if (ws >= floor) cut = [ws, ws + 1];
    }
    if (!cut) {
      let at = max;
      const c = rest.charCodeAt(at - 1);
      if (c >= 0xd800 && c <= 0xdbff) at--;
      cut = [at, at];
    }
    const piece = rest.slice(0, cut[0]).replace(/\s+$/, '');
    rest = rest.slice(cut[1]).replace(/^\s+/, '');
    if (piece) out.push(piece);
  }
  if (rest) out.push(rest);
  return out;
}

/** Groups blocks into pages of about `target` characters by the rule above. */
export function paginate(blocks: readonly Block[], target = PAGE_CHARS): PageText[] {
  const pages: Block[][] = [];
  let cur: Block[] = [];
  let len = 0;
  const flush = () => {
    if (cur.length) pages.push(cur);
    cur = [];
    len = 0;
  };
  const push = (b: Block) => {
    len += (cur.length ? (b.sep ?? '\n\n').length : 0) + b.text.length;
    cur.push(b);
  };
  for (const block of blocks) {
    if (!block.text.trim()) continue;
    const pieces = block.text.length > target ? splitLong(block.text, target) : [block.text];
    pieces.forEach((text, i) => {
      const b: Block = i === 0 ? { ...block, text } : { text, sep: '\n' };
      const added = (cur.length ? (b.sep ?? '\n\n').length : 0) + text.length;
      const headingBreak = b.heading !== undefined && len >= target / 2;
      if (cur.length && (headingBreak || len + added > target)) {
        // Keep a trailing heading with the text that follows it.
        const carry: Block[] = [];
        while (cur.length > 1 && cur[cur.length - 1].heading !== undefined) carry.unshift(cur.pop()!);
        flush();
        for (const c of carry) push(c);
      }
      push(b);
    });
  }
  flush();
  return pages.map((blocks, i) => ({
    page: i + 1,
    text: blocks.map((b, j) => (j === 0 ? '' : (b.sep ?? '\n\n')) + b.text).join(''),
  }));
}

/**
 * Clean-up shared by every format: CR/CRLF to LF, no BOM, zero-width spaces or soft hyphens, no C0/C1
 * control characters besides tab, newline and form feed, Latin ligatures spelled out, NFC, no trailing
 * spaces, at most one blank line in a row. Indentation and single newlines are kept (code, lists, verse).
 */
export function normalizeText(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[\ufeff\u200b\u2060\u00ad]/g, '')
    .replace(/[\u0000-\u0008\u000b\u000e-\u001f\u007f-\u009f]/g, '')
    .replace(/[\ufb00-\ufb06]/g, (c) => LIGATURES[c])
    .normalize('NFC')
    .replace(/[ \t\u00a0]+$/gm, '')
    .replace(/\n{3,}/g, '\n\n');
}

/** A short one-line title from a candidate, or null when the candidate is not usable as one. */
export function cleanTitle(s: string | null | undefined, max = 200): string | null {
  if (!s) return null;
  let t = s
    .replace(/[\u0000-\u001f\u007f\ufeff]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (t.length < 2 || !/[\p{L}\p{N}]/u.test(t)) return null;
  if (t.length > max) {
    const cut = t.lastIndexOf(' ', max - 1);
    t = t.slice(0, cut > max / 2 ? cut : max - 1) + '…';
  }
  return t;
}

/** The file name without its extension, as the title of last resort. */
export function titleFromFileName(fileName: string): string {
  const dot = fileName.lastIndexOf('.');
  const stem = dot > 0 ? fileName.slice(0, dot) : fileName;
  return cleanTitle(stem.replace(/[_]+/g, ' ')) ?? fileName;
}
