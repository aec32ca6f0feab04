// Optical character recognition, for the pages that have no text layer (a scan, a photographed page, a fax) and
// for images imported as documents. It runs in the parser thread, inside its limits, and on this machine only:
// Tesseract 5's LSTM recogniser compiled to WebAssembly (tesseract.js 7, which runs it in a worker thread of its
// own), with the English model shipped as an npm package (@tesseract.js-data/eng, its 4.0.0_best_int data) and
// nothing fetched at run time. A page is drawn by pdf.js onto a canvas (@napi-rs/canvas, the one pdf.js itself
// uses under Node) at OCR_DPI; the recognised words become text runs in the page's display space, one run a
// word, so the page's text is laid out from them as from a text layer (pdf-layout.ts), and the document view
// draws the same words as its text layer over the scan (citations, the retention map and search land there).
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { gunzipSync } from 'node:zlib';
import { dirname, join } from 'node:path';

import type { OcrWord, PageOcr } from '../api/contract.ts';
import { ImportError } from './errors.ts';
import { median, type TextRun } from '../shared/pdf-layout.ts';

import { OCR_LANGUAGE_CODE, SHIPPED_OCR_LANGUAGE } from '../shared/ocr.ts';

export { LOW_OCR_CONFIDENCE } from '../shared/ocr.ts';

/** Pages are drawn at this resolution for recognition: Tesseract reads print best with capitals 20–30 pixels
 * high, which 300 dpi gives 10–12 pt type. */
export const OCR_DPI = 300;
/** The most pixels a page is drawn with (a poster-sized page is drawn at less than OCR_DPI): 40 MP, a letter page
 * at 300 dpi being 8.4 MP. What one page's OCR takes grows with them: 1.4 GiB more for 40 MP of print, 1.6 GiB for 40
 * MP of noise (measured here, docs/architecture.md), within Tesseract's heap (TESSERACT_HEAP_BYTES). */
export const OCR_MAX_PIXELS = 40_000_000;
/** The most memory tesseract.js-core's WebAssembly heap grows to (its build's maximum; the JavaScript heap caps of the
 * parser thread do not reach it): a page whose recognition needs more fails, as a page of 140 MP does. */
export const TESSERACT_HEAP_BYTES = 2 ** 31;
/**
 * Which pages are read by OCR: those whose text layer holds fewer than this many characters per square inch of
 * page and that draw something (an image or paths). A page of print holds 25–40 a square inch; a scan that
 * carries a stamped date, a page number or a header in real text holds a few. Such a page is read whole by OCR
 * (the recogniser reads the stamped text too); a page that draws nothing stays empty.
 */
export const OCR_MIN_CHARS_PER_SQUARE_INCH = 0.5;
/** A one-character "word" below this confidence is dropped: the recogniser reads stray marks, rules and the
 * strokes of drawings as single letters ("C" for a circle) with little confidence; a real one-letter word of a
 * legible scan scores far above it. */
export const STRAY_MARK_CONFIDENCE = 50;
/**
 * Seconds a page takes to draw at OCR_DPI and recognise until this machine has measured its own (ocrSpeed): a dense
 * page of print (500 words) took 4.4–5.5 s on the 2-core AMD EPYC the project is measured on (`folio bench-ocr`,
 * docs/benchmarks.md); a page with less on it takes less (2 s for 165 words), so the estimate errs long.
 */
export const DEFAULT_OCR_SECONDS_PER_PAGE = 5;
/** How many of the last recognised pages this machine's speed is the median of. */
const SPEED_PAGES = 50;
/** The file, in the folder of kept pages, that holds this machine's last page times. */
const SPEED_FILE = 'speed.json';

/** The page times kept in `dir` (none when there are none, or the file is damaged). */
function keptSeconds(dir: string | null): number[] {
  try {
    const kept = JSON.parse(readFileSync(join(dir!, SPEED_FILE), 'utf8')) as { seconds?: unknown };
    return Array.isArray(kept.seconds)
      ? kept.seconds.filter((x): x is number => typeof x === 'number' && Number.isFinite(x) && x > 0)
      : [];
  } catch {
    return [];
  }
}

/** The seconds a page takes to read by OCR here: the median of the last SPEED_PAGES pages recognised (kept in
 * `dir` by recordOcrSpeed), else DEFAULT_OCR_SECONDS_PER_PAGE (`measured` false). */
export function ocrSpeed(dir: string | null): { secondsPerPage: number; measured: boolean } {
  const seconds = keptSeconds(dir);
  return seconds.length
    ? { secondsPerPage: median(seconds), measured: true }
    : { secondsPerPage: DEFAULT_OCR_SECONDS_PER_PAGE, measured: false };
}

/** Adds the times of pages just recognised (seconds each) to this machine's speed, written aside and renamed. */
export function recordOcrSpeed(dir: string, seconds: readonly number[]): void {
  if (!seconds.length) return;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const part = join(dir, `${SPEED_FILE}.${process.pid}.part`);
    const all = [...keptSeconds(dir), ...seconds].slice(-SPEED_PAGES);
    writeFileSync(part, JSON.stringify({ seconds: all }), { mode: 0o600 });
    renameSync(part, join(dir, SPEED_FILE));
  } catch {
    // A speed not kept costs only the estimate's accuracy.
  }
}

