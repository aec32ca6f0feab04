// folio eval --suite niah on needle-llama (a retrieval model) with the shared dev set: the uncompressed
// engine retrieves as llama.cpp does, and question-agnostic Ada-SnapKV keeps retrieval at a budget where
// uniform SnapKV loses it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

import { missing, repoRoot, sharedModel } from './helpers/shared.ts';

const model = sharedModel('needle-llama.gguf');
const cases = sharedModel('needle-eval/dev.jsonl');

test('passkey retrieval at 256 tokens, question-agnostic: full, snapkv and ada-snapkv at 36 tokens per head', {
  skip: missing(model, cases),
}, () => {
  const r = spawnSync(
    process.execPath,
    [
      join(repoRoot, 'electron/cli/folio.mjs'),
      'eval',
      '--suite',
      'niah',
      '--model',
      model,
      '--cases',
      cases,
      '--tasks',
      'passkey',
      '--lengths',
      '256',
      '--methods',
      'full,snapkv,ada-snapkv',
      '--budgets',
      '36',
      '--ctx',
      '1024',
      '--json',
    ],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  const rows = JSON.parse(r.stdout).rows as { method: string; accuracy: number; cases: number; kept_ratio: number }[];
  const acc = Object.fromEntries(rows.map((x) => [x.method, x.accuracy]));
  assert.equal(rows[0].cases, 50);
  // The model's documented accuracy at 256 tokens with an uncompressed cache (../shared/models/README.md).
  assert.equal(acc.full, 0.94);
  assert.ok(rows.find((x) => x.method === 'ada-snapkv')!.kept_ratio < 0.2, 'less than a fifth of the cache is kept');
  // 36 tokens per head: the 32-token window plus 4; Ada gives them to the heads that need them.
  assert.ok(acc['ada-snapkv'] > acc.snapkv + 0.3, `ada-snapkv ${acc['ada-snapkv']} vs snapkv ${acc.snapkv}`);
});
