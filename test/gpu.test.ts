// The GPU backend `auto` runs on (CUDA, a Vulkan GPU, or a library named by FOLIO_GPU_LIBRARY: the
// reference backend, lavapipe) end to end, against the CPU backend on stories260K: the same logits and greedy tokens,
// the same entries kept by a compression, sessions saved on one backend and loaded on the other, fork and
// truncate on the device. Skipped, saying why, where no GPU is usable (libfolio-cuda not built, no driver,
// no device); the backend report itself is checked everywhere. (Every other engine test runs on the GPU
// too where there is one: sessions default to backend 'auto'.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import {
  addonPath,
  COMPUTE_BACKENDS,
  loadAddon,
  type GpuBackend,
  type Model,
  type SessionOptions,
} from '../electron/engine/binding.ts';
import { missing, sharedModel, sharedReference } from './helpers/shared.ts';

const addon = loadAddon();
const info = addon.backendInfo();
const stories = sharedModel('stories260K.gguf');
const longCase = sharedReference('stories260K/p4_long.json');
const skip = !info.gpuAvailable ? `no usable GPU: ${info.reason}` : missing(stories, longCase);
const dir = mkdtempSync(join(tmpdir(), 'folio-gpu-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

// The GPU multiplies float activations by the exact weights and sums in a different order: logits agree
// with the CPU's far inside the 1e-4 that both keep from llama.cpp's.
const TOL = 1e-4;
const cpu: SessionOptions = { nCtx: 512, nThreads: 2, kvType: 'f32', backend: 'cpu' };
const gpuKind: GpuBackend = info.backend === 'cpu' ? 'cuda' : info.backend;
const gpu: SessionOptions = { ...cpu, backend: gpuKind };
const cudaStatus = info.gpus.find((g) => g.kind === 'cuda');
let model: Model;
let prefix: number[] = [];

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

test('the backend report says which backend runs and why', () => {
  assert.ok(COMPUTE_BACKENDS.includes(info.backend));
  assert.ok(info.reason.length > 0, 'a reason');
  assert.equal(info.gpuAvailable, info.backend !== 'cpu');
  assert.deepEqual(
    info.gpus.map((g) => g.kind),
    COMPUTE_BACKENDS.filter((b) => b !== 'cpu'),
    'every GPU library says what it gives',
  );
  for (const g of info.gpus) {
    assert.ok(g.reason.length > 0, `${g.kind}: a reason`);
    assert.equal(g.backend, g.gpuAvailable ? g.kind : 'cpu');
  }
  if (info.gpuAvailable) assert.ok(info.device && info.device.totalBytes > 0);
  else
    assert.throws(
      () => addon.ops.gpuCopyBandwidth(16, 1),
      (e: Error & { code?: string }) => e.code === 'GPU_UNAVAILABLE',
    );
});

test("libfolio-cuda is built beside the engine wherever CUDA's compiler is installed", () => {
  // CI has nvcc but no GPU: this is what keeps the CUDA build from breaking unnoticed there.
  const nvcc = ['/usr/local/cuda/bin/nvcc', ...(process.env.CUDACXX ? [process.env.CUDACXX] : [])].find((p) =>
    existsSync(p),
  );
  const lib = join(dirname(addonPath()), process.platform === 'win32' ? 'folio-cuda.dll' : 'libfolio-cuda.so');
  if (!nvcc || process.platform === 'darwin') return;
  assert.ok(existsSync(lib), `${nvcc} is installed but ${lib} was not built`);
  // And it loads: without a driver it may be unusable, but never unloadable (a missing symbol, a CUDA
  // library it should not need).
  if (process.env.FOLIO_GPU !== 'off' && !process.env.FOLIO_GPU_LIBRARY)
    assert.doesNotMatch(cudaStatus?.reason ?? '', /could not be loaded|not a Folio GPU backend|is not installed/);
});

test('a session asking for CUDA without a usable CUDA GPU is refused with the reason', {
  skip: cudaStatus?.gpuAvailable ? 'a CUDA GPU is present' : missing(stories),
}, async () => {
  const m = await addon.loadModel(stories);
  assert.throws(
    () => m.createSession({ ...cpu, backend: 'cuda' }),
    (e: Error & { code?: string }) => e.code === 'GPU_UNAVAILABLE' && e.message === cudaStatus?.reason,
  );
  assert.equal(m.createSession({ ...cpu, backend: 'auto' }).backend, info.backend);
  m.dispose();
});

test('GPU: setup', { skip }, async () => {
  model = await addon.loadModel(stories);
  prefix = JSON.parse(readFileSync(longCase, 'utf8')).tokens;
  assert.equal(model.createSession(gpu).backend, gpuKind);
});

test('GPU: logits at every position and 64 greedy tokens equal the CPU backend', { skip }, async () => {
  const a = model.createSession(cpu),
    b = model.createSession(gpu);
  const la = (await a.prefill(prefix, { allLogits: true })).logits;
  const lb = (await b.prefill(prefix, { allLogits: true })).logits;
  const d = maxDiff(lb, la);
  assert.ok(d <= TOL, `max |Δlogit| ${d}`);
  const ga = await a.generate({ n: 64, temperature: 0 }),
    gb = await b.generate({ n: 64, temperature: 0 });
  assert.deepEqual(gb.tokens, ga.tokens);
  a.dispose();
  b.dispose();
});

test("GPU: an answer's attention to the cache (citations) equals the CPU backend's", { skip }, async () => {
  // The GPU backend has no kernel of its own: Backend::watch_attention's host default runs over the device cache.
  const a = model.createSession(cpu),
    b = model.createSession(gpu);
  await a.prefill(prefix);
  await b.prefill(prefix);
  const ga = await a.generate({ n: 8, temperature: 0, collectAttention: true }),
    gb = await b.generate({ n: 8, temperature: 0, collectAttention: true });
  assert.deepEqual(gb.tokens, ga.tokens);
  assert.equal(gb.attention!.length, ga.attention!.length);
  ga.attention!.forEach((row, l) => {
    const d = maxDiff(gb.attention![l], row);
    assert.ok(d <= TOL, `layer ${l}: max |Δ| ${d}`);
  });
  a.dispose();
  b.dispose();
});

test('GPU: a decode step at a time gives the logits of a batched prefill', { skip }, async () => {
  const batched = model.createSession(gpu),
    stepped = model.createSession(gpu);
  const all = (await batched.prefill(prefix.slice(0, 40), { allLogits: true })).logits;
  const V = all.length / 40;
  for (let t = 0; t < 40; t++) {
    const { logits } = await stepped.prefill([prefix[t]]);
    const d = maxDiff(logits, all.subarray(t * V, (t + 1) * V));
    assert.ok(d <= TOL, `position ${t}: ${d}`);
  }
  batched.dispose();
  stepped.dispose();
});

for (const method of ['ada-snapkv', 'snapkv', 'ada-pyramidkv', 'streaming'] as const)
  test(`GPU: ${method} keeps the same entries as on the CPU`, { skip }, async () => {
    const a = model.createSession(cpu),
      b = model.createSession(gpu);
    const ra = await a.compress(prefix, { method, budget: 0.3 });
    const rb = await b.compress(prefix, { method, budget: 0.3 });
    assert.deepEqual(
      rb.stats.layers.map((l) => l.heads.map((h) => h.kept)),
      ra.stats.layers.map((l) => l.heads.map((h) => h.kept)),
    );
    assert.deepEqual(rb.stats.tokenRetention, ra.stats.tokenRetention);
    assert.equal(rb.stats.kvBytesKept, ra.stats.kvBytesKept);
    rb.stats.layers.forEach((l, i) =>
      l.heads.forEach((h, g) =>
        assert.ok(Math.abs(h.retainedMass - ra.stats.layers[i].heads[g].retainedMass) < 1e-4, `layer ${i} head ${g}`),
      ),
    );
    assert.deepEqual(b.memory().headLengths, a.memory().headLengths);
    assert.ok(maxDiff(rb.logits, ra.logits) <= TOL);
    const ga = await a.generate({ n: 24, temperature: 0 }),
      gb = await b.generate({ n: 24, temperature: 0 });
    assert.deepEqual(gb.tokens, ga.tokens);
    a.dispose();
    b.dispose();
  });

// Quantized entries (issue 43) on the device: q8_0 keys and q4_0 values, rotated. The device quantizes the
// rotated rows it appends by the CPU's formulas and rotates its queries and outputs where the CPU does, but
// the two backends' projections differ in their last bits (other sums), and a number that sits on the edge of
// two steps goes one way here and the other there, a whole step apart: the logits cannot agree to 1e-4 as the
// float caches' do. They agree to a small part of what the quantization itself changes (measured on
// stories260K with the reference library: RMS 0.004 apart against 0.09 from the f32 cache, 5%); a missing or
// doubled rotation, a wrong block or scale, gives more than the quantization's own error. Then the device's
// entries, saved and loaded on the CPU, give the device's logits: the same blocks, read the same way.
function rms(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length);
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] - b[i]) ** 2;
  return Math.sqrt(s / a.length);
}

