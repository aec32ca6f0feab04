// PDF through pdf.js 5.6.205 (the last version that runs on Node 20; 5.7+ and 6.x need Promise.withResolvers
// and Node 22). pdf.js parses in a worker thread of its own (pdf-worker.mjs): the main thread stays free,
// and a file that makes the parser hang or balloon is stopped by terminating that thread: TIMEOUT when no
// page finishes for `stallTimeoutMs`, TOO_LARGE when the parser's heap passes `maxParserMemoryMb`.
// Nothing pdf.js says reaches the console: verbosity is ERRORS on both sides, the worker thread's console
// is silenced and its stdout/stderr go nowhere, and the one-time warnings pdf.js can print while its module
// loads (no @napi-rs/canvas) are filtered out.
//
// Pages keep their numbers (an empty page stays, with empty text). The text of a page comes from
// pdf-layout.ts. The title is the document's Title (Info dictionary, else XMP dc:title) unless it is
// missing or a placeholder ("Untitled", "Microsoft Word - x.docx", a file name), else the biggest text on
// the first page with text, else its first line, else the file name.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';

import { ImportError, aborted, isImportError } from './errors.ts';
import { cleanTitle, titleFromFileName, type PageText } from './pages.ts';
import { hyphenatedWords, layoutPage, layoutTitle, renderParagraphs, type Paragraph, type TextRun } from './pdf-layout.ts';

type Pdfjs = typeof import('pdfjs-dist/legacy/build/pdf.mjs');

export interface PdfOptions {
  signal?: AbortSignal;
  onProgress?: (done: number, total: number) => void;
  /** The user password of an encrypted PDF, when the user gave one. */
  password?: string;
  /** The longest pdf.js may take to open the file or to finish one page (default 30 s). */
  stallTimeoutMs?: number;
  /** Most pages read (default 10,000). */
  maxPages?: number;
  /** Heap limit of the parser thread in MiB (default 2048). */
  maxParserMemoryMb?: number;
}

export interface PdfImport {
  title: string;
  pages: PageText[];
  warnings: string[];
}

let pdfjsModule: Promise<Pdfjs> | null = null;

/** Loads pdf.js once, dropping the "Warning: ..." lines its module may print while it loads. */
function loadPdfjs(): Promise<Pdfjs> {
  if (!pdfjsModule) {
    const { log, warn } = console;
    const quiet =
      (f: (...a: unknown[]) => void) =>
      (...a: unknown[]) => {
        if (typeof a[0] === 'string' && /^(Warning|Info): /.test(a[0])) return;
        f.apply(console, a);
      };
    console.log = quiet(log);
    console.warn = quiet(warn);
    pdfjsModule = import('pdfjs-dist/legacy/build/pdf.mjs').finally(() => {
      console.log = log;
      console.warn = warn;
    });
  }
  return pdfjsModule;
}

let resources: { standardFontDataUrl: string; cMapUrl: string; wasmUrl: string; iccUrl: string } | null = null;

/** pdf.js's data folders (standard fonts, CMaps for CJK, wasm decoders), as the folder paths it wants. */
function pdfjsResources() {
  if (!resources) {
    const root = dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json'));
    const dir = (name: string) => join(root, name) + '/';
    resources = { standardFontDataUrl: dir('standard_fonts'), cMapUrl: dir('cmaps'), wasmUrl: dir('wasm'), iccUrl: dir('iccs') };
  }
  return resources;
}

/** Fails pending work when the signal fires, the parser thread dies, or nothing progresses for a while. */
class Watchdog {
  readonly failed: Promise<never>;
  private fail!: (e: ImportError) => void;
  private timer: ReturnType<typeof setTimeout> | undefined;
  error: ImportError | null = null;

  constructor(private readonly ms: number, private readonly onStall: () => ImportError) {
    this.failed = new Promise<never>((_, reject) => {
      this.fail = (e) => {
        if (!this.error) this.error = e;
        reject(e);
      };
    });
    this.failed.catch(() => {});
    this.kick();
  }
  kick(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.trip(this.onStall()), this.ms);
  }
  trip(e: ImportError): void {
    clearTimeout(this.timer);
    this.fail(e);
  }
  stop(): void {
    clearTimeout(this.timer);
  }
  run<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.failed]);
  }
}

