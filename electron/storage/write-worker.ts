// The thread of write-thread.ts: a connection of its own to the library's database, on which it stores a
// document's content (pages, token ids, character map) with the same repository code as the main thread.
//   in:  { id, op: 'setContent' | 'setRead', documentId, payload, now }   out: { id, error: null | { code, message } }
import { parentPort, workerData } from 'node:worker_threads';

import Database from 'better-sqlite3';

import type { Scheduler } from './clock.ts';
import { configureConnection } from './database.ts';
import { DocumentsRepo, type DocumentContent, type DocumentRead } from './documents.ts';
import { StatsRepo } from './stats.ts';

export type WriteJob =
  | { id: number; op: 'setContent'; documentId: string; payload: DocumentContent; now: number }
  | { id: number; op: 'setRead'; documentId: string; payload: DocumentRead; now: number };
export interface WriteDone {
  id: number;
  error: { code: string; message: string } | null;
}

const { file, busyTimeoutMs } = workerData as { file: string; busyTimeoutMs: number };
const db = new Database(file, { timeout: busyTimeoutMs });
configureConnection(db);
// The time of each write is the caller's, so that a test's clock holds here too.
let now = 0;
const clock: Scheduler = { now: () => now, setTimeout: () => 0, clearTimeout: () => {} };
const documents = new DocumentsRepo(db, clock, new StatsRepo(db, clock));

parentPort!.on('message', (job: WriteJob | 'close') => {
  if (job === 'close') {
    db.close();
    process.exit(0);
  }
  now = job.now;
  let error: WriteDone['error'] = null;
  try {
    if (job.op === 'setContent') documents.setContent(job.documentId, job.payload);
    else documents.setRead(job.documentId, job.payload);
    // The WAL now holds megabytes: folded into the database here, not by the main connection's next commit.
    db.pragma('wal_checkpoint(TRUNCATE)');
  } catch (e) {
    const err = e as { code?: unknown; message?: unknown };
    error = {
      code: typeof err.code === 'string' ? err.code : 'STORAGE_WRITE_FAILED',
      message: String(err.message ?? e),
    };
  }
  parentPort!.postMessage({ id: job.id, error } satisfies WriteDone);
});
