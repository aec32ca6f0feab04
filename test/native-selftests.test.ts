// The engine's standalone C++ self-tests (native/tests/*-selftest.cc, and .cu where nvcc is), built beside the addon by
// `npm install`: each compares a family of fast kernels with its reference on random inputs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { addonPath } from '../electron/engine/binding.ts';
import { repoRoot } from './helpers/shared.ts';

const buildDir = dirname(dirname(addonPath())); // native/build (the addon is in native/build/Release)
const selftests = readdirSync(join(repoRoot, 'native', 'tests'))
  .filter((f) => f.endsWith('-selftest.cc') || f.endsWith('-selftest.cu')) // .cu: built where nvcc is
  .map((f) => f.replace(/\.(cc|cu)$/, ''));

for (const name of selftests) {
  const bin = join(buildDir, process.platform === 'win32' ? `${name}.exe` : name);
  test(name, { skip: existsSync(bin) ? false : `${bin} is not built (npm run build:native)` }, () => {
    const r = spawnSync(bin, [], { encoding: 'utf8', timeout: 600_000 });
    assert.equal(r.status, 0, `${name} failed:\n${r.stdout}\n${r.stderr}`);
  });
}
