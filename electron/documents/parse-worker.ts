// The parser thread's entry: parses one document at a time for parser-thread.ts, reporting progress and
// phases as it goes, so the parent can tell a slow parse from a stuck one. Documents' readers print nothing
// the user should see (pdf.js warns about fonts and broken objects): the console is silenced here.
import { parentPort } from 'node:worker_threads';

import { ImportError } from './errors.ts';
import { parseDocument, type ParsedDocument } from './parse.ts';
import type { OcrLanguage } from './ocr.ts';
import type { OcrPages } from '../shared/ocr.ts';
import type { ParseStage } from './pages.ts';
import { loadPdfjs } from './pdf.ts';

export interface ParseJob {
  id: number;
  fileName: string;
  bytes: Uint8Array;
  password?: string;
  ocrCache?: string;
  ocrLanguages?: OcrLanguage[];
  ocrPages?: OcrPages;
  ocrAsk?: { overSeconds: number; secondsPerPage: number };
  ocrMaxPixels?: number;
}

export type ParserMessage =
  | { type: 'ready' }
  /** pdf.js is loaded (the thread loads it as it starts). */
  | { type: 'pdfjs' }
  | { id: number; type: 'progress'; done: number; total: number; stage?: ParseStage }
  | { id: number; type: 'phase'; phase: string; allowanceMs?: number }
  | { id: number; type: 'done'; doc: ParsedDocument }
  | { id: number; type: 'failed'; error: { code?: string; message: string; details?: unknown } };

for (const k of ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const) console[k] = () => {};
// So is what this thread's own threads print (Tesseract's prints Leptonica's errors, as for a page past its heap):
// it comes here as this thread's output, and output left unread in the parent kept the process alive.
for (const stream of [process.stdout, process.stderr]) stream.write = () => true;

// No native zlib streams in this thread: pdf.js inflates FlateDecode (and Brotli) streams through
// DecompressionStream when there is one, and Node 20 aborts the whole process (node_zlib.cc: "close before
// init") when a thread is terminated, as a stalled or cancelled parse is, between such a stream's creation
// and its initialisation (seen in CI: documents.test.ts died with SIGABRT). Without it pdf.js uses its own
// JavaScript decoder (its fallback), whose memory the thread's heap cap also bounds.
delete (globalThis as { DecompressionStream?: unknown }).DecompressionStream;

const port = parentPort!;
const post = (m: ParserMessage) => port.postMessage(m);

port.on('message', async (job: ParseJob) => {
  const { id, fileName } = job;
  try {
    const doc = await parseDocument(job.bytes, fileName, {
      password: job.password,
      ocrCache: job.ocrCache,
      ocrLanguages: job.ocrLanguages,
      ocrPages: job.ocrPages,
      ocrAsk: job.ocrAsk,
      ocrMaxPixels: job.ocrMaxPixels,
      onProgress: (done, total, stage) => post({ id, type: 'progress', done, total, stage }),
      onPhase: (phase, allowanceMs) => post({ id, type: 'phase', phase, allowanceMs }),
    });
    post({ id, type: 'done', doc });
  } catch (e) {
    const error =
      e instanceof ImportError
        ? { code: e.code, message: e.message, details: e.details }
        : { message: e instanceof Error ? e.message : String(e) };
    post({ id, type: 'failed', error });
  }
});
post({ type: 'ready' });
// pdf.js is most of what a first PDF waited for (a second of a one-page file's import, measured): loaded now,
// while the thread idles, a parse that comes meanwhile waits on the same load.
loadPdfjs().then(
  () => post({ type: 'pdfjs' }),
  () => {},
);
