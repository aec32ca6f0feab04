// Child process of test/weight-pages.test.ts: loads a model, runs one prefill (which makes the CPU's
// copies of the weights) and prints the process's anonymous huge-page bytes and the last logits as JSON.
// A process of its own, so that the environment (FOLIO_HUGE_PAGES) and the count are this model's alone.
import { readFileSync } from 'node:fs';

import { loadAddon } from '../../electron/engine/binding.ts';

const model = await loadAddon().loadModel(process.argv[2]);
const session = model.createSession({ nCtx: 64, nThreads: 2 });
await session.prefill([1, 5, 9, 14, 20, 27, 35, 44]);
const kib = /AnonHugePages:\s+(\d+) kB/.exec(readFileSync('/proc/self/smaps_rollup', 'utf8'));
console.log(JSON.stringify({ anonHugeBytes: Number(kib?.[1] ?? 0) * 1024, logits: Array.from(session.lastLogits()) }));
