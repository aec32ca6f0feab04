// Which reader a file needs. The content decides (PDF header, a ZIP holding word/document.xml, text); the
// extension only chooses between Markdown and plain text, and breaks no ties otherwise. When the
// extension names one supported format and the content is another, that is an error (MISMATCH) that names
// both, rather than a silent guess; formats Folio does not read get UNSUPPORTED saying what the file is.
import { ImportError } from './errors.ts';
import { isZip, zipEntries } from './zip.ts';

export type DocumentKind = 'pdf' | 'docx' | 'markdown' | 'text' | 'image';

export const markdownExtensions = new Set([
  'md',
  'markdown',
  'mdown',
  'mkd',
  'mkdn',
  'mdwn',
  'mdtxt',
  'mdtext',
  'mdx',
  'rmd',
  'qmd',
]);
const docxExtensions = new Set(['docx', 'docm', 'dotx', 'dotm']);

/** What the bytes are, before the extension is looked at. */
export type Sniffed =
  | { type: 'pdf' }
  | { type: 'docx' }
  | { type: 'text' }
  | { type: 'image'; format: 'png' | 'jpeg' }
  | { type: 'other'; what: string; advice: string; damaged?: boolean }
  | { type: 'binary' };

/** The lower-case extension without the dot ('' when there is none). */
export function extensionOf(fileName: string): string {
  const base = baseName(fileName);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
}

/** The last path component, for '/' and '\' separators alike (uploads may carry either). */
export function baseName(fileName: string): string {
  const parts = fileName.split(/[/\\]/);
  return parts[parts.length - 1] || fileName;
}

function startsWith(bytes: Uint8Array, sig: readonly number[], at = 0): boolean {
  if (bytes.length < at + sig.length) return false;
  for (let i = 0; i < sig.length; i++) if (bytes[at + i] !== sig[i]) return false;
  return true;
}
function ascii(s: string): number[] {
  return [...s].map((c) => c.charCodeAt(0));
}

/** A PDF: "%PDF-" within the first 1024 bytes (PDF 32000-1, annex H: readers accept leading junk). */
export function isPdf(bytes: Uint8Array): boolean {
  const lim = Math.min(bytes.length - 5, 1024);
  for (let i = 0; i <= lim; i++) {
    if (
      bytes[i] === 0x25 &&
      bytes[i + 1] === 0x50 &&
      bytes[i + 2] === 0x44 &&
      bytes[i + 3] === 0x46 &&
      bytes[i + 4] === 0x2d
    )
      return true;
  }
  return false;
}

/** True for UTF-16 text: a BOM, or (without one) NULs in every other byte of ASCII-range text. */
export function utf16Endianness(bytes: Uint8Array): 'le' | 'be' | null {
  if (startsWith(bytes, [0xff, 0xfe]) && !startsWith(bytes, [0xff, 0xfe, 0, 0])) return 'le';
  if (startsWith(bytes, [0xfe, 0xff])) return 'be';
  const n = Math.min(bytes.length & ~1, 4096);
  if (n < 8) return null;
  let zeroEven = 0;
  let zeroOdd = 0;
  for (let i = 0; i < n; i += 2) {
    if (bytes[i] === 0) zeroEven++;
    if (bytes[i + 1] === 0) zeroOdd++;
  }
  const half = n / 2;
  if (zeroOdd > 0.4 * half && zeroEven < 0.05 * half) return 'le';
  if (zeroEven > 0.4 * half && zeroOdd < 0.05 * half) return 'be';
  return null;
}

/** Text: no NUL bytes (unless UTF-16) and hardly any C0 control characters besides tab, newlines, FF, ESC. */
export function looksLikeText(bytes: Uint8Array): boolean {
  if (utf16Endianness(bytes)) return true;
  const n = Math.min(bytes.length, 65536);
  let controls = 0;
  for (let i = 0; i < n; i++) {
    const b = bytes[i];
    if (b === 0) return false;
    if (b < 0x20 && b !== 9 && b !== 10 && b !== 12 && b !== 13 && b !== 27) controls++;
  }
  return controls <= Math.max(1, n / 1000);
}

