// Long operations (import, prefill, compression, model load, downloads) as tasks: an id, an AbortController
// for cancel buttons, progress events with an estimate of the time left, and a done event.
import { randomUUID } from 'node:crypto';

import type { EventBus } from '../api/dispatcher.ts';
import { ApiError, type TaskKind } from '../api/contract.ts';

export interface Task {
  readonly id: string;
  readonly signal: AbortSignal;
  /** Reports progress; `total` may change between phases (the ETA restarts with each kind). */
  progress(kind: TaskKind, done: number, total: number, message: string): void;
}

interface Running {
  controller: AbortController;
  kind: TaskKind;
  documentId: string | null;
  phaseStart: number;
  phaseKind: TaskKind;
  lastEmit: number;
}

export class Tasks {
  private running = new Map<string, Running>();

  constructor(
    private readonly bus: EventBus,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Runs `work` as a task and returns its id at once; the outcome is reported as a task.done event (and
   * `settled` resolves). A failure is reported, not thrown.
   */
  start<T>(
    kind: TaskKind,
    documentId: string | null,
    work: (task: Task) => Promise<T>,
  ): { taskId: string; settled: Promise<T | undefined> } {
    const id = randomUUID();
    const controller = new AbortController();
    const r: Running = { controller, kind, documentId, phaseStart: this.now(), phaseKind: kind, lastEmit: 0 };
    this.running.set(id, r);
    const task: Task = {
      id,
      signal: controller.signal,
      progress: (k, done, total, message) => {
        const t = this.now();
        if (k !== r.phaseKind) {
          r.phaseKind = k;
          r.phaseStart = t;
        }
        // At most ~10 events a second, but always the first and the last of a phase.
        if (done !== 0 && done < total && t - r.lastEmit < 100) return;
        r.lastEmit = t;
        const elapsed = t - r.phaseStart;
        const etaMs =
          done > 0 && done < total && elapsed > 250
            ? Math.round((elapsed / done) * (total - done))
            : done >= total
              ? 0
              : null;
        this.bus.emit('task.progress', { taskId: id, kind: k, documentId, done, total, etaMs, message });
      },
    };
    const settled = (async () => {
      try {
        const v = await work(task);
        this.bus.emit('task.done', { taskId: id, kind, documentId, ok: true, cancelled: false, error: null });
        return v;
      } catch (e) {
        const cancelled = controller.signal.aborted || (e as { code?: string }).code === 'CANCELLED';
        this.bus.emit('task.done', {
          taskId: id,
          kind,
          documentId,
          ok: false,
          cancelled,
          error: cancelled ? null : ((e as Error).message ?? String(e)),
        });
        return undefined;
      } finally {
        this.running.delete(id);
      }
    })();
    return { taskId: id, settled };
  }

  /** Like start, but waits for the task and rejects with its error (the events are the same). */
  async run<T>(kind: TaskKind, documentId: string | null, work: (task: Task) => Promise<T>): Promise<T> {
    let failure: { e: unknown } | undefined;
    let value: T | undefined;
    await this.start(kind, documentId, async (task) => {
      try {
        return (value = await work(task));
      } catch (e) {
        failure = { e };
        throw e;
      }
    }).settled;
    if (failure) throw failure.e;
    return value as T;
  }

  cancel(taskId: string): void {
    const r = this.running.get(taskId);
    if (!r) throw new ApiError('TASK_NOT_FOUND', 'no such task is running (it may have finished)');
    r.controller.abort();
  }

  /** Cancels every task of a document (it is being deleted). */
  cancelDocument(documentId: string): void {
    for (const r of this.running.values()) if (r.documentId === documentId) r.controller.abort();
  }

  get size(): number {
    return this.running.size;
  }
}