const PLACEHOLDER_TITLE = /^(untitled|document\d*|title|no title|slide \d+|page \d+|microsoft (word|powerpoint|excel) - .*|.*\.(docx?|pdf|tex|dvi|ps|eps|indd|qxd|rtf|odt|pages|txt|md|html?))$/i;

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
      ? new ImportError('ENCRYPTED', `${fileName}: the PDF is password-protected and the password given is wrong`, { cause: e })
      : new ImportError('ENCRYPTED', `${fileName}: the PDF is password-protected; Folio cannot read it without its password`, { cause: e });
  }
  if (/encrypt/i.test(msg)) {
    return new ImportError('ENCRYPTED', `${fileName}: the PDF is encrypted with a method pdf.js cannot open (${msg})`, { cause: e });
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

/**
 * Parser threads: one per import in progress, each with pdf.js's worker side and a PDFWorker talking to it.
 * After a clean import the thread is kept, idle and unreferenced (it keeps no process alive), for a while,
 * so a batch of imports does not pay the thread's start (~0.2 s) each time; after a failure, a timeout or a
 * cancel it is terminated. `onFailure` reports the thread's death to the import using it.
 */
interface ParserThread {
  thread: Worker;
  port: MessagePort;
  worker: InstanceType<Pdfjs['PDFWorker']>;
  memoryMb: number;
  dead: boolean;
  idleTimer: ReturnType<typeof setTimeout> | null;
  onFailure: ((e: (Error & { code?: string }) | 'exit') => void) | null;
}

const IDLE_PARSERS = 2;
const IDLE_MS = 15_000;
const idleParsers: ParserThread[] = [];

function acquireParser(pdfjs: Pdfjs, memoryMb: number): ParserThread {
  const at = idleParsers.findIndex((t) => t.memoryMb === memoryMb && !t.dead);
  if (at >= 0) {
    const t = idleParsers.splice(at, 1)[0];
    if (t.idleTimer) clearTimeout(t.idleTimer);
    t.idleTimer = null;
    t.thread.ref();
    t.port.ref();
    return t;
  }
  const { port1, port2 } = new MessageChannel();
  // stdout/stderr of their own that nobody reads (a listener would keep the process alive): the thread's
  // console is silenced anyway, and nothing it might still write can reach the user's console.
  const thread = new Worker(new URL('./pdf-worker.mjs', import.meta.url), {
    workerData: { port: port2 },
    transferList: [port2],
    stdout: true,
    stderr: true,
    resourceLimits: { maxOldGenerationSizeMb: memoryMb },
  });
  const worker = new pdfjs.PDFWorker({ port: port1, verbosity: pdfjs.VerbosityLevel.ERRORS } as never);
  const t: ParserThread = { thread, port: port1, worker, memoryMb, dead: false, idleTimer: null, onFailure: null };
  const die = (e: (Error & { code?: string }) | 'exit') => {
    if (t.dead) return;
    t.dead = true;
    const i = idleParsers.indexOf(t);
    if (i >= 0) idleParsers.splice(i, 1);
    t.onFailure?.(e);
  };
  thread.on('error', die);
  thread.on('exit', () => die('exit'));
  return t;
}

function releaseParser(t: ParserThread, healthy: boolean): void {
  if (healthy && !t.dead && idleParsers.length < IDLE_PARSERS) {
    t.thread.unref();
    t.port.unref();
    t.idleTimer = setTimeout(() => releaseParser(t, false), IDLE_MS);
    t.idleTimer.unref();
    const i = idleParsers.indexOf(t);
    if (i < 0) idleParsers.push(t);
    return;
  }
  const i = idleParsers.indexOf(t);
  if (i >= 0) idleParsers.splice(i, 1);
  if (t.idleTimer) clearTimeout(t.idleTimer);
  t.dead = true;
  t.worker.destroy();
  t.port.close();
  void t.thread.terminate();
}

export async function importPdf(bytes: Uint8Array, fileName: string, opts: PdfOptions = {}): Promise<PdfImport> {
  const { signal, onProgress, password } = opts;
  const stallMs = opts.stallTimeoutMs ?? 30_000;
  const maxPages = opts.maxPages ?? 10_000;
  const memoryMb = opts.maxParserMemoryMb ?? 2048;
  if (signal?.aborted) throw aborted(signal, fileName);
  const pdfjs = await loadPdfjs();
  if (signal?.aborted) throw aborted(signal, fileName);

  const truncated = !hasEofMarker(bytes);
  let phase = 'opening the file';
  const watchdog = new Watchdog(stallMs, () =>
    new ImportError('TIMEOUT', `${fileName}: pdf.js made no progress for ${Math.round(stallMs / 1000)} s while ${phase}; the file may be damaged or hostile`),
  );
  const onAbort = () => watchdog.trip(aborted(signal, fileName));
  signal?.addEventListener('abort', onAbort, { once: true });

  const parser = acquireParser(pdfjs, memoryMb);
  parser.onFailure = (e) => {
    watchdog.trip(
      e === 'exit'
        ? new ImportError('CORRUPT', `${fileName}: the PDF reader stopped unexpectedly while ${phase}`)
        : e.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? new ImportError('TOO_LARGE', `${fileName}: reading the PDF needed more than ${memoryMb} MiB of memory while ${phase}; the file may be hostile`, { cause: e })
          : new ImportError('CORRUPT', `${fileName}: the PDF reader failed while ${phase} (${e.message})`, { cause: e }),
    );
  };
  const worker = parser.worker;
  const res = pdfjsResources();
  const task = pdfjs.getDocument({
    data: new Uint8Array(bytes), // a copy: pdf.js transfers (detaches) the buffer it is given
    worker,
    password,
    verbosity: pdfjs.VerbosityLevel.ERRORS,
    disableFontFace: true,
    isEvalSupported: false,
    useSystemFonts: false,
    isOffscreenCanvasSupported: false,
    isImageDecoderSupported: false,
    enableXfa: false,
    stopAtErrors: false,
    ...res,
  });

  try {
    let doc: Awaited<typeof task.promise>;
    try {
      doc = await watchdog.run(task.promise);
    } catch (e) {
      if (isImportError(e)) throw e;
      throw openError(e, fileName, truncated, password !== undefined);
    }
    const n = doc.numPages;
    if (n > maxPages) throw new ImportError('TOO_LARGE', `${fileName} has ${n} pages; Folio reads at most ${maxPages}`);
    onProgress?.(0, n);

    // Pages are requested a few ahead, so the parser works while this thread lays out the last one.
    const fetchPage = (i: number) => {
      const p = (async () => {
        const page = await doc.getPage(i);
        const viewport = page.getViewport({ scale: 1 }).transform;
        const content = await page.getTextContent();
        page.cleanup();
        return { viewport, items: content.items };
      })();
      p.catch(() => {});
      return p;
    };
    const AHEAD = 4;
    const pending = new Map<number, ReturnType<typeof fetchPage>>();
    const layouts: Paragraph[][] = [];
    const failed: number[] = [];
    for (let i = 1; i <= n; i++) {
      for (let j = i; j <= Math.min(n, i + AHEAD); j++) if (!pending.has(j)) pending.set(j, fetchPage(j));
      phase = `reading page ${i}`;
      try {
        const { viewport, items } = await watchdog.run(pending.get(i)!);
        layouts.push(layoutPage(textRuns(pdfjs, viewport, items)));
      } catch (e) {
        if (isImportError(e)) throw e;
        failed.push(i);
        layouts.push([]);
      }
      pending.delete(i);
      watchdog.kick();
      onProgress?.(i, n);
    }

    const hyphenated = hyphenatedWords(layouts);
    const pages: PageText[] = layouts.map((paras, i) => ({ page: i + 1, text: renderParagraphs(paras, hyphenated) }));
    const warnings: string[] = [];
    if (failed.length === n) throw new ImportError('CORRUPT', `${fileName} is damaged: pdf.js cannot parse any of its ${n} pages`);
    if (failed.length) warnings.push(`page${failed.length > 1 ? 's' : ''} ${listPages(failed)} could not be read (damaged) and ${failed.length > 1 ? 'are' : 'is'} left empty`);

    const textless = pages.filter((p) => !p.text.trim()).map((p) => p.page);
    if (textless.length === n) {
      phase = 'looking for images';
      // A few pages spread over the document: a scan may start with blank pages.
      const sample = [...new Set(Array.from({ length: Math.min(n, 5) }, (_, k) => 1 + Math.round((k * (n - 1)) / Math.max(1, Math.min(n, 5) - 1))))];
      const drawn = await watchdog.run(hasDrawing(pdfjs, doc, sample));
      if (drawn) {
        throw new ImportError(
          'NO_TEXT_LAYER',
          `${fileName} has no text layer: its ${n === 1 ? 'page is' : `${n} pages are`} images or drawings only (a scan?), and OCR is not supported; ` +
            `run it through an OCR tool first (e.g. ocrmypdf) and import the result`,
        );
      }
      throw new ImportError('EMPTY', `${fileName} is empty: its ${n === 1 ? 'page has' : `${n} pages have`} no text and nothing drawn`);
    }
    const missing = textless.filter((p) => !failed.includes(p));
    if (missing.length) warnings.push(`page${missing.length > 1 ? 's' : ''} ${listPages(missing)} ha${missing.length > 1 ? 've' : 's'} no text (images only?); OCR is not supported`);
    if (truncated) warnings.push('the file seems truncated (no %%EOF marker at the end); some text may be missing');

    phase = 'reading the metadata';
    const meta = await watchdog.run(doc.getMetadata()).catch((e) => {
      if (isImportError(e)) throw e;
      return null;
    });
    const info = (meta?.info ?? {}) as Record<string, unknown>;
    const xmpTitle = meta?.metadata?.get('dc:title');
    const firstWithText = layouts.find((l) => l.length);
    const title =
      pdfTitle(info.Title) ??
      pdfTitle(xmpTitle) ??
      cleanTitle(firstWithText ? layoutTitle(firstWithText) : null) ??
      titleFromFileName(fileName);
    return { title, pages, warnings };
  } finally {
    watchdog.stop();
    signal?.removeEventListener('abort', onAbort);
    parser.onFailure = null;
    if (!watchdog.error) {
      // A clean close lets the thread serve the next import; one that does not come means a sick thread.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const closed = await Promise.race([
        task.destroy().then(() => true, () => false),
        new Promise<false>((r) => (timer = setTimeout(r, 1000, false))),
      ]);
      clearTimeout(timer);
      releaseParser(parser, closed);
    } else {
      // After a stall, a crash or a cancel the parser may never answer: end its thread.
      task.destroy().catch(() => {});
      releaseParser(parser, false);
    }
  }
}

