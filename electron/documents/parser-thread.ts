// Parser threads: every document is parsed in a worker thread (parse-worker.ts) with a capped heap, never on
// the thread that calls, so neither the web host's nor the desktop main process's event loop ever waits on a
// parse, and a file that exhausts memory or makes a reader loop ends that thread, not the process.
//
// The thread is watched: it reports progress (each PDF page, each step of the other formats); when nothing
// comes for the stall limit, when the whole parse passes its time limit, or when the import is cancelled,
// the thread is terminated. A thread that dies (heap exhausted, crash) fails its import with a clear error.
// Whatever happens, the caller gets an ImportError, and the next import gets a fresh thread.
//
// At most MAX_PARSER_THREADS parses run at once (each may use PARSER_HEAP_MB); others wait their turn. After a
// clean parse the thread is kept, idle and unreferenced (it keeps no process alive), for a while, so that the
// next import does not pay a thread's start and pdf.js's load (a one-page PDF's import was seconds of that);
// the app starts one such thread as it starts (warmParserThread).
import type { Worker } from 'node:worker_threads';

import { startWorker } from '../worker-thread.ts';

import { ImportError, aborted } from './errors.ts';
import { MAX_PARSER_THREADS, PARSER_HEAP_MB, PARSE_STALL_MS, PARSE_TIME_LIMIT_MS } from '../shared/limits.ts';
import type { OcrLanguage } from './ocr.ts';
import type { OcrPages } from '../shared/ocr.ts';
import type { ParseStage } from './pages.ts';
import type { ParsedDocument } from './parse.ts';
import type { ParseJob, ParserMessage } from './parse-worker.ts';

