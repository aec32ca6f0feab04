// The engine's GPU path on machines without a GPU: the engine tests that run sessions (the llama.cpp
// oracle, Ada-KV sessions, the CUDA-vs-CPU checks of gpu.test.ts) run again with the GPU table served by
// libfolio-reference-gpu (native/tests/reference-gpu: each operation on the host, the plain way), so every
// session takes the GPU code path — device cache, forward pass, compression on the device, save/load
// across backends — and only the CUDA kernels themselves are left to a machine with a GPU.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { addonPath } from '../electron/engine/binding.ts';
import { repoRoot } from './helpers/shared.ts';

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
  const ops = 'get_rows,rms_norm,rope,swiglu,geglu,add,scale,add_bias,kv,window_scores,topk_per_head,top_tokens';
  const r = spawnSync(opsBin, ['--op', ops], {
    env: { ...process.env, FOLIO_GPU_LIBRARY: library },
    encoding: 'utf8',
    timeout: 300_000,
  });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /backend-ops: [1-9]\d* passed, 0 failed/);
});