test('GPU: a quantized, rotated cache reads, compresses and saves as on the CPU', { skip }, async () => {
  const precision: SessionOptions = { kvTypeK: 'q8_0', kvTypeV: 'q4_0', kvRotate: true };
  const exact = model.createSession(cpu),
    a = model.createSession({ ...cpu, ...precision }),
    b = model.createSession({ ...gpu, ...precision });
  assert.equal(b.backend, gpuKind);
  const lf = (await exact.prefill(prefix, { allLogits: true })).logits;
  const la = (await a.prefill(prefix, { allLogits: true })).logits;
  const lb = (await b.prefill(prefix, { allLogits: true })).logits;
  const apart = rms(lb, la),
    quantization = rms(la, lf);
  assert.ok(apart <= 0.1 * quantization, `RMS ${apart} between the backends, ${quantization} from f32`);
  assert.ok(Math.abs(rms(lb, lf) - quantization) <= 0.1 * quantization, 'the device quantizes as much, no more');

  const c = model.createSession({ ...gpu, ...precision });
  const r = await c.compress(prefix, { method: 'ada-snapkv', budget: 0.3 });
  assert.equal(r.stats.kvType, 'q8_0/q4_0+rot');
  await c.prefill([13, 13, 319]);
  const file = join(dir, 'gpu-quantized.session');
  await c.save(file);
  const onCpu = (await model.loadSession(file, cpu)).session;
  assert.equal(onCpu.backend, 'cpu');
  assert.deepEqual(onCpu.memory().headLengths, c.memory().headLengths);
  assert.ok(maxDiff(onCpu.lastLogits(), c.lastLogits()) <= TOL, 'the saved blocks read back as the device read them');
  const x = await c.generate({ n: 16, temperature: 0 }),
    y = await onCpu.generate({ n: 16, temperature: 0 });
  assert.deepEqual(y.tokens, x.tokens);
  for (const s of [exact, a, b, c, onCpu]) s.dispose();
});

