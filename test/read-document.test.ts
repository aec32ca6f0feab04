// One way of reading a document (issue 39): the app, `folio chat` and `folio compress` all read through
// services/read-document.ts, so the same file read by the app and by `folio compress --json`, with the same
// settings, keeps the same entries: the same prefix, the same budget, the same count per (layer, KV head) and
// the same retention of every token.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { AppCore } from '../electron/services/app-core.ts';
import { missing, repoRoot, sharedModel } from './helpers/shared.ts';
import { taskDone, testCore } from './helpers/test-core.ts';

const model = sharedModel('stories260K.gguf');
const skip = missing(model);
const doc = join(repoRoot, 'test/docs/lily-and-the-red-kite.txt');
let dir: string;
let core: AppCore;

before(async () => {
  if (skip) return;
  dir = mkdtempSync(join(tmpdir(), 'folio-read-document-'));
  core = await testCore(join(dir, 'library'), model);
});
after(async () => {
  await core?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('the app and `folio compress --json` read the same file into the same kept entries', { skip }, async () => {
  // The app's defaults but for the method and budget, which the command line is given too.
  await core.dispatcher.dispatch('settings.update', { compression: { method: 'ada-snapkv', budget: 0.3 } });
  const { documentId, taskId } = await core.documents.imports.import({ path: doc });
  assert.equal((await taskDone(core, taskId)).ok, true);
  const app = core.storage.stats.get(documentId)!;
  assert.ok(app.compressed, 'something was compressed');

  const r = spawnSync(
    process.execPath,
    [
      join(repoRoot, 'electron/cli/folio.mjs'),
      'compress',
      '--model',
      model,
      '--doc',
      doc,
      '--method',
      'ada-snapkv',
      '--budget',
      '0.3',
      '--json',
    ],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  const cli = JSON.parse(r.stdout);

  assert.equal(cli.prefixTokens, app.prefixTokens, 'the same prefix: system prompt, chat format and pages');
  assert.equal(cli.budget, app.budget);
  assert.equal(cli.chunks, app.chunks);
  assert.deepEqual(
    cli.layers.map((l: { heads: { kept: number }[] }) => l.heads.map((h) => h.kept)),
    app.layers.map((l) => l.heads.map((h) => h.kept)),
    'the same entries kept per (layer, KV head)',
  );
  assert.deepEqual(cli.tokenRetention, Array.from(app.tokenRetention), 'the same tokens kept');
});
