// Starting a worker thread on one of the app's TypeScript modules. Built, the emitted .js runs as it is; under
// tsx (tests, the command line from source) a worker does not inherit the --import'ed loader on Node 20, so
// the thread registers tsx before it imports the entry. The parser, the tokenizer and the storage writer all
// start their threads here.
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** `entry`: the .ts module's URL, as `new URL('./x-worker.ts', import.meta.url)` gives it. */
export function startWorker(entry: URL, options: WorkerOptions = {}): Worker {
  if (import.meta.url.endsWith('.ts')) {
    const api = JSON.stringify(import.meta.resolve('tsx/esm/api'));
    const href = JSON.stringify(entry.href);
    return new Worker(`import(${api}).then((tsx) => { tsx.register(); return import(${href}); });`, {
      ...options,
      eval: true,
    });
  }
  return new Worker(new URL(entry.href.replace(/\.ts$/, '.js')), options);
}