/** A language OCR can read (Tesseract's code) and the file of its model (.traineddata, or gzipped). */
export interface OcrLanguage {
  code: string;
  file: string;
}

/** The languages' key, as Tesseract joins their codes ("eng+fra"). */
export const languagesKey = (languages: readonly OcrLanguage[]) => languages.map((l) => l.code).join('+');

/** The language shipped: English, from its npm package. */
export function shippedLanguage(): OcrLanguage {
  return { code: SHIPPED_OCR_LANGUAGE, file: join(shippedModel(), `${SHIPPED_OCR_LANGUAGE}.traineddata.gz`) };
}

/**
 * The languages OCR can read: English, shipped, and each Tesseract model the user put in `folder`
 * (`<code>.traineddata`, or `.traineddata.gz`, as the tessdata repositories name them). Nothing is downloaded.
 */
export function ocrLanguages(folder: string | null): OcrLanguage[] {
  const found = new Map<string, OcrLanguage>([[SHIPPED_OCR_LANGUAGE, shippedLanguage()]]);
  let names: string[] = [];
  try {
    names = folder ? readdirSync(folder).sort() : [];
  } catch {
    // no folder yet: English only
  }
  for (const name of names) {
    const m = /^(.+)\.traineddata(\.gz)?$/.exec(name);
    if (m && OCR_LANGUAGE_CODE.test(m[1]) && !found.has(m[1]))
      found.set(m[1], { code: m[1], file: join(folder!, name) });
  }
  return [...found.values()];
}

/** What recognition made of a page: the words in reading order (contract OcrWord), their mean confidence and
 * the language read (contract PageOcr, what is kept of it with the page). */
export interface RecognizedPage extends PageOcr {
  words: OcrWord[];
}

/** Whether a page with `chars` characters of text, `width` × `height` points and something drawn is read by OCR. */
export function needsOcr(chars: number, width: number, height: number, draws: boolean): boolean {
  const squareInches = (width / 72) * (height / 72);
  return draws && chars < OCR_MIN_CHARS_PER_SQUARE_INCH * squareInches;
}

/** The scale (pixels per point) a page of `width` × `height` points is drawn at: OCR_DPI, less for a huge page
 * (`maxPixels` at most). */
export function ocrScale(width: number, height: number, maxPixels = OCR_MAX_PIXELS): number {
  const s = OCR_DPI / 72;
  const pixels = width * s * height * s;
  return pixels > maxPixels ? s * Math.sqrt(maxPixels / pixels) : s;
}

/** TOO_LARGE for a page the recogniser failed on: with the pages OCR draws capped (OCR_MAX_PIXELS), what fails it is
 * its heap's end (TESSERACT_HEAP_BYTES), which a page too large or too busy reaches. */
export function recognitionFailed(fileName: string, page: number, pixels: number, cause: unknown): ImportError {
  const why = (cause instanceof Error ? cause.message : String(cause)).slice(0, 200);
  return new ImportError(
    'TOO_LARGE',
    `${fileName}: page ${page} could not be read by OCR: the recogniser failed on it (${why}), most likely out of ` +
      `memory (it has ${TESSERACT_HEAP_BYTES / 2 ** 30} GiB; the page was drawn at ${Math.round(pixels / 1e6)} megapixels): ` +
      'scan that page again at 300 dpi or less, or cut it into smaller pages',
    { cause, details: { page, pixels } },
  );
}

/** A page's words as text runs (pdf-layout.ts lays them out as it lays out a text layer's items). */
export function ocrRuns(ocr: RecognizedPage): TextRun[] {
  return ocr.words.map((w) => ({ str: w.text, x: w.x, y: w.y, width: w.width, size: w.size, dx: 1, dy: 0 }));
}

interface Box {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}
interface TessLine {
  bbox: Box;
  baseline?: Box & { has_baseline?: boolean };
  rowAttributes?: { row_height?: number };
  words: { text: string; confidence: number; bbox: Box }[];
}

/** The words of Tesseract's lines in display points (pixels / `scale`): each on its line's baseline, sized by the
 * line's row height, so that a line's words lie on one baseline as a text layer's do. */
export function wordsOfLines(lines: readonly TessLine[], scale: number): OcrWord[] {
  const words: OcrWord[] = [];
  for (const line of lines) {
    const b = line.baseline?.has_baseline === false ? undefined : line.baseline;
    const height = line.rowAttributes?.row_height || line.bbox.y1 - line.bbox.y0;
    for (const w of line.words) {
      const text = w.text.trim();
      if (!text || ([...text].length === 1 && w.confidence < STRAY_MARK_CONFIDENCE)) continue;
      // The baseline where the word starts (a line may slope a little on a scan); else the word's bottom.
      const y = b && b.x1 !== b.x0 ? b.y0 + ((b.y1 - b.y0) * (w.bbox.x0 - b.x0)) / (b.x1 - b.x0) : w.bbox.y1;
      words.push({
        text,
        x: w.bbox.x0 / scale,
        y: y / scale,
        width: (w.bbox.x1 - w.bbox.x0) / scale,
        size: height / scale,
        confidence: w.confidence,
      });
    }
  }
  return words;
}

