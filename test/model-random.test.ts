// The engine against the float64 reference forward (test/helpers/reference-forward.ts) on random-weight
// models of every architecture and tensor type, written by test/helpers/random-model.ts.
//
// Tolerances. Both sides dequantize the same weight bytes exactly, so the differences come from the
// engine's arithmetic: float32 everywhere, and for non-F32 weights the activations converted to the
// weight's dot-product format before each matrix product, as llama.cpp does. The measure is the normalised
// error NMSE = Σ(engine − ref)² / Σ ref² over all logits of all positions (test-backend-ops uses the same).
// - F32: float32 rounding only (measured about 3e-13).
// - F16 / BF16 activations: relative rounding 2^-11 / 2^-8 per element (measured 6e-7 / 3e-5).
// - 8-bit activations: an element's error is uniform within ±d/2, d = (block max)/127. For Gaussian data the
//   block max is about 2.1σ over Q8_0/Q8_1's 32 values and 2.9σ over Q8_K's 256, so one quantization adds
//   an NMSE of (2.1/127)²/12 ≈ 2.3e-5 (Q8_K: 4.3e-5); about 15 quantized products feed the logits of these
//   2-layer models, hence 3.5e-4 (6.5e-4) expected, and 3e-4 to 9e-4 measured. The weight type matters
//   only through the activation format (Q2_K, Q3_K and IQ4_XS take Q8_K like Q4_K; IQ4_NL takes Q8_0),
//   so the 2-3 bit types have the bounds of their activation format; a llama.cpp mix (quant-mix.ts) has
//   that of Q8_K, the format of all its types.
// Each bound is about 5× the measured value; a real bug (a wrong rotation, a swapped head, a misread
// block) gives an NMSE near 1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { loadAddon, type EngineError } from '../electron/engine/binding.ts';
import { inspectGguf } from '../electron/models/gguf-header.ts';
import { writeRandomModel, type RandomModelOptions } from './helpers/random-model.ts';
import { referenceForward } from './helpers/reference-forward.ts';
import type { GgmlTypeName } from './helpers/quant-ref.ts';

const NMSE_BOUND: Record<string, number> = {
  F32: 1e-10,
  F16: 5e-6,
  BF16: 2e-4,
  Q8_0: 2e-3, // Q8_0 activations
  Q4_0: 2e-3,
  Q5_0: 2e-3,
  Q4_1: 2e-3, // Q8_1 activations
  Q5_1: 2e-3,
  Q4_K: 5e-3, // Q8_K activations
  Q5_K: 5e-3,
  Q6_K: 5e-3,
  Q2_K: 5e-3,
  Q3_K: 5e-3,
  IQ4_XS: 5e-3,
  IQ4_NL: 2e-3, // Q8_0 activations
};

