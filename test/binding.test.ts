// The engine's JS binding: async work off the JS thread, progress and token streams, cancellation, the
// one-operation-at-a-time rule, sampling, and errors as exceptions with codes for every kind of bad input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadAddon, type EngineError, type Model } from '../electron/engine/binding.ts';
import { buildGguf, type MetaValue, type TensorSpec, type Typed } from './helpers/gguf-writer.ts';
import { parseGguf } from './helpers/gguf-reader.ts';
import { buildRandomModel, writeRandomModel } from './helpers/random-model.ts';
import { missing, sharedModel } from './helpers/shared.ts';

const addon = loadAddon();
const dir = mkdtempSync(join(tmpdir(), 'folio-binding-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

const randomPath = join(dir, 'random.gguf');
writeRandomModel(randomPath, { arch: 'llama', type: 'Q8_0', seed: 11, nCtx: 256 });
const stories = sharedModel('stories260K.gguf');

async function rejects(p: Promise<unknown>, code: string, message?: RegExp) {
  await assert.rejects(p, (e: EngineError) => {
    assert.equal(e.code, code, `${e.code}: ${e.message}`);
    if (message) assert.match(e.message, message);
    return true;
  });
}

/** Rewrites a GGUF file: metadata and tensors pass through `edit` (the reader keeps every value's type). */
function rewrite(bytes: Uint8Array, edit: (meta: [string, MetaValue][], tensors: TensorSpec[]) => void): string {
  const f = parseGguf(bytes);
  const meta: [string, MetaValue][] = [...f.metadata.entries()].map(([k, v]) => {
    const t = f.types.get(k)!;
    return [
      k,
      (t.type === 9 ? { type: 9, elementType: t.elementType, value: v } : { type: t.type, value: v }) as Typed,
    ];
  });
  const tensors: TensorSpec[] = f.tensors.map((t) => ({ name: t.name, dims: t.dims, type: t.type, data: t.data }));
  edit(meta, tensors);
  const p = join(dir, `edited-${Math.random().toString(36).slice(2)}.gguf`);
  writeFileSync(p, buildGguf({ metadata: meta, tensors }));
  return p;
}

test('bad model files are refused with a code that says what is wrong', async () => {
  await rejects(addon.loadModel(join(dir, 'none.gguf')), 'FILE_OPEN', /none\.gguf/);
  const { bytes } = buildRandomModel({ seed: 1 });
  await rejects(
    addon.loadModel(
      rewrite(bytes, (m) => {
        m.find((e) => e[0] === 'general.architecture')![1] = 'rwkv6';
      }),
    ),
    'UNSUPPORTED_ARCH',
    /'rwkv6'/,
  );
  await rejects(
    addon.loadModel(
      rewrite(bytes, (_m, t) => {
        t.splice(
          t.findIndex((x) => x.name === 'blk.1.ffn_up.weight'),
          1,
        );
      }),
    ),
    'MODEL_MISSING_TENSOR',
    /blk\.1\.ffn_up\.weight/,
  );
  await rejects(
    addon.loadModel(
      rewrite(bytes, (_m, t) => {
        const w = t.find((x) => x.name === 'blk.0.attn_k.weight')!;
        w.dims = [w.dims[1], w.dims[0]];
      }),
    ),
    'MODEL_BAD_TENSOR',
    /blk\.0\.attn_k\.weight.*expected/,
  );
  await rejects(
    addon.loadModel(
      rewrite(bytes, (_m, t) => {
        const w = t.find((x) => x.name === 'blk.0.attn_q.weight')!;
        w.type = 16; // IQ2_XXS: a real type Folio has no kernels for
        w.data = new Uint8Array((w.dims[0] / 256) * w.dims[1] * 66);
      }),
    ),
    'UNSUPPORTED_TYPE',
    /blk\.0\.attn_q\.weight.*IQ2_XXS/,
  );
  await rejects(
    addon.loadModel(
      rewrite(bytes, (m) => {
        m.find((e) => e[0] === 'llama.attention.head_count_kv')![1] = { type: 4, value: 3 } as Typed;
      }),
    ),
    'MODEL_BAD_HPARAMS',
    /not a multiple/,
  );
  await rejects(
    addon.loadModel(
      rewrite(bytes, (m) => {
        m.splice(
          m.findIndex((e) => e[0] === 'llama.block_count'),
          1,
        );
      }),
    ),
    'GGUF_MISSING_KEY',
    /llama\.block_count/,
  );
});

test('prefill and generate check their input', async () => {
  const model = await addon.loadModel(randomPath);
  const s = model.createSession({ nCtx: 32 });
  await rejects(s.prefill([]), 'INVALID_ARGUMENT');
  await rejects(s.prefill([1, 100000]), 'INVALID_TOKEN', /100000/);
  await rejects(s.prefill([1, -1]), 'INVALID_TOKEN');
  await rejects(s.prefill(new Array(33).fill(5)), 'CONTEXT_FULL', /33 new tokens/);
  assert.equal(s.nPast, 0, 'nothing was kept from the refused prefills');
  assert.throws(
    () => s.generate({ n: 3 }),
    (e: EngineError) => e.code === 'NO_PROMPT',
  );
  assert.throws(
    () => model.createSession({ nCtx: 100000 }),
    (e: EngineError) => e.code === 'CONTEXT_TOO_LONG',
  );
  assert.throws(
    () => s.prefill('hello' as never),
    (e: EngineError) => e.code === 'INVALID_ARGUMENT',
  );
  await s.prefill([1, 2, 3]);
  assert.throws(
    () => s.generate({ n: 1, temperature: -1 }),
    (e: EngineError) => e.code === 'INVALID_ARGUMENT',
  );
  assert.throws(
    () => s.generate({ n: 1, topP: 2 }),
    (e: EngineError) => /topP/.test(e.message),
  );
  s.dispose();
  assert.throws(
    () => s.nPast === 0 && s.tokens(),
    (e: EngineError) => e.code === 'DISPOSED',
  );
  model.dispose();
  assert.throws(
    () => model.info(),
    (e: EngineError) => e.code === 'DISPOSED',
  );
});

test('one operation at a time; progress is reported; the event loop keeps running', async () => {
  const model = await addon.loadModel(randomPath);
  const s = model.createSession({ nCtx: 256, nBatch: 8, nThreads: 1 });
  const progress: [number, number][] = [];
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  const tokens = Array.from({ length: 200 }, (_, i) => 3 + (i % 250));
  const p = s.prefill(tokens, { onProgress: (d, t) => progress.push([d, t]) });
  assert.equal(s.busy, true);
  assert.throws(
    () => s.prefill([1]),
    (e: EngineError) => e.code === 'BUSY',
  );
  assert.throws(
    () => s.truncate(0),
    (e: EngineError) => e.code === 'BUSY',
  );
  await p;
  clearInterval(timer);
  assert.equal(s.busy, false);
  assert.ok(progress.length >= 25, `${progress.length} progress events`);
  assert.deepEqual(progress.at(-1), [200, 200]);
  assert.ok(progress.every(([d], i) => i === 0 || d > progress[i - 1][0]));
  assert.ok(ticks > 0, 'timers ran while the prefill worked');
  s.dispose();
});

test('cancelling a prefill rolls it back; a token callback returning false stops generation', async () => {
  const model = await addon.loadModel(randomPath);
  const s = model.createSession({ nCtx: 256, nBatch: 4, nThreads: 1 });
  await s.prefill([1, 5, 6]);
  const before = s.lastLogits();
  const tokens = Array.from({ length: 240 }, (_, i) => 3 + (i % 250));
  const p = s.prefill(tokens);
  s.cancel(); // the worker checks between layers, so it stops wherever it has got to
  await rejects(p, 'CANCELLED');
  assert.equal(s.nPast, 3, 'the cancelled prefill left nothing behind');
  assert.deepEqual(Array.from(s.tokens()), [1, 5, 6]);
  assert.deepEqual(s.lastLogits(), before);

  const seen: number[] = [];
  const r = await s.generate({ n: 50, temperature: 0, onToken: (t) => (seen.push(t.id), seen.length < 5) });
  assert.equal(r.stopReason, 'cancelled');
  assert.ok(r.tokens.length >= 5 && r.tokens.length < 50, `${r.tokens.length} tokens`);
  s.dispose();
});

test('sampling: greedy is the argmax, a seed reproduces, top-k 1 is greedy, truncate regenerates', async () => {
  const model = await addon.loadModel(randomPath);
  const s = model.createSession({ nCtx: 256 });
  const { logits } = await s.prefill([1, 40, 41, 42]);
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
  const greedy = await s.generate({ n: 12, temperature: 0 });
  assert.equal(greedy.tokens[0], best);
  assert.equal(greedy.nPast, 16);

  // Back to the same prefix, then generate with other sampling settings.
  const sample = async (opts: object) => {
    s.truncate(3);
    await s.prefill([42]);
    return (await s.generate({ n: 12, ...opts })).tokens;
  };
  assert.deepEqual(await sample({ temperature: 0 }), greedy.tokens, 'greedy again after truncate');

  const a = await sample({ temperature: 1.5, topK: 0, topP: 1, minP: 0, seed: 1 });
  const b = await sample({ temperature: 1.5, topK: 0, topP: 1, minP: 0, seed: 1 });
  const c = await sample({ temperature: 1.5, topK: 0, topP: 1, minP: 0, seed: 2 });
  assert.deepEqual(a, b, 'same seed, same tokens');
  assert.notDeepEqual(a, c, 'another seed, other tokens');
  assert.deepEqual(await sample({ temperature: 1.5, topK: 1, seed: 3 }), greedy.tokens);
  assert.deepEqual(await sample({ temperature: 1, minP: 1, seed: 4 }), greedy.tokens);
  assert.deepEqual(await sample({ temperature: 1, topP: 1e-6, seed: 5 }), greedy.tokens);
  // a strong repetition penalty changes the greedy path of this model at some step
  const penalised = await sample({ temperature: 0, repeatPenalty: 50, repeatLastN: -1 });
  assert.notDeepEqual(penalised, greedy.tokens);
  s.dispose();
});

test('tokenize, detokenize and info on a real model', { skip: missing(stories) }, async () => {
  const model: Model = await addon.loadModel(stories);
  const info = model.info();
  assert.equal(info.architecture, 'llama');
  assert.equal(info.nLayer, 5);
  assert.equal(info.nHead, 8);
  assert.equal(info.nHeadKv, 4);
  assert.equal(info.contextLength, 512);
  assert.deepEqual(info.tensorTypes, { F32: 48 });
  assert.equal(info.tokenizer.bos, 1);
  assert.equal(info.tokenizer.addBos, true);
  const ids = model.tokenize('Once upon a time');
  assert.deepEqual(Array.from(ids), [1, 403, 407, 261, 378]);
  assert.deepEqual(Array.from(model.tokenize('Once', { addSpecial: false })), [403]);
  assert.equal(model.detokenize(ids.subarray(1)), 'Once upon a time'); // llama_detokenize drops SentencePiece's leading space
  assert.equal(Buffer.from(model.tokenToPiece(1, true)).toString(), '<s>');
  assert.equal(Buffer.from(model.tokenToPiece(1, false)).toString(), '');
  assert.throws(
    () => model.tokenToPiece(512),
    (e: EngineError) => e.code === 'INVALID_TOKEN',
  );
  model.dispose();
});