type TessWorker = Awaited<ReturnType<typeof import('tesseract.js').createWorker>>;

/** Where the shipped English model is: its folder in the npm package (Tesseract reads <code>.traineddata.gz). */
function shippedModel(): string {
  const root = dirname(createRequire(import.meta.url).resolve('@tesseract.js-data/eng/package.json'));
  return join(root, '4.0.0_best_int');
}

/**
 * A recogniser for one parse: Tesseract started on first use (about half a second), closed with the parse. Its
 * worker thread is this thread's child, so a parse ended for a stall, a cancel or its time limit ends it too.
 */
export class Recognizer {
  private worker: Promise<TessWorker> | null = null;
  /** The languages read, as Tesseract joins them ("eng+fra"). */
  readonly language: string;

  constructor(private readonly languages: readonly OcrLanguage[] = [shippedLanguage()]) {
    this.language = languagesKey(languages);
  }

  private models: string | null = null;

  private start(): Promise<TessWorker> {
    this.worker ??= (async () => {
      const { createWorker, OEM } = await import('tesseract.js');
      // Tesseract reads every language from one folder under one name each (<code>.traineddata): the models are
      // laid out in a folder of this parse's own, unpacked, and read from there; never fetched, never cached.
      const dir = (this.models = mkdtempSync(join(tmpdir(), 'folio-ocr-')));
      for (const l of this.languages) {
        const data = readFileSync(l.file);
        writeFileSync(join(dir, `${l.code}.traineddata`), l.file.endsWith('.gz') ? gunzipSync(data) : data);
      }
      // errorHandler: a failed job rejects its promise, which recognize's caller handles; without one tesseract.js
      // also throws it from its message handler, uncaught, which ended the parser thread with a garbled message
      // (a page past its heap, here).
      return createWorker(this.language, OEM.LSTM_ONLY, {
        langPath: dir,
        gzip: false,
        cacheMethod: 'none',
        errorHandler: () => {},
      });
    })();
    return this.worker;
  }

  /** Recognises an image (PNG or JPEG bytes) whose pixels are `scale` times the page's points. */
  async recognize(image: Uint8Array, scale: number): Promise<RecognizedPage> {
    const worker = await this.start();
    const r = await worker.recognize(Buffer.from(image), {}, { blocks: true, text: false });
    const lines = (r.data.blocks ?? []).flatMap((b) => b.paragraphs.flatMap((p) => p.lines)) as TessLine[];
    const words = wordsOfLines(lines, scale);
    const confidence = words.length ? words.reduce((n, w) => n + w.confidence, 0) / words.length : 0;
    return { language: this.language, confidence, words };
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await (await w.catch(() => null))?.terminate().catch(() => {});
    if (this.models) rmSync(this.models, { recursive: true, force: true });
    this.models = null;
  }
}

/** What a kept page must match to be used again: how it was read (a change here reads the pages again). */
const cacheFormat = (language: string) => `folio-ocr-1 ${OCR_DPI}dpi ${language}`;

/**
 * The pages of one file recognised so far, kept in a folder as each is done (`<sha256>-<page>.json`, written aside
 * and renamed), so that a parse stopped by a quit, a cancel or a crash goes on from them when the same file is
 * imported again. A kept page that is damaged or of another format is read again.
 */
export class OcrCache {
  constructor(
    private readonly dir: string,
    private readonly sha256: string,
    /** The languages read (Recognizer.language): a page read in others is read again. */
    private readonly language: string,
  ) {}

  private path(page: number): string {
    return join(this.dir, `${this.sha256}-${page}.json`);
  }

  get(page: number): RecognizedPage | null {
    try {
      const kept = JSON.parse(readFileSync(this.path(page), 'utf8')) as { format?: string; page?: RecognizedPage };
      const p = kept.page;
      const ok =
        kept.format === cacheFormat(this.language) &&
        !!p &&
        typeof p.language === 'string' &&
        typeof p.confidence === 'number' &&
        Array.isArray(p.words) &&
        p.words.every(
          (w) =>
            typeof w.text === 'string' &&
            [w.x, w.y, w.width, w.size, w.confidence].every((n) => typeof n === 'number' && Number.isFinite(n)),
        );
      return ok ? p : null;
    } catch {
      return null; // none, or damaged: read again
    }
  }

  put(page: number, read: RecognizedPage): void {
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      const part = `${this.path(page)}.${process.pid}.part`;
      writeFileSync(part, JSON.stringify({ format: cacheFormat(this.language), page: read }), { mode: 0o600 });
      renameSync(part, this.path(page));
    } catch {
      // A page that cannot be kept costs only the resume.
    }
  }

  /** Forgets the file's kept pages (its import is stored). */
  static clear(dir: string, sha256: string): void {
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const n of names) if (n.startsWith(`${sha256}-`)) rmSync(join(dir, n), { force: true });
  }
}
