// The large writes of a document's content (its pages, token ids and character map: tens of megabytes for a
// long one) run in a worker thread on a connection of its own (write-worker.ts), with the same repository
// code, so the event loop that serves the UI and the API never waits on them: in WAL mode the main
// connection reads meanwhile, and a write of its own waits for the lock (busy timeout) as it would for
// another process's. The thread starts on the first write and is let go when the storage closes.
import type { Worker } from 'node:worker_threads';

import { startWorker } from '../worker-thread.ts';
import type { Scheduler } from './clock.ts';
import type { DocumentContent, DocumentRead } from './documents.ts';
import { StorageError, type StorageErrorCode } from './errors.ts';
import type { WriteDone, WriteJob } from './write-worker.ts';

type Job = WriteJob extends infer J ? (J extends WriteJob ? Omit<J, 'id' | 'now'> : never) : never;

export class ContentWriter {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: () => void; reject: (e: unknown) => void }>();

  constructor(
    private readonly file: string,
    private readonly busyTimeoutMs: number,
    private readonly scheduler: Scheduler,
  ) {}

  /** DocumentsRepo.setContent, on the writer's thread. */
  setContent(documentId: string, payload: DocumentContent): Promise<void> {
    return this.run({ op: 'setContent', documentId, payload });
  }

  /** DocumentsRepo.setRead, on the writer's thread. */
  setRead(documentId: string, payload: DocumentRead): Promise<void> {
    return this.run({ op: 'setRead', documentId, payload });
  }

  /** Ends the thread once the writes sent are done (a write sent later starts another). */
  async close(): Promise<void> {
    const w = this.worker;
    if (!w) return;
    this.worker = null;
    await new Promise<void>((done) => {
      w.once('exit', () => done());
      w.ref(); // until it has closed its connection
      w.postMessage('close');
    });
  }

  private run(job: Job): Promise<void> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const w = this.thread();
      w.ref(); // a write under way keeps the process up; an idle thread does not
      w.postMessage({ ...job, id, now: this.scheduler.now() } as WriteJob);
    });
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const w = startWorker(new URL('./write-worker.ts', import.meta.url), {
      // Waiting costs this thread nothing, and the main connection's short writes may come one after another.
      workerData: { file: this.file, busyTimeoutMs: Math.max(this.busyTimeoutMs, 60_000) },
    });
    w.on('message', (m: WriteDone) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) w.unref();
      if (m.error) p.reject(new StorageError(m.error.code as StorageErrorCode, m.error.message));
      else p.resolve();
    });
    const fail = (why: string) => {
      if (this.worker === w) this.worker = null;
      for (const p of this.pending.values())
        p.reject(new StorageError('STORAGE_WRITE_FAILED', `the storage writer stopped: ${why}`));
      this.pending.clear();
    };
    w.on('error', (e) => fail(e.message));
    w.on('exit', (code) => fail(`it exited (${code})`));
    this.worker = w;
    return w;
  }
}
