// One default context length (electron/api/contract.ts DEFAULT_CONTEXT_TOKENS): a session made without one
// gets the model's own context, at most that many tokens, whether the engine decides (binding.ts, as the
// CLI's commands make sessions) or EngineManager does (the app and `folio chat`).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { DEFAULT_CONTEXT_TOKENS } from '../electron/api/contract.ts';
import { EventBus } from '../electron/api/dispatcher.ts';
import { EngineManager } from '../electron/services/engine-manager.ts';
import { loadAddon } from '../electron/engine/binding.ts';
import { EngineClient } from '../electron/engine/client.ts';
import { readGguf } from './helpers/gguf-reader.ts';
import { ValueType, arr, writeGguf, type MetaValue } from './helpers/gguf-writer.ts';
import { missing, sharedModel } from './helpers/shared.ts';

const stories = sharedModel('stories260K.gguf'); // a 512-token context
const skip = missing(stories);
const dir = mkdtempSync(join(tmpdir(), 'folio-default-context-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** stories260K claiming a context of `n` tokens (the weights do not depend on it). */
function withContextLength(n: number): string {
  const g = readGguf(stories);
  const metadata: [string, MetaValue][] = [...g.metadata].map(([key, value]) => {
    const t = g.types.get(key)!;
    if (key === 'llama.context_length') return [key, { type: ValueType.UINT32, value: n }];
    return [
      key,
      t.type === ValueType.ARRAY
        ? arr(t.elementType!, value as (number | bigint | boolean | string)[])
        : { type: t.type as Exclude<ValueType, ValueType.ARRAY>, value: value as number | bigint | boolean | string },
    ];
  });
  const path = join(dir, `stories260K-ctx${n}.gguf`);
  writeGguf(path, {
    alignment: g.alignment,
    metadata,
    tensors: g.tensors.map((t) => ({ name: t.name, dims: t.dims, type: t.type, data: t.data })),
  });
  return path;
}

async function engineSession(path: string): Promise<{ options: number; session: number }> {
  const client = new EngineClient();
  try {
    const engine = new EngineManager(client, new EventBus(), () => ({
      nCtx: null,
      threads: null,
      kvType: 'f16',
      kvTypeV: null,
      kvRotate: false,
      backend: 'auto',
    }));
    const model = await engine.ensureModel(path, path);
    const h = await engine.createSession(model);
    return { options: engine.sessionOptions().nCtx, session: h.nCtx };
  } finally {
    await client.stop();
  }
}

test('a model with a longer context than the default: sessions get DEFAULT_CONTEXT_TOKENS, in the engine and in the app', {
  skip,
}, async () => {
  const long = withContextLength(4 * DEFAULT_CONTEXT_TOKENS);
  assert.deepEqual(await engineSession(long), { options: DEFAULT_CONTEXT_TOKENS, session: DEFAULT_CONTEXT_TOKENS });
  const model = await loadAddon().loadModel(long);
  const s = model.createSession({ nThreads: 1 });
  assert.equal(s.nCtx, DEFAULT_CONTEXT_TOKENS, "the engine's own default (native: a session created without nCtx)");
  s.dispose();
  model.dispose();
});

test('a model with a shorter context: its own', { skip }, async () => {
  const model = await loadAddon().loadModel(stories);
  const s = model.createSession({ nThreads: 1 });
  assert.equal(s.nCtx, 512);
  s.dispose();
  model.dispose();
  assert.deepEqual(await engineSession(stories), { options: 512, session: 512 });
});
