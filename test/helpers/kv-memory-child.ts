// Child process of test/kv-memory.test.ts: loads a model, fills a session with a document either in full
// or compressed, and prints its resident memory before and after as JSON. Run alone so that nothing
// else in the process moves the numbers.
import { loadAddon } from '../../electron/engine/binding.ts';

const [modelPath, mode, nTokens] = process.argv.slice(2);
const model = await loadAddon().loadModel(modelPath);
const session = model.createSession({ nCtx: Number(nTokens) + 64, nThreads: 2, kvType: 'f32' });
const tokens = Array.from({ length: Number(nTokens) }, (_, i) => (i === 0 ? 1 : 3 + ((i * 37) % 300)));
// Touch the weights and the working buffers once, so that both modes start from the same state.
await session.prefill(tokens.slice(0, 64));
session.truncate(0);
const before = process.memoryUsage.rss();
// The prefill runs off the JS thread: sample the resident memory meanwhile for its peak.
let peak = before;
const sample = () => void (peak = Math.max(peak, process.memoryUsage.rss()));
const timer = setInterval(sample, 1);
let stats = null;
if (mode === 'full') await session.prefill(tokens, { onProgress: sample });
else stats = (await session.compress(tokens, { method: 'ada-snapkv', budget: 0.2, onProgress: sample })).stats;
clearInterval(timer);
const after = process.memoryUsage.rss();
console.log(
  JSON.stringify({
    before,
    after,
    grown: after - before,
    peak,
    kvBytesFull: stats?.kvBytesFull,
    kvBytesKept: stats?.kvBytesKept,
    memory: session.memory(),
  }),
);
