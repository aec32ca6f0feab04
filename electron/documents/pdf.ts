// PDF through pdf.js 5.6.205 (the last version that runs on Node 20; 5.7+ and 6.x need Promise.withResolvers
// and Node 22). This runs in the parser thread (parser-thread.ts), so pdf.js's two sides, the parser and the
// API, share that thread: pdf.js's "fake worker", a loopback in one thread. One thread per document is enough,
// since the thread is the unit that is watched, limited (heap), and terminated on a stall, a cancel or a crash.
// Nothing pdf.js says reaches the console: verbosity is ERRORS and the parser thread's console is silenced.
//
// Pages keep their numbers (an empty page stays, with empty text). The text of a page comes from
// pdf-layout.ts. The title is the document's Title (Info dictionary, else XMP dc:title) unless it is
// missing or a placeholder ("Untitled", "Microsoft Word - x.docx", a file name), else the file's name: text
// from a page (its first line, its biggest words) names a document wrongly too often to stand for it.
//
// A page without a text layer (a scan; the rule is ocr.ts's needsOcr) is drawn and read by OCR (ocr.ts) once
// every page's text layer is read, so a mixed PDF reads its text where it has some and OCR elsewhere.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

import { ImportError, checkOcrRange, checkPageCount, checkTextLength } from './errors.ts';
import {
  aboutDuration,
  inRange,
  languageName,
  listPages,
  ocrNotes,
  ocrSeconds,
  type OcrPages,
  type OcrPlan,
} from '../shared/ocr.ts';
import {
  Recognizer,
  languagesKey,
  needsOcr,
  ocrRuns,
  ocrScale,
  recognitionFailed,
  shippedLanguage,
  type OcrCache,
  type OcrLanguage,
  type RecognizedPage,
} from './ocr.ts';
import { cleanTitle, titleFromFileName, type PageText, type ParseStage } from './pages.ts';
import { hyphenatedWords, layoutPage, renderParagraphs, type Paragraph, type TextRun } from '../shared/pdf-layout.ts';

type Pdfjs = typeof import('pdfjs-dist/legacy/build/pdf.mjs');

/** How long one page's recognition may take before the parse is taken for stuck (it reports no progress). */
const OCR_PAGE_ALLOWANCE_MS = 180_000;

export interface PdfOptions {
  /** Pages done of pages in all, for each stage: the text layers, then the pages read by OCR. */
  onProgress?: (done: number, total: number, stage?: ParseStage) => void;
  /** What is being done now ("reading page 12"), for the messages of a stall or a crash. */
  onPhase?: (phase: string, allowanceMs?: number) => void;
  /** The user password of an encrypted PDF, when the user gave one. */
  password?: string;
  /** Where each recognised page is kept, and found again by a parse of the same file (a resume). */
  ocr?: OcrCache;
  /** The languages OCR reads (default: English, shipped). */
  languages?: readonly OcrLanguage[];
  /** Which of the pages without a text layer OCR reads (default all); those outside are kept unread. */
  ocrPages?: OcrPages;
  /** Without ocrPages: stop with OCR_CHOICE (details: the OcrPlan) before an OCR whose pages not yet recognised
   * would take longer than `overSeconds` at `secondsPerPage`. */
  ocrAsk?: { overSeconds: number; secondsPerPage: number };
  /** The most pixels a page is drawn with for OCR (default OCR_MAX_PIXELS); for tests of what happens past it. */
  ocrMaxPixels?: number;
}

export interface PdfImport {
  title: string;
  pages: PageText[];
  warnings: string[];
  /** The seconds each page recognised by this parse took (drawing included; pages kept before not counted). */
  ocrSeconds: number[];
}

let pdfjsModule: Promise<Pdfjs> | null = null;

/** pdf.js with its parser side loaded into this thread, so that getDocument uses it as its (fake) worker. A
 * parser thread loads it as it starts (parse-worker.ts), so that the first PDF does not wait for it. */
export function loadPdfjs(): Promise<Pdfjs> {
  pdfjsModule ??= (async () => {
    (globalThis as { pdfjsWorker?: unknown }).pdfjsWorker = await import('pdfjs-dist/legacy/build/pdf.worker.mjs');
    return import('pdfjs-dist/legacy/build/pdf.mjs');
  })();
  return pdfjsModule;
}

let resources: { standardFontDataUrl: string; cMapUrl: string; wasmUrl: string; iccUrl: string } | null = null;