export interface ParseOptions {
  signal?: AbortSignal;
  onProgress?: (done: number, total: number, stage?: ParseStage) => void;
  password?: string;
  /** Longest wait for the next sign of progress (default PARSE_STALL_MS). */
  stallTimeoutMs?: number;
  /** Longest parse in all (default PARSE_TIME_LIMIT_MS). */
  timeLimitMs?: number;
  /** The thread's old-generation heap in MiB (default PARSER_HEAP_MB). */
  heapMb?: number;
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

interface ParserThread {
  worker: Worker;
  heapMb: number;
  /** It said 'ready': its modules loaded (an error before that is a failure to start, not the file's fault). */
  started: boolean;
  /** It said 'pdfjs': a PDF parsed now waits for no module. */
  pdfjs: boolean;
  idleTimer: ReturnType<typeof setTimeout> | null;
}

/** How long an idle thread is kept: an import after a pause pays no start. A thread with pdf.js loaded holds
 * a few tens of MiB. */
const IDLE_MS = 10 * 60_000;
const idle: ParserThread[] = [];
let running = 0;
const waiting: (() => void)[] = [];
let nextJob = 1;

/** Starts a thread (worker-thread.ts), its heap capped. */
function startThread(heapMb: number): ParserThread {
  const worker = startWorker(new URL('./parse-worker.ts', import.meta.url), {
    resourceLimits: { maxOldGenerationSizeMb: heapMb },
    stdout: true,
    stderr: true,
  });
  const t: ParserThread = { worker, heapMb, started: false, pdfjs: false, idleTimer: null };
  worker.on('message', (m: ParserMessage) => {
    if (m.type === 'ready') t.started = true;
    if (m.type === 'pdfjs') t.pdfjs = true;
  });
  return t;
}

function acquire(heapMb: number): ParserThread {
  const at = idle.findIndex((t) => t.heapMb === heapMb);
  if (at < 0) return startThread(heapMb);
  const t = idle.splice(at, 1)[0];
  if (t.idleTimer) clearTimeout(t.idleTimer);
  t.idleTimer = null;
  t.worker.ref();
  return t;
}

function release(t: ParserThread, healthy: boolean): void {
  if (healthy && idle.length < MAX_PARSER_THREADS) {
    t.worker.unref();
    t.idleTimer = setTimeout(() => {
      const i = idle.indexOf(t);
      if (i >= 0) idle.splice(i, 1);
      void t.worker.terminate();
    }, IDLE_MS);
    t.idleTimer.unref();
    idle.push(t);
    return;
  }
  void t.worker.terminate();
}

/** Starts a parser thread to wait, idle, for the first import (when none is idle or parsing already). */
export function warmParserThread(heapMb = PARSER_HEAP_MB): void {
  if (idle.length > 0 || running > 0) return;
  release(startThread(heapMb), true);
}

/** The threads waiting for a parse, and whether each has pdf.js loaded (diagnostics and tests). */
export function idleParserThreads(): { pdfjs: boolean }[] {
  return idle.map((t) => ({ pdfjs: t.pdfjs }));
}

/** Waits for one of the MAX_PARSER_THREADS slots; rejects when the signal fires first. */
function takeSlot(signal: AbortSignal | undefined, fileName: string): Promise<void> {
  if (running < MAX_PARSER_THREADS) {
    running++;
    return Promise.resolve();
  }
  return new Promise((resolve, reject) => {
    const go = () => {
      signal?.removeEventListener('abort', onAbort);
      running++;
      resolve();
    };
    const onAbort = () => {
      const i = waiting.indexOf(go);
      if (i >= 0) waiting.splice(i, 1);
      reject(aborted(signal, fileName));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    waiting.push(go);
  });
}

function giveSlot(): void {
  running--;
  waiting.shift()?.();
}

function unreadable(
  fileName: string,
  why: string,
  code: 'TOO_LARGE' | 'CORRUPT' | 'TIMEOUT',
  cause?: unknown,
): ImportError {
  return new ImportError(
    code,
    `${fileName}: the document is too large or malformed to read: ${why}`,
    cause === undefined ? undefined : { cause },
  );
}

/**
 * Parses a document in a parser thread. Takes `bytes` over: their buffer is moved to the thread (detached
 * here), so the caller must own it. Throws ImportError, including for a thread that died or was stopped.
 */
export async function parseInThread(
  bytes: Uint8Array,
  fileName: string,
  opts: ParseOptions = {},
): Promise<ParsedDocument> {
  const { signal, onProgress } = opts;
  const stallMs = opts.stallTimeoutMs ?? PARSE_STALL_MS;
  const timeLimitMs = opts.timeLimitMs ?? PARSE_TIME_LIMIT_MS;
  const heapMb = opts.heapMb ?? PARSER_HEAP_MB;
  if (signal?.aborted) throw aborted(signal, fileName);
  await takeSlot(signal, fileName);
  let thread: ParserThread | null = null;
  let healthy = false;
  const cleanup: (() => void)[] = [];
  try {
    if (signal?.aborted) throw aborted(signal, fileName);
    const t = (thread = acquire(heapMb));
    const id = nextJob++;
    const doc = await new Promise<ParsedDocument>((resolve, reject) => {
      let phase = 'starting';
      let stall: ReturnType<typeof setTimeout> | undefined;
      const kick = (ms = stallMs) => {
        clearTimeout(stall);
        stall = setTimeout(
          () =>
            reject(
              unreadable(
                fileName,
                `the reader made no progress for ${Math.round(ms / 1000)} s while ${phase}`,
                'TIMEOUT',
              ),
            ),
          ms,
        );
      };
      const limit = setTimeout(
        () =>
          reject(unreadable(fileName, `reading it took more than ${Math.round(timeLimitMs / 60_000)} min`, 'TIMEOUT')),
        timeLimitMs,
      );
      cleanup.push(() => {
        clearTimeout(stall);
        clearTimeout(limit);
      });
      kick();

      const onMessage = (m: ParserMessage) => {
        if (m.type === 'ready' || m.type === 'pdfjs' || m.id !== id) return;
        kick(m.type === 'phase' && m.allowanceMs ? Math.max(stallMs, m.allowanceMs) : stallMs);
        if (m.type === 'progress') onProgress?.(m.done, m.total, m.stage);
        else if (m.type === 'phase') phase = m.phase;
        else if (m.type === 'done') {
          healthy = true;
          resolve(m.doc);
        } else {
          // The readers' own errors keep their code (and the thread is fine); anything else a reader threw
          // means a file it could not handle, and a thread that may be left in a bad state.
          const { code, message, details } = m.error;
          healthy = !!code;
          reject(
            code
              ? new ImportError(code as ImportError['code'], message, { details })
              : unreadable(fileName, `${message} (while ${phase})`, 'CORRUPT'),
          );
        }
      };
      const onError = (e: Error & { code?: string }) => {
        if (e.code === 'ERR_WORKER_OUT_OF_MEMORY')
          reject(
            unreadable(
              fileName,
              `reading it needed more than ${heapMb} MiB of memory (while ${phase})`,
              'TOO_LARGE',
              e,
            ),
          );
        else if (!t.started)
          reject(
            new ImportError(
              'READ_FAILED',
              `cannot read ${fileName}: the document reader failed to start (${e.message})`,
              { cause: e },
            ),
          );
        else reject(unreadable(fileName, `the reader failed while ${phase} (${e.message})`, 'CORRUPT', e));
      };
      const onExit = (code: number) =>
        reject(unreadable(fileName, `the reader stopped unexpectedly (exit code ${code}) while ${phase}`, 'CORRUPT'));
      const onAbort = () => reject(aborted(signal, fileName));
      t.worker.on('message', onMessage);
      t.worker.on('error', onError);
      t.worker.on('exit', onExit);
      signal?.addEventListener('abort', onAbort, { once: true });
      cleanup.push(() => {
        t.worker.off('message', onMessage);
        t.worker.off('error', onError);
        t.worker.off('exit', onExit);
        signal?.removeEventListener('abort', onAbort);
      });
      const job: ParseJob = {
        id,
        fileName,
        bytes,
        password: opts.password,
        ocrCache: opts.ocrCache,
        ocrLanguages: opts.ocrLanguages,
        ocrPages: opts.ocrPages,
        ocrAsk: opts.ocrAsk,
        ocrMaxPixels: opts.ocrMaxPixels,
      };
      t.worker.postMessage(job, bytes.buffer instanceof ArrayBuffer ? [bytes.buffer] : []);
    });
    return doc;
  } finally {
    for (const c of cleanup) c();
    // After a crash, a stall or a cancel the thread may be stuck or poisoned: it is ended, never reused.
    if (thread) release(thread, healthy);
    giveSlot();
  }
}
