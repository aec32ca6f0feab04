// The engine's GPU path on machines without a GPU: the engine tests that run sessions (the llama.cpp
// oracle, Ada-KV sessions, the CUDA-vs-CPU checks of gpu.test.ts) run again with the GPU table served by
// libfolio-reference-gpu (native/tests/reference-gpu: each operation on the host, the plain way), so every
// session takes the GPU code path — device cache, forward pass, compression on the device, save/load
// across backends — and only the CUDA kernels themselves are left to a machine with a GPU.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { addonPath } from '../electron/engine/binding.ts';
import { runOnGpu } from './helpers/gpu-run.ts';
import { writeRandomModel } from './helpers/random-model.ts';
import { missing, repoRoot, sharedModel } from './helpers/shared.ts';

const name =
  process.platform === 'win32'
    ? 'folio-reference-gpu.dll'
    : process.platform === 'darwin'
      ? 'libfolio-reference-gpu.dylib'
      : 'libfolio-reference-gpu.so';
const library = join(dirname(addonPath()), name);
const files = [
  'test/gpu.test.ts',
  'test/model-reference.test.ts',
  'test/model-oracle.test.ts',
  'test/kv-session.test.ts',
  'test/kv-chunked.test.ts',
];

test('engine tests on the GPU path (reference backend)', {
  skip: existsSync(library) ? false : `${library} is not built (npm run build:native)`,
  timeout: 900_000,
}, () => {
  const env: NodeJS.ProcessEnv = { ...process.env, FOLIO_GPU_LIBRARY: library };
  delete env.NODE_TEST_CONTEXT; // a runner of its own, printing its report (not feeding this one's)
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-reporter=tap', '--test-concurrency=1', ...files],
    {
      cwd: repoRoot,
      env,
      encoding: 'utf8',
      timeout: 900_000,
    },
  );
  const out = `${r.stdout}\n${r.stderr}`;
  const count = (k: string) => Number(new RegExp(`^# ${k} (\\d+)`, 'm').exec(out)?.[1] ?? NaN);
  assert.equal(r.status, 0, `the engine tests failed on the GPU path:\n${out.slice(-6000)}`);
  assert.ok(count('pass') > 20, `they ran (${count('pass')} passed)`);
  assert.equal(count('fail'), 0);
  // On this path the GPU checks must run, not skip.
  assert.doesNotMatch(out, /# SKIP no usable GPU/, 'gpu.test.ts skipped its GPU checks');
});

// The op suite's harness, kept honest: on the reference backend every case must pass (the slow matrix
// products and attention are left out here; the engine tests above run them through whole forward passes).
const opsBin = join(dirname(dirname(addonPath())), process.platform === 'win32' ? 'backend-ops.exe' : 'backend-ops');
test('backend-ops on the reference backend', {
  skip: existsSync(library) && existsSync(opsBin) ? false : 'backend-ops or the reference backend is not built',
}, () => {
  const ops = 'get_rows,rms_norm,rope,swiglu,geglu,add,scale,add_bias,kv,window_scores,hadamard';
  const r = spawnSync(opsBin, ['--op', ops], {
    env: { ...process.env, FOLIO_GPU_LIBRARY: library },
    encoding: 'utf8',
    timeout: 300_000,
  });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /backend-ops: [1-9]\d* passed, 0 failed/);
});

// A device whose largest allocation is smaller than a weight (Vulkan on many GPUs: 1-4 GiB, less than an
// 8B model's F16 embedding) gets the weight in parts of whole rows, of whole experts for a stack of experts,
// and the products run part by part (forward/weights.cc, backend/gpu-backend.cc). The reference library
// refuses allocations above FOLIO_REFERENCE_GPU_MAX_ALLOC, so a run that passes split what it had to; its
// logits and tokens must be exactly those of the unsplit run (the same kernels over the same rows).
const stories = sharedModel('stories260K.gguf');
const runChild = (model: string, limit?: number) =>
  runOnGpu(library, model, limit ? { FOLIO_REFERENCE_GPU_MAX_ALLOC: String(limit) } : {});

test('weights larger than the device allocates at once run in parts, with the same results', {
  skip: existsSync(library) ? missing(stories) : `${library} is not built (npm run build:native)`,
  timeout: 600_000,
}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'folio-split-'));
  try {
    const moe = join(dir, 'qwen3moe.gguf');
    writeRandomModel(moe, { arch: 'qwen3moe', seed: 24 }); // 8 experts of 256 x 256 F32 (256 KiB) per stack
    for (const [model, limit] of [
      [stories, 65_536], // the token embedding, 512 x 64 F32 (128 KiB), in two parts
      [moe, 600_000], // each stack of experts (2 MiB) in parts of two experts
    ] as const) {
      const whole = runChild(model);
      const parts = runChild(model, limit);
      assert.equal(whole.status, 0, whole.stderr);
      assert.equal(parts.status, 0, parts.stderr);
      assert.equal(parts.out?.device.maxAllocationBytes, limit);
      assert.deepEqual(parts.out?.logits, whole.out?.logits, `${model}: the same logits at every position`);
      assert.deepEqual(parts.out?.tokens, whole.out?.tokens);
    }
    // Less than one expert's matrix: no split can serve it, and the message says what to do.
    const refused = runChild(moe, 100_000);
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /more than this GPU makes at once \(100000\): run the model on the CPU/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
