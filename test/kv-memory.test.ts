// Compression frees real memory: the resident memory of a process holding a compressed session is lower
// than that of one holding the full cache by at least 80% of kvBytesFull − kvBytesKept, and the
// compressed prefill's peak stays far below the full cache (one layer at a time).
// A random model with a KV cache large next to its weights (128 layers, 2 KV heads of width 256, F32
// entries: 2 KiB per token and layer, 128 MiB for 256 tokens) so the difference stands out of the noise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { writeRandomModel } from './helpers/random-model.ts';
import { repoRoot } from './helpers/shared.ts';

const dir = mkdtempSync(join(tmpdir(), 'folio-mem-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

interface ChildResult {
  before: number;
  after: number;
  peak: number;
  kvBytesFull?: number;
  kvBytesKept?: number;
  memory: { bytesUsed: number };
}

function run(model: string, mode: 'full' | 'compressed', tokens: number): ChildResult {
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', join(repoRoot, 'test/helpers/kv-memory-child.ts'), model, mode, String(tokens)],
    {
      encoding: 'utf8',
      cwd: repoRoot,
    },
  );
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test('resident memory after compression drops by at least 80% of the bytes compression removed', {
  skip: process.platform !== 'linux' && 'resident memory is measured on Linux',
}, () => {
  const model = join(dir, 'wide-kv.gguf');
  writeRandomModel(model, {
    arch: 'llama',
    type: 'F32',
    nEmbd: 64,
    nHead: 2,
    nHeadKv: 2,
    headDim: 256,
    nFf: 64,
    nLayer: 128,
    nCtx: 1024,
    seed: 1,
  });
  const full = run(model, 'full', 256);
  const comp = run(model, 'compressed', 256);
  const removed = comp.kvBytesFull! - comp.kvBytesKept!;
  assert.equal(full.memory.bytesUsed, comp.kvBytesFull, 'the full session holds kvBytesFull');
  assert.equal(comp.memory.bytesUsed, comp.kvBytesKept, 'the compressed session holds kvBytesKept');
  assert.ok(removed > 100 * 2 ** 20, `compression removed ${removed} bytes`);
  const saved = full.after - comp.after;
  assert.ok(
    saved >= 0.8 * removed,
    `resident memory differs by ${(saved / 2 ** 20).toFixed(1)} MiB; compression removed ${(removed / 2 ** 20).toFixed(1)} MiB`,
  );
  // Layer by layer: the compressed prefill never held the whole model's full cache at once (the peak
  // is sampled every millisecond while the prefill runs; the full prefill's is checked as a control).
  assert.ok(full.peak - full.before > 0.5 * comp.kvBytesFull!, 'the sampling sees the full prefill grow');
  const peakGrowth = comp.peak - comp.before;
  assert.ok(
    peakGrowth < 0.25 * comp.kvBytesFull!,
    `peak grew by ${(peakGrowth / 2 ** 20).toFixed(1)} MiB during the compressed prefill`,
  );
});
