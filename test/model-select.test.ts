// Choosing a model checks the settings against it, as changing a setting checks it against the model: a
// context set for needle-llama (1,024 positions) is refused for stories260K (512) with the field, the reason
// and what to do, and nothing changes; with the setting fixed, the model is chosen.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { EngineStatus, ModelEntry, Settings } from '../electron/api/contract.ts';
import type { AppCore } from '../electron/services/app-core.ts';
import { missing, sharedModel } from './helpers/shared.ts';
import { testCore } from './helpers/test-core.ts';

const needle = sharedModel('needle-llama.gguf');
const stories = sharedModel('stories260K.gguf');
const skip = missing(needle) || missing(stories);
const dir = mkdtempSync(join(tmpdir(), 'folio-model-select-'));
let core: AppCore;

const call = <T>(method: string, params: unknown) => core.dispatcher.dispatch(method, params) as Promise<T>;

before(async () => {
  if (skip) return;
  core = await testCore(join(dir, 'library'), needle);
});
after(async () => {
  await core?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a model the settings cannot work with is refused, naming the setting; fixed, it is chosen', {
  skip,
}, async () => {
  await call('settings.update', { nCtx: 1024 });
  const before = await call<Settings>('settings.get', {});
  const small = await call<ModelEntry>('models.add', { path: stories });
  assert.equal(small.contextLength, 512);
  await assert.rejects(
    call('models.select', { modelId: small.id }),
    (e: { code: string; message: string; details: { field: string } }) => {
      assert.equal(e.code, 'INVALID_SETTING');
      assert.equal(e.details.field, 'nCtx');
      assert.match(e.message, /^stories260K cannot be used with the current settings \(nCtx: a context of 1024 tokens/);
      assert.match(e.message, /change it in Settings, or reset the settings to their defaults/);
      return true;
    },
  );
  assert.deepEqual(await call<Settings>('settings.get', {}), before, 'the model and settings stay as they were');

  await call('settings.update', { nCtx: null });
  const status = await call<EngineStatus>('models.select', { modelId: small.id });
  assert.equal((await call<Settings>('settings.get', {})).modelId, small.id);
  assert.ok(status);
});

test('settings the engine would refuse are refused when set, naming the field (issue 38 item 5); nothing changes', {
  skip,
}, async () => {
  const before = await call<Settings>('settings.get', {});
  for (const [patch, field] of [
    [{ sampling: { topK: 2 ** 31 } }, 'sampling.topK'],
    [{ sampling: { topP: 5e-324 } }, 'sampling.topP'],
    [{ sampling: { repeatPenalty: 5e-324 } }, 'sampling.repeatPenalty'],
    [{ sampling: { temperature: 11 } }, 'sampling.temperature'],
    [{ compression: { kernel: 2047 } }, 'compression.kernel'],
    [{ compression: { window: 2 ** 21 } }, 'compression.window'],
  ] as const)
    await assert.rejects(call('settings.update', patch), (e: { code: string; message: string }) => {
      assert.equal(e.code, 'BAD_REQUEST', JSON.stringify(patch));
      assert.match(e.message, new RegExp(`^settings\\.update: ${field.replace('.', '\\.')}: `), e.message);
      return true;
    });
  await assert.rejects(
    call('settings.update', { modelId: 'no-such-model' }),
    (e: { code: string; message: string; details: { field: string } }) => {
      assert.equal(e.code, 'INVALID_SETTING');
      assert.equal(e.details.field, 'modelId');
      assert.match(e.message, /no model has the id 'no-such-model'/);
      return true;
    },
  );
  assert.deepEqual(await call<Settings>('settings.get', {}), before, 'nothing changed');
  // The ends of the engine's ranges are settings it takes: an answer is written with them.
  await call('settings.update', { sampling: { topK: 2 ** 30, topP: 1e-9, repeatPenalty: 1e-3, maxTokens: 4 } });
  const { modelId } = await call<Settings>('settings.get', {});
  const r = await core.openai.complete(
    { model: modelId!, messages: [{ role: 'user', content: 'Once upon a time' }] },
    () => {},
    new AbortController().signal,
  );
  assert.ok(r.completionTokens > 0, 'the engine answered with them');
  await call('settings.update', { sampling: before.sampling });
});
