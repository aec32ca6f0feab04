// libfolio-vulkan (native/vulkan), the GPU table on Vulkan compute: the op suite (backend-ops) runs every
// operation against the CPU on whatever Vulkan device the machine has (Mesa's lavapipe in CI: correctness,
// not speed), and the engine's loader takes the table. This file builds nothing: it skips, saying why,
// where the library or backend-ops is not built or no Vulkan device exists.
//
// CI's budget (a 2-core machine, the whole suite under 30 minutes) allows this file about 90 s on lavapipe,
// so it runs a reduced set that still reaches every op of the table:
// - backend-ops --quick runs every op with all of its cases except matmul's, which keeps each weight type
//   through both kernels (matrix-vector for n = 1, tiled for n = 17 and 130) at every row count and the
//   awkward widths, and drops the 4096×4096 matrices (the same kernels at a size only slow to emulate);
//   the `ops` list below asserts that each op of the table printed a passing line;
// - end to end, the checks that catch what the op suite cannot (the forward pass's wiring, the flat cache,
//   selection through the table, the session format): logits and greedy tokens equal to the CPU's, one
//   compression method's kept entries (ada-snapkv: window scores, per-head top-k, KV compaction), and
//   save/load across backends. The other GPU: checks of gpu.test.ts run on the reference library
//   (gpu-reference.test.ts) and on CUDA machines.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { addonPath } from '../electron/engine/binding.ts';
import { repoRoot } from './helpers/shared.ts';

const name =
  process.platform === 'win32'
    ? 'folio-vulkan.dll'
    : process.platform === 'darwin'
      ? 'libfolio-vulkan.dylib'
      : 'libfolio-vulkan.so';
// Beside the addon (npm run build:native), or in a plain CMake build of native/ into native/build.
const library = [join(dirname(addonPath()), name), join(repoRoot, 'native', 'build', name)].find((p) => existsSync(p));
const opsBin = join(dirname(dirname(addonPath())), process.platform === 'win32' ? 'backend-ops.exe' : 'backend-ops');

// Every operation of the table (backend-ops' names; kv: append and compaction).
const ops = [
  'matmul',
  'get_rows',
  'rms_norm',
  'rope',
  'swiglu',
  'geglu',
  'add',
  'scale',
  'add_bias',
  'kv',
  'attention',
  'window_scores',
  'topk_per_head',
  'top_tokens',
];

function notBuilt(): string | false {
  if (!library) return `libfolio-vulkan is not built (no Vulkan headers or glslc when native/ was built)`;
  if (!existsSync(opsBin)) return `${opsBin} is not built (npm run build:native)`;
  return false;
}

test('backend-ops: every operation of libfolio-vulkan against the CPU', {
  skip: notBuilt(),
  timeout: 1_800_000,
}, (t) => {
  const r = spawnSync(opsBin, ['--backend', 'gpu', '--quick'], {
    env: { ...process.env, FOLIO_GPU_LIBRARY: library },
    encoding: 'utf8',
    timeout: 1_800_000,
  });
  const out = r.stdout ?? '';
  if (r.status === 0 && out.startsWith('backend-ops: SKIP:')) {
    t.skip(`no usable Vulkan device: ${out.split('\n')[0].slice('backend-ops: SKIP:'.length).trim()}`);
    return;
  }
  assert.equal(r.status, 0, `backend-ops failed (status ${r.status}, signal ${r.signal}):\n${out}\n${r.stderr}`);
  assert.match(out, /^backend-ops: vulkan on /m, 'it ran on the Vulkan library');
  assert.match(out, /backend-ops: [1-9]\d* passed, 0 failed/);
  assert.doesNotMatch(out, /is not supported by this GPU backend/, 'the table is complete');
  for (const op of ops) {
    const first = op === 'kv' ? 'kv_append' : op;
    assert.match(out, new RegExp(`^${first}\\s.*\\sOK$`, 'm'), `${op} ran and passed`);
  }
});

const statusBin = join(dirname(dirname(addonPath())), process.platform === 'win32' ? 'gpu-status.exe' : 'gpu-status');
test('the engine takes the Vulkan table for its forward pass, and names the device', {
  skip: notBuilt() || (existsSync(statusBin) ? false : `${statusBin} is not built (npm run build:native)`),
}, (t) => {
  const env: NodeJS.ProcessEnv = { ...process.env, FOLIO_GPU_LIBRARY: library };
  delete env.FOLIO_GPU_PARTIAL;
  delete env.FOLIO_GPU;
  const r = spawnSync(statusBin, [], { env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  const line = r.stdout.trim();
  if (/not usable/.test(line)) {
    t.skip(`no usable Vulkan device: ${line}`);
    return;
  }
  assert.match(line, /^gpu-status: available=1 backend=vulkan reason=.*\(.*GiB, Vulkan 1\.\d+, driver .*\)$/);
  assert.doesNotMatch(line, /partial table/);
});

// The end-to-end check of the GPU path on Vulkan: gpu.test.ts's stories260K checks with the table served
// by libfolio-vulkan, the subset named at the top (setup; logits and greedy tokens equal to the CPU
// backend's; ada-snapkv's kept entries; save/load across backends).
const e2ePattern = '^GPU: (setup|logits at every position|ada-snapkv keeps|sessions saved)';
test('the GPU path end to end on Vulkan (stories260K against the CPU backend)', {
  skip:
    notBuilt() ||
    (existsSync(addonPath()) ? false : `${addonPath()} is not built (npm run build:native)`) ||
    (existsSync(statusBin) ? false : `${statusBin} is not built (npm run build:native)`),
  timeout: 1_800_000,
}, (t) => {
  const env: NodeJS.ProcessEnv = { ...process.env, FOLIO_GPU_LIBRARY: library };
  delete env.FOLIO_GPU_PARTIAL;
  delete env.FOLIO_GPU;
  delete env.NODE_TEST_CONTEXT; // a runner of its own, printing its report (not feeding this one's)
  const status = spawnSync(statusBin, [], { env, encoding: 'utf8', timeout: 60_000 }).stdout ?? '';
  if (!status.startsWith('gpu-status: available=1')) {
    t.skip(`no usable Vulkan device: ${status.trim()}`);
    return;
  }
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-reporter=tap', `--test-name-pattern=${e2ePattern}`, 'test/gpu.test.ts'],
    { cwd: repoRoot, env, encoding: 'utf8', timeout: 1_800_000 },
  );
  const out = `${r.stdout}\n${r.stderr}`;
  const count = (k: string) => Number(new RegExp(`^# ${k} (\\d+)`, 'm').exec(out)?.[1] ?? NaN);
  assert.equal(r.status, 0, `the GPU path failed on Vulkan:\n${out.slice(-6000)}`);
  assert.equal(count('fail'), 0);
  // The others are reported as skipped ("does not match pattern"); these four must have run and passed.
  for (const name of ['setup', 'logits at every position', 'ada-snapkv keeps', 'sessions saved'])
    assert.match(out, new RegExp(`^\\s*ok \\d+ - GPU: ${name}(?!.*# SKIP).*$`, 'm'), `GPU: ${name}… ran and passed`);
});
