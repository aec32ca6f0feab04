// A child process for tests of the GPU libraries whose settings are read once per process (a device's
// largest allocation: FOLIO_REFERENCE_GPU_MAX_ALLOC, FOLIO_VULKAN_MAX_ALLOC): runs one model on the GPU
// `auto` chose and prints, as one JSON line, the device, the logits at every position of a fixed prompt
// and 12 greedy tokens, so that the parent can compare runs under different settings.
//   node --import tsx test/helpers/gpu-run-child.ts MODEL [N_BATCH]
import { loadAddon } from '../../electron/engine/binding.ts';

const [path, batch] = process.argv.slice(2);
const addon = loadAddon();
const info = addon.backendInfo();
if (!info.gpuAvailable || info.backend === 'cpu') throw new Error(`no GPU: ${info.reason}`);
const model = await addon.loadModel(path);
const vocab = model.info().nVocab;
const prompt = [1, ...Array.from({ length: 40 }, (_, i) => 3 + ((i * 37 + 11) % Math.min(300, vocab - 3)))];
const session = model.createSession({
  nCtx: 128,
  nBatch: Number(batch ?? 16),
  kvType: 'f32',
  nThreads: 2,
  backend: info.backend,
});
const { logits } = await session.prefill(prompt, { allLogits: true });
const { tokens } = await session.generate({ n: 12, temperature: 0 });
process.stdout.write(
  JSON.stringify({ backend: session.backend, device: info.device, logits: Array.from(logits), tokens }) + '\n',
);
session.dispose();
model.dispose();