/** pdf.js's data folders (standard fonts, CMaps for CJK, wasm decoders), as the folder paths it wants. */
function pdfjsResources() {
  if (!resources) {
    const root = dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json'));
    const dir = (name: string) => join(root, name) + '/';
    resources = {
      standardFontDataUrl: dir('standard_fonts'),
      cMapUrl: dir('cmaps'),
      wasmUrl: dir('wasm'),
      iccUrl: dir('iccs'),
    };
  }
  return resources;
}

const PLACEHOLDER_TITLE =
  /^(untitled|document\d*|title|no title|slide \d+|page \d+|microsoft (word|powerpoint|excel) - .*|.*\.(docx?|pdf|tex|dvi|ps|eps|indd|qxd|rtf|odt|pages|txt|md|html?))$/i;

export function pdfTitle(candidate: unknown): string | null {
  if (typeof candidate !== 'string') return null;
  const t = cleanTitle(candidate);
  return t && !PLACEHOLDER_TITLE.test(t) ? t : null;
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function openError(e: unknown, fileName: string, truncated: boolean, password: boolean): ImportError {
  const err = e as { name?: string; code?: number; message?: string };
  const msg = describe(e).replace(/\.$/, '');
  if (err?.name === 'PasswordException') {
    return err.code === 2 && password
      ? new ImportError(
          'PASSWORD_WRONG',
          `${fileName}: the PDF is password-protected and the password given is wrong: try it again`,
          { cause: e },
        )
      : new ImportError(
          'PASSWORD_REQUIRED',
          `${fileName}: the PDF is password-protected; Folio cannot read it without its password`,
          { cause: e },
        );
  }
  if (/encrypt/i.test(msg)) {
    return new ImportError('ENCRYPTED', `${fileName}: the PDF is encrypted with a method pdf.js cannot open (${msg})`, {
      cause: e,
    });
  }
  const hint = truncated ? '; the file seems truncated (it has no %%EOF marker at the end)' : '';
  return new ImportError('CORRUPT', `${fileName} is damaged: pdf.js cannot parse it (${msg})${hint}`, { cause: e });
}

/** True when the last 1 KiB holds the %%EOF marker every complete PDF ends with. */
function hasEofMarker(bytes: Uint8Array): boolean {
  const tail = new TextDecoder('latin1').decode(bytes.subarray(Math.max(0, bytes.length - 1024)));
  return tail.includes('%%EOF');
}

/** Runs from a page's text items, in display space (the page's rotation applied). */
function textRuns(pdfjs: Pdfjs, viewport: number[], items: readonly unknown[]): TextRun[] {
  const runs: TextRun[] = [];
  for (const it of items) {
    const item = it as { str?: string; transform?: number[]; width?: number; height?: number; hasEOL?: boolean };
    if (typeof item.str !== 'string' || !item.transform) continue;
    const t = pdfjs.Util.transform(viewport, item.transform) as number[];
    const len = Math.hypot(t[0], t[1]);
    const size = Math.hypot(t[2], t[3]) || item.height || len;
    runs.push({
      str: item.str,
      x: t[4],
      y: t[5],
      width: item.width ?? 0,
      size,
      dx: len ? t[0] / len : 1,
      dy: len ? t[1] / len : 0,
      hasEOL: item.hasEOL,
    });
  }
  return runs;
}

/** Reads the PDF. `bytes` are handed to pdf.js, which takes them (their buffer is detached). */
export async function importPdf(bytes: Uint8Array, fileName: string, opts: PdfOptions = {}): Promise<PdfImport> {
  const { onProgress, password } = opts;
  const phase = (p: string, allowanceMs?: number) => opts.onPhase?.(p, allowanceMs);
  phase('opening the file');
  const pdfjs = await loadPdfjs();
  const truncated = !hasEofMarker(bytes);
  const task = pdfjs.getDocument({
    data: bytes,
    password,
    verbosity: pdfjs.VerbosityLevel.ERRORS,
    disableFontFace: true,
    isEvalSupported: false,
    useSystemFonts: false,
    isOffscreenCanvasSupported: false,
    isImageDecoderSupported: false,
    enableXfa: false,
    stopAtErrors: false,
    ...pdfjsResources(),
  });

  try {
    let doc: Awaited<typeof task.promise>;
    try {
      doc = await task.promise;
    } catch (e) {
      throw openError(e, fileName, truncated, password !== undefined);
    }
    const n = doc.numPages;
    checkPageCount(fileName, n);
    onProgress?.(0, n);

    // Pages are requested a few ahead, so the parser's side always has work queued.
    const fetchPage = (i: number) => {
      const p = (async () => {
        const page = await doc.getPage(i);
        const { transform: viewport, width, height } = page.getViewport({ scale: 1 });
        const content = await page.getTextContent();
        page.cleanup();
        return { viewport, items: content.items, width, height };
      })();
      p.catch(() => {});
      return p;
    };
    const AHEAD = 4;
    const pending = new Map<number, ReturnType<typeof fetchPage>>();
    const layouts: Paragraph[][] = [];
    const failed: number[] = [];
    const sizes: { width: number; height: number }[] = [];
    const charsOf = (layout: Paragraph[]) =>
      layout.reduce((n, para) => n + para.lines.reduce((m, line) => m + line.replace(/\s/g, '').length, 0), 0);
    let chars = 0;
    for (let i = 1; i <= n; i++) {
      for (let j = i; j <= Math.min(n, i + AHEAD); j++) if (!pending.has(j)) pending.set(j, fetchPage(j));
      phase(`reading page ${i}`);
      try {
        const { viewport, items, width, height } = await pending.get(i)!;
        const layout = layoutPage(textRuns(pdfjs, viewport, items));
        chars += charsOf(layout);
        layouts.push(layout);
        sizes.push({ width, height });
      } catch {
        failed.push(i);
        layouts.push([]);
        sizes.push({ width: 0, height: 0 });
      }
      pending.delete(i);
      checkTextLength(fileName, chars);
      onProgress?.(i, n);
    }
    if (failed.length === n)
      throw new ImportError('CORRUPT', `${fileName} is damaged: pdf.js cannot parse any of its ${n} pages`);

    // The pages with (almost) no text that draw something: read by OCR, each in place of its text layer.
    const sparse = layouts
      .map((_, i) => i + 1)
      .filter(
        (p) => !failed.includes(p) && needsOcr(charsOf(layouts[p - 1]), sizes[p - 1].width, sizes[p - 1].height, true),
      );
    const toRead: number[] = [];
    for (const p of sparse) {
      phase(`looking for images on page ${p}`);
      if (await hasDrawing(pdfjs, doc, [p])) toRead.push(p);
    }
    const language = languagesKey(opts.languages ?? [shippedLanguage()]);
    const range = opts.ocrPages ?? 'all';
    checkOcrRange(fileName, n, range);
    if (opts.ocrPages === undefined && opts.ocrAsk && toRead.length) {
      const plan: OcrPlan = {
        pages: n,
        ocrPages: toRead,
        pending: toRead.filter((p) => !opts.ocr?.get(p)),
        secondsPerPage: opts.ocrAsk.secondsPerPage,
      };
      const seconds = ocrSeconds(plan);
      if (seconds > opts.ocrAsk.overSeconds)
        throw new ImportError(
          'OCR_CHOICE',
          `${fileName} has ${toRead.length} page${toRead.length > 1 ? 's' : ''} without a text layer to read by OCR ` +
            `(${aboutDuration(seconds)} here): choose to read them all, or a range of them`,
          { details: plan },
        );
    }
    const chosen = inRange(toRead, range);
    const ocr = new Map<number, RecognizedPage>();
    // The pages left out of the range keep what text they have (none, or a stamped line) and say they were not read.
    const reading = new Set(chosen);
    for (const p of toRead) if (!reading.has(p)) ocr.set(p, { language, confidence: 0, unread: true, words: [] });
    const took: number[] = [];
    if (chosen.length) {
      const recognizer = new Recognizer(opts.languages ?? [shippedLanguage()]);
      try {
        onProgress?.(0, chosen.length, 'ocr');
        for (const [k, p] of chosen.entries()) {
          let read = opts.ocr?.get(p) ?? null;
          if (!read) {
            phase(`recognising page ${p} (OCR, ${k + 1} of ${chosen.length})`, OCR_PAGE_ALLOWANCE_MS);
            const started = performance.now();
            const page = await doc.getPage(p);
            const { width, height } = sizes[p - 1];
            const scale = ocrScale(width, height, opts.ocrMaxPixels);
            const image = await drawPage(page, scale);
            page.cleanup();
            try {
              read = await recognizer.recognize(image, scale);
            } catch (e) {
              throw recognitionFailed(fileName, p, width * height * scale * scale, e);
            }
            took.push((performance.now() - started) / 1000);
            opts.ocr?.put(p, read);
          }
          ocr.set(p, read);
          layouts[p - 1] = layoutPage(ocrRuns(read));
          chars += charsOf(layouts[p - 1]);
          checkTextLength(fileName, chars);
          onProgress?.(k + 1, chosen.length, 'ocr');
        }
      } finally {
        await recognizer.close();
      }
    }

    const hyphenated = hyphenatedWords(layouts);
    const pages: PageText[] = layouts.map((paras, i) => {
      const read = ocr.get(i + 1);
      return { page: i + 1, text: renderParagraphs(paras, hyphenated), ...(read ? { ocr: read } : {}) };
    });
    const warnings: string[] = [];
    if (failed.length)
      warnings.push(
        `page${failed.length > 1 ? 's' : ''} ${listPages(failed)} could not be read (damaged) and ${failed.length > 1 ? 'are' : 'is'} left empty`,
      );
    warnings.push(...ocrNotes(pages));

    const textless = pages.filter((p) => !p.text.trim()).map((p) => p.page);
    const where =
      chosen.length === n ? (n === 1 ? 'its page' : `its ${n} pages`) : `the pages it read (${listPages(chosen)})`;
    if (textless.length === n && ocr.size > 0)
      throw new ImportError(
        'NO_TEXT_LAYER',
        `${fileName} has no text layer, and OCR (${languageName(language)}) found no writing on ${where}: ` +
          'they hold images without text, or text too small, faint or skewed to read; a clearer scan (300 dpi, ' +
          'black on white) reads better',
      );
    // Every page that draws something was read by OCR above: a document with no text left draws nothing.
    if (textless.length === n) {
      throw new ImportError(
        'EMPTY',
        `${fileName} is empty: its ${n === 1 ? 'page has' : `${n} pages have`} no text and nothing drawn`,
      );
    }
    const missing = textless.filter((p) => !failed.includes(p) && !ocr.has(p));
    if (missing.length)
      warnings.push(
        `page${missing.length > 1 ? 's' : ''} ${listPages(missing)} ha${missing.length > 1 ? 've' : 's'} no text`,
      );
    if (truncated) warnings.push('the file seems truncated (no %%EOF marker at the end); some text may be missing');

    phase('reading the metadata');
    const meta = await doc.getMetadata().catch(() => null);
    const info = (meta?.info ?? {}) as Record<string, unknown>;
    const xmpTitle = meta?.metadata?.get('dc:title');
    const title = pdfTitle(info.Title) ?? pdfTitle(xmpTitle) ?? titleFromFileName(fileName);
    return { title, pages, warnings, ocrSeconds: took };
  } finally {
    // Not awaited: a parse that failed badly may never answer; its thread is then ended by its owner.
    task.destroy().catch(() => {});
  }
}

const PAINT_OPS = [
  'paintImageXObject',
  'paintInlineImageXObject',
  'paintImageMaskXObject',
  'paintImageXObjectRepeat',
  'paintImageMaskXObjectRepeat',
  'paintSolidColorImageMask',
  'paintInlineImageXObjectGroup',
  'paintImageMaskXObjectGroup',
  'constructPath',
  'fill',
  'eoFill',
  'stroke',
  'fillStroke',
  'eoFillStroke',
  'closeStroke',
  'closeFillStroke',
  'closeEOFillStroke',
  'shadingFill',
] as const;

/** Whether any of the pages paints an image or a path (a scan or a drawing rather than a blank page). */
async function hasDrawing(
  pdfjs: Pdfjs,
  doc: { getPage(i: number): Promise<{ getOperatorList(): Promise<{ fnArray: number[] }> }> },
  pages: number[],
): Promise<boolean> {
  const ops = new Set<number>(
    PAINT_OPS.map((k) => (pdfjs.OPS as Record<string, number>)[k]).filter((v) => v !== undefined),
  );
  for (const i of pages) {
    try {
      const list = await (await doc.getPage(i)).getOperatorList();
      if (list.fnArray.some((f) => ops.has(f))) return true;
    } catch {
      // A page that cannot be drawn counts as drawn on: better "no text layer" than "empty".
      return true;
    }
  }
  return false;
}

/** A page drawn for recognition at `scale` pixels per point, on white, as PNG bytes. */
async function drawPage(
  page: {
    getViewport(o: { scale: number }): { width: number; height: number };
    render(o: unknown): { promise: Promise<void> };
  },
  scale: number,
): Promise<Uint8Array> {
  const { createCanvas } = await import('@napi-rs/canvas');
  const viewport = page.getViewport({ scale });
  const canvas = createCanvas(Math.ceil(viewport.width), Math.ceil(viewport.height));
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#ffffff';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  await page.render({ canvasContext: ctx, canvas, viewport }).promise;
  return canvas.encode('png');
}
