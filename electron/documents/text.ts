// Plain text: decoding and pages.
//
// Decoding: a UTF-8 BOM is dropped; UTF-16 (with a BOM, or without one when every other byte of ASCII-range
// text is NUL) is decoded as UTF-16. Otherwise the bytes must be valid UTF-8. When they are not, and no
// byte at all forms a valid multi-byte UTF-8 sequence, the file is clearly a single-byte one and is decoded
// as Windows-1252 (the superset of Latin-1 that every "latin1" file in practice is); the result says so
// (`encoding`). A file that mixes valid multi-byte UTF-8 with invalid bytes is an error (BAD_ENCODING) naming
// the first bad byte's offset: guessing there would silently garble text.
//
// Pages: with form feeds (as pdftotext and printers write them), each form-feed section is a page, so page
// numbers match the printed ones; only a section longer than four pages' worth (12,000 characters) is
// split further. Without form feeds, paragraphs (blank-line separated) are grouped by pages.ts's rule.
import { ImportError, checkTextLength } from './errors.ts';
import { utf16Endianness } from './detect.ts';
import {
  PAGE_CHARS,
  cleanTitle,
  normalizeText,
  paginate,
  titleFromFileName,
  type Block,
  type PageText,
} from './pages.ts';

export type TextEncoding = 'utf-8' | 'utf-16le' | 'utf-16be' | 'windows-1252';

export interface DecodedText {
  text: string;
  encoding: TextEncoding;
}

/** Offset of the first byte that is not part of a valid UTF-8 sequence, and whether any valid multi-byte sequence occurs. */
export function scanUtf8(bytes: Uint8Array): { firstInvalid: number; multiByte: number } {
  let firstInvalid = -1;
  let multiByte = 0;
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const b = bytes[i];
    if (b < 0x80) {
      i++;
      continue;
    }
    let need = 0;
    let min = 0;
    if (b >= 0xc2 && b <= 0xdf) {
      need = 1;
      min = 0x80;
    } else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      min = 0x800;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      min = 0x10000;
    }
    let ok = need > 0 && i + need < n;
    let cp = need === 1 ? b & 0x1f : need === 2 ? b & 0x0f : b & 0x07;
    for (let k = 1; ok && k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined || (c & 0xc0) !== 0x80) ok = false;
      else cp = (cp << 6) | (c & 0x3f);
    }
    if (ok && (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))) ok = false;
    if (ok) {
      multiByte++;
      i += need + 1;
    } else {
      if (firstInvalid < 0) firstInvalid = i;
      i++;
    }
  }
  return { firstInvalid, multiByte };
}

// Windows-1252's 0x80..0x9F (Node 20's TextDecoder('windows-1252') decodes these as Latin-1 C1 controls,
// so the table is here). The five unassigned bytes stay C1 code points, as the WHATWG encoding does.
const CP1252_HIGH =
  '\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f' +
  '\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178';

export function decodeWindows1252(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += 8192) {
    const chunk = bytes.subarray(i, i + 8192);
    out += String.fromCharCode(...chunk).replace(/[\u0080-\u009f]/g, (c) => CP1252_HIGH[c.charCodeAt(0) - 0x80]);
  }
  return out;
}

/** Decodes a text file by the rule above; throws BAD_ENCODING. */
export function decodeText(bytes: Uint8Array, fileName: string): DecodedText {
  const utf16 = utf16Endianness(bytes);
  if (utf16) {
    const enc = utf16 === 'le' ? 'utf-16le' : 'utf-16be';
    try {
      return { text: new TextDecoder(enc, { fatal: true, ignoreBOM: false }).decode(bytes), encoding: enc };
    } catch {
      throw new ImportError('BAD_ENCODING', `${fileName} looks like UTF-16 text but contains invalid UTF-16 sequences`);
    }
  }
  try {
    return { text: new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes), encoding: 'utf-8' };
  } catch {
    const { firstInvalid, multiByte } = scanUtf8(bytes);
    if (multiByte === 0) return { text: decodeWindows1252(bytes), encoding: 'windows-1252' };
    throw new ImportError(
      'BAD_ENCODING',
      `${fileName} is not valid UTF-8: the byte at offset ${firstInvalid} is invalid, although other characters are UTF-8; ` +
        `save it as UTF-8 and import it again`,
      { details: { offset: firstInvalid } },
    );
  }
}

/** Blank-line separated paragraphs as blocks. */
export function paragraphBlocks(text: string): Block[] {
  return text
    .split(/\n[ \t]*\n+/)
    .map((p) => ({ text: p.replace(/^\n+|\n+$/g, '') }))
    .filter((b) => b.text.trim());
}

/** The pages of a plain-text document (already normalized; form feeds kept). */
export function textPages(text: string, target = PAGE_CHARS): PageText[] {
  if (!text.includes('\f')) return paginate(paragraphBlocks(text), target);
  const sections = text.split('\f').map((s) => s.replace(/^\n+|\s+$/g, ''));
  while (sections.length && !sections[sections.length - 1]) sections.pop();
  const out: PageText[] = [];
  for (const s of sections) {
    const parts = s.length > 4 * target ? paginate(paragraphBlocks(s), target).map((p) => p.text) : [s];
    for (const t of parts) out.push({ page: out.length + 1, text: t });
  }
  return out;
}

export interface TextImport {
  title: string;
  pages: PageText[];
  encoding: TextEncoding;
}

/** The first line when it is short enough to be a title. */
export function firstLineTitle(text: string): string | null {
  const line = text.split('\n').find((l) => l.trim());
  if (!line || line.trim().length > 120) return null;
  return cleanTitle(line);
}

export function importText(bytes: Uint8Array, fileName: string): TextImport {
  const { text: raw, encoding } = decodeText(bytes, fileName);
  checkTextLength(fileName, raw.length);
  const text = normalizeText(raw);
  const pages = textPages(text);
  if (!pages.some((p) => p.text.trim()))
    throw new ImportError('EMPTY', `${fileName} contains no text (only whitespace)`);
  return { title: firstLineTitle(text) ?? titleFromFileName(fileName), pages, encoding };
}
