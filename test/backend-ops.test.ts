// Every operation of the backend interface (native/tests/backend-ops.cc) on random inputs, by NMSE or
// exactly, against slow references: the CPU backend always, the GPU backend (libfolio-cuda) through the
// same interface where one is usable. Skipped where the executable is not built.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { addonPath } from '../electron/engine/binding.ts';

const buildDir = dirname(dirname(addonPath())); // native/build (the addon is in native/build/Release)
const bin = join(buildDir, process.platform === 'win32' ? 'backend-ops.exe' : 'backend-ops');
// libfolio-cuda is built beside the addon; the executable looks there too, this only makes it explicit.
const library = join(dirname(addonPath()), process.platform === 'win32' ? 'folio-cuda.dll' : 'libfolio-cuda.so');

test('backend-ops: every GPU operation against the CPU', {
  skip: existsSync(bin) ? false : `${bin} is not built (npm run build:native)`,
}, (t) => {
  const env = { ...process.env };
  if (!env.FOLIO_GPU_LIBRARY && existsSync(library)) env.FOLIO_GPU_LIBRARY = library;
  const r = spawnSync(bin, [], { encoding: 'utf8', env, timeout: 600_000 });
  const out = r.stdout ?? '';
  if (r.status === 0 && out.startsWith('backend-ops: SKIP:')) {
    t.skip(out.split('\n')[0].slice('backend-ops: SKIP:'.length).trim());
    return;
  }
  assert.equal(
    r.status,
    0,
    `backend-ops failed (status ${r.status}${r.signal ? `, signal ${r.signal}` : ''}):\n${r.stdout}\n${r.stderr}`,
  );
});
