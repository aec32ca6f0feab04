// Document import: a file (by path, or by name and bytes from an upload) becomes pages of text with a title,
// ready to be tokenized. Plain TypeScript with no import of electron; the reader of each format is in its
// own file (pdf.ts, docx.ts, markdown.ts, text.ts), the kind is decided in detect.ts, and token-map.ts maps
// the engine's tokens back to pages.
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';

import { baseName, detectKind, type DocumentKind } from './detect.ts';
import { importDocx } from './docx.ts';
import { ImportError, abortable, throwIfAborted } from './errors.ts';
import { importMarkdown } from './markdown.ts';
import type { PageText } from './pages.ts';
import { importPdf } from './pdf.ts';
import { importText, type TextEncoding } from './text.ts';

export type ImportInput = { path: string } | { fileName: string; bytes: Uint8Array };

export interface ImportOptions {
  signal?: AbortSignal;
  /** Pages done of pages in all (PDF: per page; other formats: 0 of 1, then n of n). */
  onProgress?: (done: number, total: number) => void;
  /** The password of an encrypted PDF, when the user gave one. */
  password?: string;
  /** Largest file read (default 512 MiB). */
  maxBytes?: number;
  /** PDF: the longest pdf.js may take to open the file or to read one page (default 30 s). */
  stallTimeoutMs?: number;
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
}

const DEFAULT_MAX_BYTES = 512 * 1024 * 1024;

async function readInput(input: ImportInput, opts: ImportOptions): Promise<{ fileName: string; bytes: Uint8Array }> {
  const max = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  if ('bytes' in input) {
    const fileName = baseName(input.fileName);
    if (input.bytes.byteLength > max) throw tooLarge(fileName, input.bytes.byteLength, max);
    return { fileName, bytes: input.bytes };
  }
  const fileName = baseName(input.path);
  try {
    const st = await stat(input.path);
    if (st.isDirectory()) throw new ImportError('READ_FAILED', `${input.path} is a folder, not a document`);
    if (st.size > max) throw tooLarge(fileName, st.size, max);
    return { fileName, bytes: new Uint8Array(await readFile(input.path, { signal: opts.signal })) };
  } catch (e) {
    if (e instanceof ImportError) throw e;
    const err = e as NodeJS.ErrnoException;
    if (err.name === 'AbortError') throwIfAborted(opts.signal, fileName);
    const why =
      err.code === 'ENOENT' ? 'there is no such file' :
      err.code === 'EACCES' || err.code === 'EPERM' ? 'permission denied' :
      err.message;
    throw new ImportError('READ_FAILED', `cannot read ${input.path}: ${why}`, { cause: e });
  }
}

function tooLarge(fileName: string, size: number, max: number): ImportError {
  const mib = (n: number) => `${Math.round(n / 2 ** 20)} MiB`;
  return new ImportError('TOO_LARGE', `${fileName} is ${mib(size)}; Folio imports files up to ${mib(max)}`);
}

/**
 * Imports a document. Throws ImportError (see errors.ts for the codes) with a message naming the file.
 */
export async function importDocument(input: ImportInput, opts: ImportOptions = {}): Promise<ImportedDocument> {
  const { signal, onProgress } = opts;
  const label = 'path' in input ? baseName(input.path) : baseName(input.fileName);
  throwIfAborted(signal, label);
  const { fileName, bytes } = await readInput(input, opts);
  throwIfAborted(signal, fileName);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const kind = detectKind(bytes, fileName);

  let title: string;
  let pages: PageText[];
  let encoding: TextEncoding | undefined;
  let warnings: string[] = [];
  if (kind === 'pdf') {
    ({ title, pages, warnings } = await importPdf(bytes, fileName, {
      signal,
      onProgress,
      password: opts.password,
      stallTimeoutMs: opts.stallTimeoutMs,
    }));
  } else {
    onProgress?.(0, 1);
    if (kind === 'docx') ({ title, pages, warnings } = await abortable(importDocx(bytes, fileName), signal, fileName));
    else if (kind === 'markdown') ({ title, pages, encoding } = importMarkdown(bytes, fileName));
    else ({ title, pages, encoding } = importText(bytes, fileName));
    throwIfAborted(signal, fileName);
    if (encoding && encoding !== 'utf-8') warnings.push(`decoded as ${encoding === 'windows-1252' ? 'Windows-1252 (Latin-1): the file is not UTF-8' : encoding.toUpperCase()}`);
    onProgress?.(pages.length, pages.length);
  }
  return { kind, title, fileName, pages, sha256, ...(encoding ? { encoding } : {}), warnings };
}

export { ImportError, isImportError, type ImportErrorCode } from './errors.ts';
export { detectKind, sniff, type DocumentKind } from './detect.ts';
export { PAGE_CHARS, paginate, type Block, type PageText } from './pages.ts';
export {
  charRangeTokens, foldRetention, mapTokens, pageTokenRange, pagesOfTokens, passages, tokenSpan,
  type MappedPage, type PageTokens, type PassageRule, type RetainedPassage, type TokenMap, type TokenSpan,
} from './token-map.ts';