const dir = mkdtempSync(join(tmpdir(), 'folio-random-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

// Tokens: BOS, then a fixed mixture of ids across the vocabulary, long enough to exercise attention
// over many positions and more than one forward step (nBatch is set below the prompt length).
const prompt = [1, ...Array.from({ length: 40 }, (_, i) => 3 + ((i * 37 + 11) % 300))];

async function compare(name: string, opts: RandomModelOptions, nCtx = 256) {
  const path = join(dir, `${name}.gguf`);
  writeRandomModel(path, opts);
  const model = await loadAddon().loadModel(path);
  const session = model.createSession({ nCtx, nBatch: 16, nThreads: 2, kvType: 'f32' });
  // The prompt in chunks of up to 16 (the blocked matrix kernels), its last 3 tokens one at a time (the
  // matrix-vector kernels of decoding).
  const head = prompt.length - 3;
  const logits = new Float32Array(prompt.length * model.info().nVocab);
  logits.set((await session.prefill(prompt.slice(0, head), { allLogits: true })).logits);
  for (let p = head; p < prompt.length; p++) {
    logits.set((await session.prefill([prompt[p]], { allLogits: true })).logits, p * model.info().nVocab);
  }
  const ref = referenceForward(path, prompt, nCtx);
  const V = model.info().nVocab;
  let num = 0,
    den = 0,
    maxAbs = 0,
    argmaxAgree = 0;
  for (let p = 0; p < prompt.length; p++) {
    let best = 0,
      refBest = 0;
    for (let i = 0; i < V; i++) {
      const a = logits[p * V + i],
        b = ref[p][i];
      num += (a - b) ** 2;
      den += b * b;
      maxAbs = Math.max(maxAbs, Math.abs(a - b));
      if (a > logits[p * V + best]) best = i;
      if (b > ref[p][refBest]) refBest = i;
    }
    if (best === refBest) argmaxAgree++;
  }
  session.dispose();
  model.dispose();
  return { nmse: num / den, maxAbs, argmaxAgree: argmaxAgree / prompt.length };
}

const types = Object.keys(NMSE_BOUND) as GgmlTypeName[];
// phi3 with LongRoPE switches to the long factors past the original context (64 here): the session's
// context of 256 takes them, the one of 64 the short ones.
const SHORT_CONTEXT: Record<string, number> = { 'phi3-longrope-short-F32': 64 };
const variants: [string, RandomModelOptions][] = [
  ...types.map((type): [string, RandomModelOptions] => [`llama-${type}`, { arch: 'llama', type, seed: 7 }]),
  ['llama-llama3-rope', { arch: 'llama', type: 'F32', ropeScaling: 'llama3', seed: 3 }],
  ['llama-tied-q8', { arch: 'llama', type: 'Q8_0', tiedEmbeddings: true, seed: 4 }],
  ['qwen2-F32', { arch: 'qwen2', type: 'F32', seed: 5 }],
  ['qwen2-Q4_K', { arch: 'qwen2', type: 'Q4_K', seed: 6 }],
  ['qwen3-F32', { arch: 'qwen3', type: 'F32', seed: 8 }],
  ['qwen3-headdim128-Q6_K', { arch: 'qwen3', type: 'Q6_K', headDim: 128, seed: 9 }],
  ['qwen3-F16', { arch: 'qwen3', type: 'F16', seed: 10 }],
  // llama.cpp's mixes with gqa 4 (so attn_v takes its larger type) over 4 layers
  ['llama-mix-Q3_K_M', { arch: 'llama', mix: 'Q3_K_M', nHead: 8, nHeadKv: 2, nLayer: 4, seed: 11 }],
  ['qwen2-mix-IQ4_XS', { arch: 'qwen2', mix: 'IQ4_XS', nHead: 8, nHeadKv: 2, nLayer: 4, seed: 12 }],
  ['llama-mix-Q2_K', { arch: 'llama', mix: 'Q2_K', nHead: 8, nHeadKv: 2, tiedEmbeddings: true, seed: 13 }],
  ['phi3-F32', { arch: 'phi3', type: 'F32', seed: 11 }],
  ['phi3-Q4_K', { arch: 'phi3', type: 'Q4_K', seed: 12 }],
  ['phi3-longrope-partial-F32', { arch: 'phi3', type: 'F32', ropeScaling: 'longrope', ropeDim: 48, seed: 13 }],
  ['phi3-longrope-short-F32', { arch: 'phi3', type: 'F32', ropeScaling: 'longrope', seed: 14 }],
  ['gemma3-F32', { arch: 'gemma3', type: 'F32', seed: 15 }],
  // 62 layers: the shape of Gemma 3 27B, whose attention scale is 1/sqrt(n_embd/n_head), not 1/sqrt(head_dim)
  [
    'gemma3-27b-scale-F32',
    { arch: 'gemma3', type: 'F32', nLayer: 62, nEmbd: 64, nHead: 2, nHeadKv: 1, headDim: 64, nFf: 128, seed: 19 },
  ],
  ['qwen3moe-F32', { arch: 'qwen3moe', type: 'F32', seed: 17 }],
  // Quantized activations move the router's logits a little, and where two experts nearly tie that flips
  // a token's pick: a jump no tolerance covers. So the quantized experts are checked with every expert
  // used (routing weights only, continuous); the F32 model checks the picking.
  ['qwen3moe-all-experts-Q4_K', { arch: 'qwen3moe', type: 'Q4_K', nExpert: 4, nExpertUsed: 4, seed: 18 }],
  ['gemma3-linear-tied-Q8_0', { arch: 'gemma3', type: 'Q8_0', ropeScaling: 'linear', tiedEmbeddings: true, seed: 16 }],
];

// FOLIO_RANDOM_ONLY (comma-separated names) runs some of the variants: the child process below.
const only = process.env.FOLIO_RANDOM_ONLY?.split(',');
for (const [name, opts] of variants.filter(([n]) => !only || only.includes(n))) {
  test(`random ${name}: logits agree with the float64 reference`, async () => {
    const r = await compare(name, opts, SHORT_CONTEXT[name]);
    const bound = NMSE_BOUND[opts.mix ? 'Q4_K' : (opts.type ?? 'F32')];
    assert.ok(r.nmse <= bound, `NMSE ${r.nmse.toExponential(2)} > ${bound} (max |Δ| ${r.maxAbs.toExponential(2)})`);
    if (opts.type === 'F32') assert.equal(r.argmaxAgree, 1, 'argmax at every position');
  });
}

// (Not in the child process below, which counts its tests.)
// The attention slides past the window (test/model-oracle.test.ts holds it to ik_llama.cpp there).
test('a sliding window shorter than the trained context leaves the trained context (phi3, gemma3)', {
  skip: !!only,
}, async () => {
  for (const arch of ['phi3', 'gemma3'] as const) {
    const path = join(dir, `${arch}-window.gguf`);
    writeRandomModel(path, { arch, nCtx: 256, slidingWindow: 100 });
    const summary = await inspectGguf(path);
    assert.equal(summary.contextLength, 256, `${arch}: the app's header reading`);
    const model = await loadAddon().loadModel(path);
    assert.equal(model.info().contextLength, 256, `${arch}: the engine's`);
    // which layers slide: gemma3's five of six (the random model's 6 layers), phi3's every one (its 2)
    const sliding = { slidingLayers: arch === 'gemma3' ? 5 : 2, slidingWindow: 100 };
    assert.deepEqual({ slidingLayers: summary.slidingLayers, slidingWindow: summary.slidingWindow }, sliding);
    const info = model.info();
    assert.deepEqual({ slidingLayers: info.slidingLayers, slidingWindow: info.slidingWindow }, sliding);
    assert.throws(
      () => model.createSession({ nCtx: 257 }),
      (e: EngineError) => e.code === 'CONTEXT_TOO_LONG',
    );
    model.createSession({ nCtx: 256 }).dispose();
    model.dispose();
  }
});

// The engine picks its ISA once per process. Where that is AVX-512, the AVX2 kernels, with their own
// repacked layouts (Q4_K and Q6_K: quant/repack.h), run the K-quant models in a child process.
if (!process.env.FOLIO_ISA && loadAddon().ops.isas().includes('avx512')) {
  test('random K-quant models on the AVX2 kernels (repacked Q4_K and Q6_K) agree too', () => {
    const names = ['llama-Q4_K', 'llama-Q6_K', 'qwen2-Q4_K', 'qwen3-headdim128-Q6_K'];
    const env: NodeJS.ProcessEnv = { ...process.env, FOLIO_ISA: 'avx2', FOLIO_RANDOM_ONLY: names.join(',') };
    delete env.NODE_TEST_CONTEXT; // else the child reports to this runner's protocol instead of stdout
    const r = spawnSync(
      process.execPath,
      ['--import', 'tsx', '--test-reporter', 'tap', fileURLToPath(import.meta.url)],
      {
        env,
        encoding: 'utf8',
      },
    );
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, new RegExp(`# pass ${names.length}\\b`));
  });
}