export function sniff(bytes: Uint8Array): Sniffed {
  if (isPdf(bytes)) return { type: 'pdf' };
  if (isZip(bytes)) {
    const names = new Set((zipEntries(bytes) ?? []).map((e) => e.name));
    if (names.has('word/document.xml')) return { type: 'docx' };
    const office = 'save it as a Word document (.docx), PDF or text';
    if (names.has('xl/workbook.xml'))
      return { type: 'other', what: 'an Excel workbook', advice: 'export the sheets as PDF or text' };
    if (names.has('ppt/presentation.xml'))
      return { type: 'other', what: 'a PowerPoint presentation', advice: 'export it as PDF' };
    if (names.has('content.xml') && names.has('mimetype'))
      return { type: 'other', what: 'an OpenDocument file', advice: office };
    if (names.has('META-INF/container.xml'))
      return { type: 'other', what: 'an EPUB e-book', advice: 'convert it to PDF or text' };
    if (names.size === 0)
      return { type: 'other', what: 'a damaged ZIP archive', advice: 'the file may be truncated', damaged: true };
    return { type: 'other', what: 'a ZIP archive', advice: 'extract the document from it first' };
  }
  if (startsWith(bytes, [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1])) {
    return {
      type: 'other',
      what: 'an old-style Office file (.doc/.xls/.ppt) or a password-protected Office document',
      advice: 'save it (without a password) as a Word document (.docx) or PDF',
    };
  }
  if (startsWith(bytes, ascii('{\\rtf')))
    return { type: 'other', what: 'an RTF document', advice: 'save it as a Word document (.docx) or PDF' };
  const image = 'convert it to PNG, JPEG or PDF, which Folio reads by OCR';
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47])) return { type: 'image', format: 'png' };
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return { type: 'image', format: 'jpeg' };
  if (startsWith(bytes, ascii('GIF8'))) return { type: 'other', what: 'a GIF image', advice: image };
  if (startsWith(bytes, [0x49, 0x49, 0x2a, 0]) || startsWith(bytes, [0x4d, 0x4d, 0, 0x2a]))
    return { type: 'other', what: 'a TIFF image', advice: image };
  if (startsWith(bytes, ascii('RIFF')) && startsWith(bytes, ascii('WEBP'), 8))
    return { type: 'other', what: 'a WebP image', advice: image };
  if (startsWith(bytes, [0x1f, 0x8b]))
    return { type: 'other', what: 'a gzip-compressed file', advice: 'decompress it first' };
  if (startsWith(bytes, ascii('7z')) && startsWith(bytes, [0xbc, 0xaf], 2))
    return { type: 'other', what: 'a 7-Zip archive', advice: 'extract the document from it first' };
  if (startsWith(bytes, ascii('Rar!')))
    return { type: 'other', what: 'a RAR archive', advice: 'extract the document from it first' };
  if (looksLikeText(bytes)) return { type: 'text' };
  return { type: 'binary' };
}

const kindName: Record<DocumentKind, string> = {
  pdf: 'a PDF',
  docx: 'a Word document (DOCX)',
  markdown: 'Markdown text',
  text: 'plain text',
  image: 'an image (PNG or JPEG)',
};

/** The kind an extension claims, or null for an extension that claims none of ours. */
export function kindOfExtension(ext: string): DocumentKind | null {
  if (ext === 'pdf') return 'pdf';
  if (docxExtensions.has(ext)) return 'docx';
  if (markdownExtensions.has(ext)) return 'markdown';
  if (ext === 'txt' || ext === 'text') return 'text';
  if (ext === 'png' || ext === 'jpg' || ext === 'jpeg') return 'image';
  return null;
}

/**
 * The document kind of a file, from its content with the extension as a fallback; throws ImportError
 * EMPTY, UNSUPPORTED, MISMATCH or CORRUPT with a message naming the file.
 */
export function detectKind(bytes: Uint8Array, fileName: string): DocumentKind {
  const name = baseName(fileName);
  if (bytes.length === 0) throw new ImportError('EMPTY', `${name} is empty (0 bytes)`);
  const ext = extensionOf(name);
  const claimed = kindOfExtension(ext);
  const s = sniff(bytes);
  const mismatch = (actual: DocumentKind, renameTo: string) =>
    new ImportError(
      'MISMATCH',
      `${name} has the extension .${ext}, which means ${kindName[claimed!]}, but its content is ${kindName[actual]}; ` +
        `rename it to .${renameTo} if that is what it is`,
      { details: { extension: ext, content: actual } },
    );
  switch (s.type) {
    case 'pdf':
      if (claimed && claimed !== 'pdf') throw mismatch('pdf', 'pdf');
      return 'pdf';
    case 'docx':
      if (claimed && claimed !== 'docx') throw mismatch('docx', 'docx');
      return 'docx';
    case 'text':
      if (claimed === 'pdf' || claimed === 'docx' || claimed === 'image') throw mismatch('text', 'txt');
      return claimed === 'markdown' ? 'markdown' : 'text';
    case 'image':
      if (claimed && claimed !== 'image') throw mismatch('image', s.format === 'png' ? 'png' : 'jpg');
      return 'image';
    case 'other':
      if (s.damaged && claimed === 'docx') {
        throw new ImportError(
          'CORRUPT',
          `${name} is damaged: its ZIP directory is missing or unreadable (a truncated download?), so it cannot be read as a Word document`,
        );
      }
      throw new ImportError(
        'UNSUPPORTED',
        `${name} is ${s.what}${claimed ? ` although its extension is .${ext}` : ''}; Folio reads PDF, Word (.docx), Markdown, text and images (PNG, JPEG): ${s.advice}`,
        { details: { content: s.what } },
      );
    case 'binary':
      if (claimed === 'pdf')
        throw new ImportError(
          'CORRUPT',
          `${name} is not a valid PDF: it has no %PDF header (the file is damaged or is not a PDF)`,
        );
      if (claimed === 'docx')
        throw new ImportError(
          'CORRUPT',
          `${name} is not a valid Word document: it is not a ZIP archive (the file is damaged or is not a .docx)`,
        );
      throw new ImportError(
        'UNSUPPORTED',
        `${name} is binary data in a format Folio does not know; Folio reads PDF, Word (.docx), Markdown and text`,
      );
  }
}