test('GPU: sessions saved on one backend load on the other', { skip }, async () => {
  const g = model.createSession(gpu);
  await g.compress(prefix, { method: 'ada-snapkv', budget: 0.25 });
  await g.prefill([13, 13, 319]);
  const fromGpu = join(dir, 'gpu.session');
  await g.save(fromGpu);
  const onCpu = (await model.loadSession(fromGpu, cpu)).session;
  assert.equal(onCpu.backend, 'cpu');
  assert.ok(maxDiff(onCpu.lastLogits(), g.lastLogits()) <= TOL);
  const back = join(dir, 'cpu.session');
  await onCpu.save(back);
  const onGpu = (await model.loadSession(back, gpu)).session;
  assert.equal(onGpu.backend, gpuKind);
  const x = await g.generate({ n: 16, temperature: 0 }),
    y = await onCpu.generate({ n: 16, temperature: 0 });
  const z = await onGpu.generate({ n: 16, temperature: 0 });
  assert.deepEqual(y.tokens, x.tokens);
  assert.deepEqual(z.tokens, x.tokens);
  for (const s of [g, onCpu, onGpu]) s.dispose();
});

test('GPU: a fork leaves its origin alone, truncate undoes an append', { skip }, async () => {
  const origin = model.createSession(gpu),
    ref = model.createSession(cpu);
  await origin.compress(prefix, { method: 'ada-snapkv', budget: 0.3 });
  await ref.compress(prefix, { method: 'ada-snapkv', budget: 0.3 });
  const n = origin.nPast;
  const fork = origin.fork();
  assert.equal(fork.backend, gpuKind);
  await fork.generate({ n: 12, temperature: 0.9, seed: 7 });
  const got = await origin.generate({ n: 12, temperature: 0 }),
    want = await ref.generate({ n: 12, temperature: 0 });
  assert.deepEqual(got.tokens, want.tokens, 'the origin continues as if the fork had not run');
  origin.truncate(n);
  ref.truncate(n);
  await origin.prefill([want.tokens[0]]);
  await ref.prefill([want.tokens[0]]);
  assert.ok(
    maxDiff(origin.lastLogits(), ref.lastLogits()) <= TOL,
    'after truncate, the same token gives the same logits',
  );
  for (const s of [origin, fork, ref]) s.dispose();
});
