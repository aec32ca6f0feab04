// The CPU's copies of the weights (model/weights.h: repack_for_cpu) are in huge pages where Linux gives
// them, also the matrices kept in the file's layout (F16 here), and they compute exactly what the file's
// own 4 KiB pages do (FOLIO_HUGE_PAGES=0 keeps F16 matrices in the file).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { writeRandomModel } from './helpers/random-model.ts';
import { repoRoot } from './helpers/shared.ts';

const THP = '/sys/kernel/mm/transparent_hugepage/enabled';
const thpOff =
  process.platform !== 'linux'
    ? 'huge pages are asked for on Linux only'
    : !existsSync(THP) || readFileSync(THP, 'utf8').includes('[never]')
      ? 'transparent huge pages are turned off on this machine'
      : false;

const dir = mkdtempSync(join(tmpdir(), 'folio-pages-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

function run(model: string, hugePages: boolean): { anonHugeBytes: number; logits: number[] } {
  const env: NodeJS.ProcessEnv = { ...process.env, FOLIO_HUGE_PAGES: hugePages ? '1' : '0' };
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', join(repoRoot, 'test/helpers/weight-pages-child.ts'), model],
    {
      encoding: 'utf8',
      cwd: repoRoot,
      env,
    },
  );
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test('F16 matrices are copied into huge pages and give the same logits as the file pages', { skip: thpOff }, () => {
  // One layer: four 1024 × 1024 attention matrices (2 MiB each in F16) and three 1024 × 4096 feed-forward
  // ones (8 MiB each), 32 MiB of matrices.
  const model = join(dir, 'f16-wide.gguf');
  writeRandomModel(model, {
    arch: 'llama',
    type: 'F16',
    nEmbd: 1024,
    nHead: 8,
    nHeadKv: 8,
    nFf: 4096,
    nLayer: 1,
    seed: 3,
  });
  const matrixBytes = (4 * 1024 * 1024 + 3 * 1024 * 4096) * 2;
  const huge = run(model, true);
  const small = run(model, false);
  assert.deepEqual(huge.logits, small.logits, 'the copies compute what the file does, bit for bit');
  // The OS may refuse a few huge pages (fragmented memory); most must come.
  const gained = huge.anonHugeBytes - small.anonHugeBytes;
  assert.ok(
    gained >= 0.5 * matrixBytes,
    `huge pages grew by ${(gained / 2 ** 20).toFixed(1)} MiB for ${(matrixBytes / 2 ** 20).toFixed(0)} MiB of matrices`,
  );
});
