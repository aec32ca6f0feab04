// Time, timers and ids for the storage layer. The scheduler is injectable so that tests of throttled
// writes run on a fake clock: deterministic and instant.
import { randomUUID } from 'node:crypto';

export interface Scheduler {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemScheduler: Scheduler = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Times are stored and returned as ISO 8601 strings in UTC (they sort as text). */
export function isoTime(scheduler: Scheduler): string {
  return new Date(scheduler.now()).toISOString();
}

/** Random, URL-safe ids. */
export function newId(): string {
  return randomUUID();
}