const PAINT_OPS = ['paintImageXObject', 'paintInlineImageXObject', 'paintImageMaskXObject', 'paintImageXObjectRepeat', 'paintImageMaskXObjectRepeat', 'paintSolidColorImageMask', 'paintInlineImageXObjectGroup', 'paintImageMaskXObjectGroup', 'constructPath', 'fill', 'eoFill', 'stroke', 'fillStroke', 'eoFillStroke', 'closeStroke', 'closeFillStroke', 'closeEOFillStroke', 'shadingFill'] as const;

/** Whether any of the pages paints an image or a path (a scan or a drawing rather than a blank page). */
async function hasDrawing(pdfjs: Pdfjs, doc: { getPage(i: number): Promise<{ getOperatorList(): Promise<{ fnArray: number[] }> }> }, pages: number[]): Promise<boolean> {
  const ops = new Set<number>(PAINT_OPS.map((k) => (pdfjs.OPS as Record<string, number>)[k]).filter((v) => v !== undefined));
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

function listPages(pages: number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < pages.length; ) {
    let j = i;
    while (j + 1 < pages.length && pages[j + 1] === pages[j] + 1) j++;
    parts.push(i === j ? `${pages[i]}` : `${pages[i]}–${pages[j]}`);
    i = j + 1;
  }
  return parts.length > 12 ? parts.slice(0, 12).join(', ') + ', …' : parts.join(', ');
}
