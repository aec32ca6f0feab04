// libfolio-vulkan (native/vulkan), the GPU table on Vulkan compute: the op suite (backend-ops) runs every
// operation against the CPU on whatever Vulkan device the machine has (Mesa's lavapipe in CI: correctness,
// not speed), and the engine's loader takes the table. This file builds nothing: it skips, saying why,
// where the library or backend-ops is not built or no Vulkan device exists.
//
// CI's budget (a 2-core machine, the whole suite under 30 minutes) allows this file about three minutes on
// lavapipe, so the op suite runs a reduced set that still reaches every op of the table:
// - backend-ops --quick runs every op with all of its cases except matmul's, which keeps each weight type
//   through both kernels (matrix-vector for n = 1, tiled for n = 17 and 130) at every row count and the
//   awkward widths, and drops the 4096×4096 matrices (the same kernels at a size only slow to emulate);
//   the `ops` list below asserts that each op of the table printed a passing line;
// - end to end, every "GPU:" check of gpu.test.ts, which catch what the op suite cannot (the forward pass's
//   wiring, the flat cache, selection through the table, the session format): logits and greedy tokens
//   equal to the CPU's, each method's kept entries (window scores, per-head top-k, KV compaction), save/load
//   across backends, fork and truncate;
// - the engine choosing Vulkan by name and `auto` leaving a software device to the CPU, `folio bench
//   --backend vulkan`, and weights split below the device's largest allocation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { addonPath } from '../electron/engine/binding.ts';
import { runOnGpu } from './helpers/gpu-run.ts';
import { missing, repoRoot, sharedModel } from './helpers/shared.ts';

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
  'hadamard',
];

/** Why a Vulkan test did not run on a machine without a device, and what gives one. */
const NO_DEVICE = "no usable Vulkan device (Debian's mesa-vulkan-drivers package has a software one)";

function notBuilt(): string | false {
  if (!library)
    return `libfolio-vulkan is not built (no Vulkan headers or glslc when native/ was built: Debian's libvulkan-dev and glslc packages)`;
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
    t.skip(`${NO_DEVICE}: ${out.split('\n')[0].slice('backend-ops: SKIP:'.length).trim()}`);
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
    t.skip(`${NO_DEVICE}: ${line}`);
    return;
  }
  assert.match(line, /^gpu-status: available=1 backend=vulkan reason=.*\(.*GiB, Vulkan 1\.\d+, driver .*\)$/);
  assert.doesNotMatch(line, /partial table/);
});

// The end-to-end check of the GPU path on Vulkan: every one of gpu.test.ts's stories260K "GPU:" checks with
// the table served by libfolio-vulkan (logits and greedy tokens equal to the CPU backend's, the citations'
// attention, decode against batched prefill, each method's kept entries equal to the CPU's, save/load across
// backends, fork and truncate): about 100 s on lavapipe.
const e2ePattern = '^GPU: ';
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
    t.skip(`${NO_DEVICE}: ${status.trim()}`);
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
  // Every "GPU:" check ran (none skipped: the Vulkan device is usable) and passed.
  const ran = [...out.matchAll(/^\s*ok \d+ - GPU: (.*)$/gm)].map((m) => m[1]);
  assert.ok(ran.length >= 10, `the GPU: checks ran (${ran.length})`);
  for (const name of ran) assert.doesNotMatch(name, /# SKIP/, `GPU: ${name}`);
  for (const name of ['setup', 'logits at every position', 'ada-snapkv keeps', 'streaming keeps', 'sessions saved'])
    assert.ok(
      ran.some((r) => r.startsWith(name)),
      `GPU: ${name}… ran and passed`,
    );
});

