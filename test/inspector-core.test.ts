// The inspector's and the settings page's core, on a real app core (storage, the engine process,
// stories260K, a 512-token context): documents.keptPositions reads one KV head's kept entries from the saved
// cache and folds them onto the pages (counts that agree with the engine's statistics, spans inside the page
// text, the observation window apart), and refuses a damaged cache and a head that does not exist;
// settings.update refuses values the model cannot take, naming the field and the reason, and stores nothing;
// settings.reset brings the defaults back, keeping the model.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { EventPayload, KeptPositions, Settings } from '../electron/api/contract.ts';
import { readKeptPositions } from '../electron/engine/session-file.ts';
import type { AppCore } from '../electron/services/app-core.ts';
import { DEFAULT_SETTINGS } from '../electron/storage/settings.ts';
import { missing, repoRoot, sharedModel } from './helpers/shared.ts';
import { testCore } from './helpers/test-core.ts';

const model = sharedModel('stories260K.gguf');
const skip = missing(model);
const dir = mkdtempSync(join(tmpdir(), 'folio-inspector-core-'));
let core: AppCore;
let documentId = '';

const call = <T>(method: string, params: unknown) => core.dispatcher.dispatch(method, params) as Promise<T>;

before(async () => {
  if (skip) return;
  core = await testCore(join(dir, 'library'), model);
  // The document's own positions: its cache then says which token each entry came from (packed positions,
  // the default for a story that leaves stories260K's conversation too little room, do not).
  core.storage.settings.update({ compression: { ...core.storage.settings.get().compression, positions: 'own' } });
  const story = readFileSync(join(repoRoot, 'test/docs/lily-and-the-red-kite.txt'), 'utf8').slice(0, 1200);
  const path = join(dir, 'story.txt');
  writeFileSync(path, story);
  const done = new Promise<EventPayload<'task.done'>>((resolve) => {
    const off = core.bus.subscribe((event, payload) => {
      if (event === 'task.done' && (payload as EventPayload<'task.done'>).kind === 'import') {
        off();
        resolve(payload as EventPayload<'task.done'>);
      }
    });
  });
  documentId = (await core.documents.imports.import({ path })).documentId;
  const d = await done;
  assert.equal(d.ok, true, d.error ?? '');
});
after(async () => {
  await core?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('keptPositions: each head’s entries from the saved cache, as the statistics count them', { skip }, async () => {
  const doc = core.documents.library.get(documentId);
  const stats = doc.stats!;
  assert.ok(stats.compressed, 'the document was compressed');
  const slots = new Int32Array(stats.prefixTokens);
  for (let l = 0; l < stats.layers.length; l++)
    for (let h = 0; h < stats.layers[l].heads.length; h++) {
      const k = await call<KeptPositions>('documents.keptPositions', { documentId, layer: l, head: h });
      assert.equal(k.kept, stats.layers[l].heads[h].kept, `layer ${l} head ${h}: kept as the statistics say`);
      assert.equal(k.window, stats.window);
      assert.equal(k.inWindow, stats.window, 'every head keeps the whole observation window');
      const onPages = k.pages.reduce((a, p) => a + p.kept, 0);
      assert.equal(onPages + k.outsidePages, k.kept, 'every kept entry is on a page or around them');
      for (const p of k.pages) assert.ok(p.kept <= p.tokens, `page ${p.page}: ${p.kept} of ${p.tokens}`);
      for (const s of k.spans) {
        const text = doc.pageList.find((p) => p.page === s.page)!.text;
        assert.ok(s.start >= 0 && s.end <= text.length && s.start < s.end, `span ${s.start}-${s.end} inside the page`);
      }
      assert.ok(
        k.spans.some((s) => s.window) && k.spans.some((s) => !s.window),
        'the window and the chosen entries apart',
      );
      const { positions } = await readKeptPositions(core.storage.documents.require(documentId).kvPath!, l, h);
      for (const t of positions) slots[t]++;
    }
  // The per-token retention the engine reported is the same cache counted the other way.
  assert.deepEqual(Array.from(slots), stats.tokenRetention);
  // Heads differ (Ada-KV gives them different budgets, and they rank different tokens).
  const a = await call<KeptPositions>('documents.keptPositions', { documentId, layer: 0, head: 0 });
  const b = await call<KeptPositions>('documents.keptPositions', {
    documentId,
    layer: stats.layers.length - 1,
    head: 0,
  });
  assert.notDeepEqual(a.spans, b.spans);
});

test('keptPositions: a head that does not exist and a damaged cache are refused with the reason', {
  skip,
}, async () => {
  await assert.rejects(
    call('documents.keptPositions', { documentId, layer: 99, head: 0 }),
    (e: { code: string; message: string }) =>
      e.code === 'BAD_REQUEST' && /there is no layer 99, head 0/.test(e.message),
  );
  const kvPath = core.storage.documents.require(documentId).kvPath!;
  const saved = join(dir, 'saved.folio-kv');
  copyFileSync(kvPath, saved);
  try {
    const bytes = readFileSync(kvPath);
    // Cut inside the last head's entries.
    writeFileSync(kvPath, bytes.subarray(0, bytes.length - 100));
    const stats = core.documents.library.get(documentId).stats!;
    const last = { layer: stats.layers.length - 1, head: stats.layers[0].heads.length - 1 };
    await assert.rejects(
      call('documents.keptPositions', { documentId, ...last }),
      (e: { code: string; message: string }) => e.code === 'SESSION_FILE_CORRUPT' && /is damaged/.test(e.message),
    );
    writeFileSync(kvPath, Buffer.from('not a cache at all, just text'));
    await assert.rejects(
      call('documents.keptPositions', { documentId, layer: 0, head: 0 }),
      /is not a Folio session file/,
    );
  } finally {
    copyFileSync(saved, kvPath);
  }
  assert.ok((await call<KeptPositions>('documents.keptPositions', { documentId, layer: 0, head: 0 })).kept > 0);
});

test('settings.update refuses what the model cannot take, with the field and the reason; nothing is stored', {
  skip,
}, async () => {
  const before = await call<Settings>('settings.get', {});
  const refused = async (patch: object, field: string, reason: RegExp) =>
    assert.rejects(
      call('settings.update', patch),
      (e: { code: string; message: string; details: { field: string } }) => {
        assert.equal(e.code, 'INVALID_SETTING');
        assert.equal(e.details.field, field);
        assert.match(e.message, reason);
        return true;
      },
    );
  // stories260K is trained on 512 positions.
  await refused({ nCtx: 4096 }, 'nCtx', /a context of 4096 tokens exceeds the model's trained context of 512/);
  await refused(
    { compression: { window: 600 } },
    'compression.window',
    /observation window of 600 tokens .* context of 512/,
  );
  await refused(
    { nCtx: 256, sampling: { maxTokens: 300 } },
    'sampling.maxTokens',
    /answer of 300 tokens cannot fit a context of 256/,
  );
  assert.deepEqual(await call<Settings>('settings.get', {}), before, 'nothing was stored');
  // What the model can take is saved; a value the patch does not touch is not held against it.
  const ok = await call<Settings>('settings.update', { nCtx: 512, theme: 'dark' });
  assert.equal(ok.nCtx, 512);
});

test('settings.reset: the defaults again, the model kept', { skip }, async () => {
  await call('settings.update', {
    sampling: { temperature: 0.1 },
    compression: { beta: 9, alpha: 0.5 },
    theme: 'dark',
  });
  const modelId = (await call<Settings>('settings.get', {})).modelId;
  const changed: Settings[] = [];
  const off = core.bus.subscribe((e, p) => e === 'settings.changed' && changed.push(p as Settings));
  const s = await call<Settings>('settings.reset', {});
  off();
  assert.equal(s.modelId, modelId);
  assert.deepEqual({ ...s, modelId: null }, { ...DEFAULT_SETTINGS, modelFolders: [] });
  assert.equal(s.compression.beta, undefined, 'a value the defaults leave out is gone');
  assert.equal(changed.length, 1, 'announced');
});
