// Document import: a file (by path, or by name and bytes from an upload) becomes pages of text with a title,
// ready to be tokenized. Plain TypeScript with no import of electron. A file is read here (read-file.ts:
// regular files only, capped while reading, asynchronously); everything else (hash, kind, the reader of each
// format in pdf.ts, docx.ts, markdown.ts, text.ts, the limits) runs in a parser thread (parser-thread.ts), so
// the caller's event loop never waits on a parse. token-map.ts maps the engine's tokens back to pages.
import { baseName, type DocumentKind } from './detect.ts';
import { throwIfAborted } from './errors.ts';
import { MAX_DOCUMENT_BYTES } from '../shared/limits.ts';
import type { OcrLanguage } from './ocr.ts';
import type { OcrPages } from '../shared/ocr.ts';
import type { PageText, ParseStage } from './pages.ts';
import { parseInThread } from './parser-thread.ts';
import { readDocumentFile, tooLarge } from './read-file.ts';
import type { TextEncoding } from './text.ts';

export type ImportInput = { path: string } | { fileName: string; bytes: Uint8Array };

export interface ImportOptions {
  signal?: AbortSignal;
  /** Pages done of pages in all (PDF: per page, then per page read by OCR, stage 'ocr'; other formats: 0 of 1,
   * then n of n). */
  onProgress?: (done: number, total: number, stage?: ParseStage) => void;
  /** The password of an encrypted PDF, when the user gave one. */
  password?: string;
  /** Largest file read (default MAX_DOCUMENT_BYTES). */
  maxBytes?: number;
  /**
   * The caller gives `bytes` up: they are moved to the parser thread without a copy (their buffer is
   * detached). Without it they are copied first, and stay the caller's.
   */
  transferBytes?: boolean;
  /** The longest the parser may go without progress: opening the file, one PDF page (default 30 s). */
  stallTimeoutMs?: number;
  /** The parser thread's heap in MiB (default PARSER_HEAP_MB); for tests of what happens past it. */
  parserHeapMb?: number;
  /** The longest parse in all (default PARSE_TIME_LIMIT_MS); for tests of what happens past it. */
  timeLimitMs?: number;
  /** A folder where each page OCR recognises is kept as it is done (ocr.ts OcrCache), so that a parse stopped by a
   * quit, a cancel or a crash resumes from the pages done; the caller clears them once the import is stored. */
  ocrCache?: string;
  /** The languages OCR reads scans in (ocr.ts ocrLanguages lists those there are; default: English). */
  ocrLanguages?: OcrLanguage[];
  /** Which of the pages without a text layer OCR reads (default all); those outside the range are kept unread
   * (empty, PageOcr.unread). The pages with a text layer are read whatever the range. */
  ocrPages?: OcrPages;
  /** Without ocrPages: an OCR whose pages not yet recognised would take longer than `overSeconds` at
   * `secondsPerPage` (ocr.ts ocrSpeed) is not started; the import fails with OCR_CHOICE, its details the plan
   * (shared/ocr.ts OcrPlan), for the caller to ask which pages to read. Absent: never asked. */
  ocrAsk?: { overSeconds: number; secondsPerPage: number };
  /** The most pixels a page is drawn with for OCR (default OCR_MAX_PIXELS, which keeps one page's recognition within
   * Tesseract's heap); for tests of what happens past it. */
  ocrMaxPixels?: number;
}

export interface ImportedDocument {
  kind: DocumentKind;
  title: string;
  /** The file's name, without folders. */
  fileName: string;
  /** 1-based, in order; a PDF keeps every page (empty text for a page without text). */
  pages: PageText[];
  /** Of the file's bytes, lower-case hex. */
  sha256: string;
  /** How a text or Markdown file was decoded. */
  encoding?: TextEncoding;
  /** Things the user may want to know that did not stop the import (e.g. pages without text). */
  warnings: string[];
  /** A Word document's HTML (mammoth's), which the document view shows. */
  html?: string;
  /** An image's page (a one-page PDF, documents/image.ts), which the document view shows. */
  pdf?: Uint8Array;
  /** The seconds each page recognised by OCR took (ocr.ts recordOcrSpeed keeps them as this machine's speed). */
  ocrSeconds: number[];
}

async function readInput(input: ImportInput, opts: ImportOptions): Promise<{ fileName: string; bytes: Uint8Array }> {
  const max = opts.maxBytes ?? MAX_DOCUMENT_BYTES;
  if ('path' in input)
    return {
      fileName: baseName(input.path),
      bytes: await readDocumentFile(input.path, { maxBytes: max, signal: opts.signal }),
    };
  const fileName = baseName(input.fileName);
  if (input.bytes.byteLength > max) throw tooLarge(fileName, input.bytes.byteLength, max);
  return { fileName, bytes: opts.transferBytes ? input.bytes : input.bytes.slice() };
}

/**
 * Imports a document. Throws ImportError (see errors.ts for the codes) with a message naming the file.
 */
export async function importDocument(input: ImportInput, opts: ImportOptions = {}): Promise<ImportedDocument> {
  const { signal } = opts;
  throwIfAborted(signal, 'path' in input ? baseName(input.path) : baseName(input.fileName));
  const { fileName, bytes } = await readInput(input, opts);
  const doc = await parseInThread(bytes, fileName, {
    signal,
    onProgress: opts.onProgress,
    password: opts.password,
    stallTimeoutMs: opts.stallTimeoutMs,
    timeLimitMs: opts.timeLimitMs,
    heapMb: opts.parserHeapMb,
    ocrCache: opts.ocrCache,
    ocrLanguages: opts.ocrLanguages,
    ocrPages: opts.ocrPages,
    ocrAsk: opts.ocrAsk,
    ocrMaxPixels: opts.ocrMaxPixels,
  });
  return {
    kind: doc.kind,
    title: doc.title,
    fileName,
    pages: doc.pages,
    sha256: doc.sha256,
    ...(doc.encoding ? { encoding: doc.encoding } : {}),
    ...(doc.html !== undefined ? { html: doc.html } : {}),
    ...(doc.pdf !== undefined ? { pdf: doc.pdf } : {}),
    warnings: doc.warnings,
    ocrSeconds: doc.ocrSeconds,
  };
}

export { ImportError, isImportError, type ImportErrorCode } from './errors.ts';
export { detectKind, sniff, type DocumentKind } from './detect.ts';
export { MAX_DOCUMENT_BYTES } from '../shared/limits.ts';
export { readDocumentFile } from './read-file.ts';
export { PAGE_CHARS, paginate, type Block, type PageText } from './pages.ts';
export {
  charRangeTokens,
  foldRetention,
  mapTokens,
  pageTokenRange,
  pagesOfTokens,
  passages,
  tokenSpan,
  type MappedPage,
  type PageTokens,
  type PassageRule,
  type RetainedPassage,
  type TokenMap,
  type TokenSpan,
} from './token-map.ts';