// Chosen by name, without FOLIO_GPU_LIBRARY: the engine finds libfolio-vulkan beside itself. `auto` leaves a
// software device (lavapipe) and an integrated GPU to the CPU and says so; `--backend vulkan` runs on it,
// with the CPU's greedy tokens; `folio bench --backend vulkan` runs and marks lavapipe's numbers.
const stories = sharedModel('stories260K.gguf');
/** folio with --json, the GPU as the engine finds it by itself. */
const folioRun = (args: string[]) => {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.FOLIO_GPU_LIBRARY;
  delete env.FOLIO_GPU;
  delete env.FOLIO_GPU_PARTIAL;
  return spawnSync(process.execPath, ['electron/cli/folio.mjs', ...args, '--json'], {
    cwd: repoRoot,
    env,
    encoding: 'utf8',
    timeout: 600_000,
  });
};
const folio = (args: string[]) => {
  const r = folioRun(args);
  assert.equal(r.status, 0, `folio ${args.join(' ')}: ${r.stdout}\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '');
};
test('the engine picks Vulkan by name (--backend vulkan), auto by device type, and bench runs on it', {
  skip:
    notBuilt() ||
    (existsSync(join(dirname(addonPath()), name)) ? false : `${name} is not beside the addon`) ||
    missing(stories),
  timeout: 900_000,
}, (t) => {
  const info = folio(['info', '--model', stories]);
  const vulkan = spawnSync(statusBin, [], {
    env: { ...process.env, FOLIO_GPU_LIBRARY: library },
    encoding: 'utf8',
  }).stdout;
  if (!/available=1/.test(vulkan)) {
    t.skip(`${NO_DEVICE}: ${vulkan.trim()}`);
    return;
  }
  const gpuDevice = /llvmpipe|lavapipe|SwiftShader/i.test(vulkan) ? 'software' : 'gpu';
  if (gpuDevice === 'software') {
    assert.equal(info.backend, 'cpu');
    assert.match(
      info.backendReason,
      /is a software device on the CPU, which auto leaves to the CPU \(backend 'vulkan' uses it\)/,
    );
  }
  const args = ['--model', stories, '--prompt', 'Once upon a time', '--n', '24', '--temp', '0'];
  const onCpu = folio(['generate', ...args, '--backend', 'cpu']);
  const onVulkan = folio(['generate', ...args, '--backend', 'vulkan']);
  assert.deepEqual(onVulkan.tokens, onCpu.tokens);
  const bench = folio([
    'bench',
    '--model',
    stories,
    '--backend',
    'vulkan',
    '--prompt-tokens',
    '32',
    '--gen-tokens',
    '8',
    '--repeats',
    '1',
  ]);
  assert.equal(bench.backend, 'vulkan');
  assert.ok(bench.device && bench.prefill_tokens_per_s > 0 && bench.decode_tokens_per_s > 0);
  assert.equal(bench.software_device, gpuDevice === 'software');
  // A quantized cache by name on the device (gpu.test.ts's check compares it with the CPU's).
  const quantized = folio(['generate', ...args, '--backend', 'vulkan', '--kv-type', 'q4_0']);
  assert.equal(quantized.tokens.length, 24);
});

// A weight larger than the device allocates at once (FOLIO_VULKAN_MAX_ALLOC lowers lavapipe's 2 GiB) runs in
// parts with exactly the unsplit results (gpu-reference.test.ts tests the rule on the reference library).
test('Vulkan: weights larger than the largest allocation run in parts', {
  skip: notBuilt() || missing(stories),
  timeout: 600_000,
}, (t) => {
  const run = (limit?: number) => runOnGpu(library!, stories, limit ? { FOLIO_VULKAN_MAX_ALLOC: String(limit) } : {});
  const whole = run();
  if (whole.status !== 0 && /no GPU/.test(whole.stderr)) {
    t.skip(`${NO_DEVICE}: ${whole.stderr.trim().split('\n')[0]}`);
    return;
  }
  // 100,000 bytes: less than the token embedding (512 x 64 F32, 128 KiB), more than the attention's scratch
  const parts = run(100_000);
  assert.equal(whole.status, 0, whole.stderr);
  assert.equal(parts.status, 0, parts.stderr);
  assert.ok(parts.out && parts.out.device.maxAllocationBytes < 131_072);
  assert.deepEqual(parts.out?.logits, whole.out?.logits);
  assert.deepEqual(parts.out?.tokens, whole.out?.tokens);
});
