// The whole parse of one document, from its bytes to pages and a title: hash, kind, the reader of that kind,
// the limits on pages and text. It runs in the parser thread (parse-worker.ts), never on the main thread,
// so a slow or hostile file costs that thread, not the server's or the desktop window's event loop.
import { createHash } from 'node:crypto';

import { detectKind, type DocumentKind } from './detect.ts';
import { importDocx } from './docx.ts';
import { checkPageCount, checkTextLength } from './errors.ts';
import { MAX_TEXT_CHARS } from '../shared/limits.ts';
import { importMarkdown } from './markdown.ts';
import type { PageText, ParseStage } from './pages.ts';
import { importImage } from './image.ts';
import { OcrCache, languagesKey, shippedLanguage, type OcrLanguage } from './ocr.ts';
import type { OcrPages } from '../shared/ocr.ts';
import { importPdf } from './pdf.ts';
import { importText, type TextEncoding } from './text.ts';

export interface ParsedDocument {
  kind: DocumentKind;
  title: string;
  pages: PageText[];
  sha256: string;
  encoding?: TextEncoding;
  warnings: string[];
  /** A Word document's HTML (mammoth's), for the document view. */
  html?: string;
  /** An image's page (image.ts), for the document view. */
  pdf?: Uint8Array;
  /** The seconds each page recognised by OCR took (this machine's speed, ocr.ts recordOcrSpeed). */
  ocrSeconds: number[];
}

export interface ParseHooks {
  /** Pages done of pages in all (PDF: per page, then per page read by OCR; other formats: 0 of 1, then n of n). */
  onProgress?: (done: number, total: number, stage?: ParseStage) => void;
  /**
   * What is being done now, for the message should the parse stall or die; `allowanceMs`, for a step that
   * reports no progress of its own, is how long it may take (instead of the stall limit).
   */
  onPhase?: (phase: string, allowanceMs?: number) => void;
  password?: string;
  /** Where recognised pages are kept (ImportOptions.ocrCache). */
  ocrCache?: string;
  /** The languages OCR reads (ImportOptions.ocrLanguages). */
  ocrLanguages?: OcrLanguage[];
  /** Which pages OCR reads (ImportOptions.ocrPages). */
  ocrPages?: OcrPages;
  /** When to stop for the choice of pages (ImportOptions.ocrAsk). */
  ocrAsk?: { overSeconds: number; secondsPerPage: number };
  /** The most pixels a page is drawn with for OCR (ImportOptions.ocrMaxPixels). */
  ocrMaxPixels?: number;
}

/** Parses a document; `bytes` may be consumed (pdf.js detaches them). Throws ImportError. */
export async function parseDocument(
  bytes: Uint8Array,
  fileName: string,
  hooks: ParseHooks = {},
): Promise<ParsedDocument> {
  const { onProgress, onPhase } = hooks;
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const kind = detectKind(bytes, fileName);
  // Recognised pages are kept by the file's content: the same file imported again finds them.
  const languages = hooks.ocrLanguages?.length ? hooks.ocrLanguages : [shippedLanguage()];
  const ocr = hooks.ocrCache ? new OcrCache(hooks.ocrCache, sha256, languagesKey(languages)) : undefined;

  let title: string;
  let pages: PageText[];
  let encoding: TextEncoding | undefined;
  let warnings: string[] = [];
  let html: string | undefined;
  let pdf: Uint8Array | undefined;
  let ocrSeconds: number[] = [];
  const ocrOptions = {
    onProgress,
    onPhase,
    ocr,
    languages,
    ocrPages: hooks.ocrPages,
    ocrAsk: hooks.ocrAsk,
    ocrMaxPixels: hooks.ocrMaxPixels,
  };
  if (kind === 'pdf') {
    ({ title, pages, warnings, ocrSeconds } = await importPdf(bytes, fileName, {
      ...ocrOptions,
      password: hooks.password,
    }));
  } else if (kind === 'image') {
    ({ title, pages, warnings, pdf, ocrSeconds } = await importImage(bytes, fileName, ocrOptions));
  } else {
    onProgress?.(0, 1);
    if (kind === 'docx') {
      onPhase?.('reading the Word document');
      ({ title, pages, warnings, html } = await importDocx(bytes, fileName, onPhase));
    } else {
      // Cheap before costly: UTF-8 takes at most 3 bytes per UTF-16 code unit (UTF-16 takes 2), so a file
      // over 3 × the limit is too long whatever it holds, and is refused before it is decoded.
      if (bytes.length > 3 * MAX_TEXT_CHARS) checkTextLength(fileName, Math.ceil(bytes.length / 3));
      onPhase?.('reading the text');
      if (kind === 'markdown') ({ title, pages, encoding } = importMarkdown(bytes, fileName));
      else ({ title, pages, encoding } = importText(bytes, fileName));
    }
    if (encoding && encoding !== 'utf-8')
      warnings.push(
        `decoded as ${encoding === 'windows-1252' ? 'Windows-1252 (Latin-1): the file is not UTF-8' : encoding.toUpperCase()}`,
      );
  }
  checkPageCount(fileName, pages.length);
  checkTextLength(
    fileName,
    pages.reduce((n, p) => n + p.text.length, 0),
  );
  if (kind !== 'pdf' && kind !== 'image') onProgress?.(pages.length, pages.length);
  return {
    kind,
    title,
    pages,
    sha256,
    ...(encoding ? { encoding } : {}),
    ...(html !== undefined ? { html } : {}),
    ...(pdf !== undefined ? { pdf } : {}),
    warnings,
    ocrSeconds,
  };
}
