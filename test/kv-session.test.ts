// Ada-KV compression in a real session (stories260K): equivalences with the plain cache, statistics that
// add up, the edge cases of docs/compression.md, truncate / fork / save / load, and the fast attention against the
// reference one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  loadAddon,
  type CompressionMethod,
  type CompressionStats,
  type EngineError,
  type Model,
  type Session,
} from '../electron/engine/binding.ts';
import { readKeptPositions } from '../electron/engine/session-file.ts';
import { METHOD_NAMES, methodRow } from '../electron/shared/kv/methods.ts';
import { missing, sharedModel, sharedReference } from './helpers/shared.ts';
import { writeRandomModel } from './helpers/random-model.ts';

const addon = loadAddon();
const stories = sharedModel('stories260K.gguf');
const longCase = sharedReference('stories260K/p4_long.json');
const skip = missing(stories, longCase);
const dir = mkdtempSync(join(tmpdir(), 'folio-kv-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

let model: Model;
let prefix: number[] = [];
const question = [13, 13, 319, 411, 261, 376, 298]; // a few ordinary tokens to append after the document
const opts = { nCtx: 512, nThreads: 2, kvType: 'f32' as const };

function sameArray(a: ArrayLike<number>, b: ArrayLike<number>, what: string) {
  assert.equal(a.length, b.length, `${what}: length`);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) assert.fail(`${what}: differ at ${i}: ${a[i]} vs ${b[i]}`);
}

async function compressed(method: CompressionMethod, budget: number, extra: object = {}) {
  const s = model.createSession(opts);
  const r = await s.compress(prefix, { method, budget, ...extra });
  return { s, ...r };
}

test('setup: stories260K and a 415-token document', { skip }, async () => {
  model = await addon.loadModel(stories);
  prefix = JSON.parse(readFileSync(longCase, 'utf8')).tokens;
  assert.equal(prefix.length, 415);
});

test('full equals the plain engine, and a budget covering the prefix changes nothing', { skip }, async () => {
  const plain = model.createSession(opts);
  const p = await plain.prefill(prefix);
  const pNext = await plain.prefill(question);
  const ref = JSON.parse(readFileSync(longCase, 'utf8'));
  assert.ok(
    p.logits.every((x, i) => Math.abs(x - ref.last_logits[i]) < 1e-4),
    "llama.cpp's logits",
  );
  for (const [method, budget] of [
    ['full', undefined],
    ['snapkv', 1],
    ['ada-snapkv', 415],
    ['ada-pyramidkv', 5000],
    ['streaming', 1],
  ] as const) {
    const { s, stats, logits } = await compressed(method as CompressionMethod, budget as number);
    assert.equal(stats.compressed, false, method);
    sameArray(logits, p.logits, `${method}: logits after the prefix`);
    sameArray((await s.prefill(question)).logits, pNext.logits, `${method}: logits after a question`);
    assert.ok(stats.layers.every((l) => l.heads.every((h) => h.kept === 415 && Math.abs(h.retainedMass - 1) < 1e-6)));
    s.dispose();
  }
  plain.dispose();
});

test('statistics add up for every method: budgets, bytes, retention map, every head keeps its window', {
  skip,
}, async () => {
  const H = 4,
    layers = 5,
    entry = 2 * 8 * 4; // K + V of head_dim 8 in F32
  for (const method of METHOD_NAMES.filter((m) => m !== 'full')) {
    const { schedule } = methodRow(method);
    const { s, stats } = await compressed(method, 0.3);
    assert.equal(s.nPast, 415, `${method}: the document's positions and nothing else (KVzip's re-reading is gone)`);
    const B = Math.round(0.3 * 415);
    assert.equal(stats.budget, B);
    assert.equal(stats.compressed, true);
    const kept = stats.layers.map((l) => l.heads.reduce((a, h) => a + h.kept, 0));
    assert.equal(
      kept.reduce((a, k) => a + k, 0),
      layers * H * B,
      `${method}: Σ kept = layers·Hk·B`,
    );
    if (schedule === 'flat')
      assert.ok(
        kept.every((k) => k === H * B),
        `${method}: Σ kept per layer = Hk·B`,
      );
    else if (schedule === 'pyramid') assert.ok(kept[0] > kept[layers - 1], `${method}: the pyramid narrows`);
    stats.layers.forEach((l, i) => assert.equal(kept[i], H * l.budget, `${method}: layer ${i} keeps its budget`));
    stats.layers.forEach((l) => {
      assert.equal(l.bytesFull, 415 * H * entry);
      assert.equal(l.bytesKept, l.heads.reduce((a, h) => a + h.kept, 0) * entry);
      assert.ok(Math.abs(l.epsOverC - 2 * (H - l.heads.reduce((a, h) => a + h.retainedMass, 0))) < 1e-9);
      for (const h of l.heads) {
        if (method !== 'streaming') assert.ok(h.kept >= 32, 'a head never keeps less than its window');
        assert.ok(h.retainedMass > 0 && h.retainedMass <= 1 + 1e-6);
        assert.ok(h.concentration > 0 && h.concentration <= 1);
      }
    });
    assert.equal(stats.kvBytesFull, layers * 415 * H * entry);
    assert.equal(
      stats.kvBytesKept,
      stats.layers.reduce((a, l) => a + l.bytesKept, 0),
    );
    assert.equal(s.memory().bytesUsed, stats.kvBytesKept, 'the cache holds exactly what the statistics say');
    assert.deepEqual(
      s.memory().headLengths,
      stats.layers.map((l) => l.heads.map((h) => h.kept)),
    );
    assert.equal(stats.tokenRetention.length, 415);
    assert.equal(
      stats.tokenRetention.reduce((a, x) => a + x, 0),
      layers * H * B,
    );
    for (let j = 415 - 32; j < 415; j++)
      assert.equal(stats.tokenRetention[j], layers * H, 'window tokens are kept everywhere');
    if (method === 'streaming') {
      for (let j = 0; j < 4; j++) assert.equal(stats.tokenRetention[j], layers * H, 'sinks');
      assert.equal(stats.tokenRetention[4], 0);
    }
    s.dispose();
  }
});

test("ada with alpha 1 keeps what snapkv keeps; alpha 0 retains at least uniform's mass on every layer", {
  skip,
}, async () => {
  const snap = await compressed('snapkv', 0.25);
  const ada1 = await compressed('ada-snapkv', 0.25, { alpha: 1 });
  assert.deepEqual(
    ada1.stats.layers.map((l) => l.heads),
    snap.stats.layers.map((l) => l.heads),
  );
  sameArray(ada1.logits, snap.logits, 'alpha 1 = snapkv');
  // Without pooling the allocation ranks by the very mass it is judged by (Theorem 3.3 applies exactly).
  const uni = await compressed('snapkv', 0.25, { kernel: 1 });
  const ada0 = await compressed('ada-snapkv', 0.25, { kernel: 1, alpha: 0 });
  const mass = (s: CompressionStats) => s.layers.map((l) => l.heads.reduce((a, h) => a + h.retainedMass, 0));
  mass(ada0.stats).forEach((m, l) =>
    assert.ok(m >= mass(uni.stats)[l] - 1e-6, `layer ${l}: ${m} < ${mass(uni.stats)[l]}`),
  );
  assert.ok(
    ada0.stats.layers.some((l) => new Set(l.heads.map((h) => h.kept)).size > 1),
    'ada gives heads different budgets',
  );
  for (const x of [snap, ada1, uni, ada0]) x.s.dispose();
});

test('edge cases: prefix within the window, budget within the window, the ratio clamp', { skip }, async () => {
  const s = model.createSession(opts);
  const short = await s.compress(prefix.slice(0, 20), { method: 'ada-snapkv', budget: 0.2 });
  assert.equal(short.stats.compressed, false);
  assert.equal(short.stats.reason, 'prefix within the window');
  s.dispose();
  assert.throws(
    () => model.createSession(opts).compress(prefix, { method: 'snapkv', budget: 32 }),
    (e: EngineError) => e.code === 'BUDGET_TOO_SMALL',
  );
  assert.throws(
    () => model.createSession(opts).compress(prefix, { method: 'snapkv' }),
    (e: EngineError) => e.code === 'INVALID_ARGUMENT',
  );
  assert.throws(
    () => model.createSession(opts).compress(prefix, { method: 'snapkv', budget: 0.5, kernel: 4 }),
    (e: EngineError) => e.code === 'INVALID_ARGUMENT',
  );
  const clamp = await compressed('ada-snapkv', 0.01);
  assert.equal(clamp.stats.budgetClamped, true);
  assert.equal(clamp.stats.budget, 33);
  assert.ok(clamp.stats.layers.every((l) => l.heads.every((h) => h.kept >= 32)));
  clamp.s.dispose();
  // compression needs an empty session
  const busy = model.createSession(opts);
  await busy.prefill([1, 2, 3]);
  await assert.rejects(
    busy.compress(prefix, { method: 'snapkv', budget: 0.5 }),
    (e: EngineError) => e.code === 'NOT_EMPTY',
  );
  busy.dispose();
});

test('appending after compression writes in place; truncate undoes it exactly; positions continue', {
  skip,
}, async () => {
  const { s } = await compressed('ada-snapkv', 0.3);
  const lengths = s.memory().headLengths;
  const reserved = s.memory().bytesReserved;
  const first = await s.prefill(question);
  assert.equal(s.nPast, 415 + question.length, 'new tokens take positions after the whole prefix');
  assert.deepEqual(
    s.memory().headLengths,
    lengths.map((l) => l.map((n) => n + question.length)),
  );
  assert.equal(s.memory().bytesReserved, reserved, 'a short question fits in the spare room: no re-layout');
  s.truncate(415);
  assert.deepEqual(s.memory().headLengths, lengths);
  sameArray((await s.prefill(question)).logits, first.logits, 'the same question again');
  // A long answer grows the layers; truncating gives the same state back.
  const gen = await s.generate({ n: 60, temperature: 0 });
  assert.ok(s.memory().bytesReserved > reserved);
  s.truncate(415 + question.length);
  await s.prefill(gen.tokens.slice(0, 1));
  s.dispose();
});

test('a fork does not disturb its origin', { skip }, async () => {
  const { s } = await compressed('ada-snapkv', 0.3);
  const a = s.fork(),
    b = s.fork();
  await a.prefill(question);
  const ga = await a.generate({ n: 20, temperature: 0 });
  await b.prefill([1, 2, 3, 4, 5]);
  await b.generate({ n: 20, temperature: 0.9, seed: 5 });
  await s.prefill(question);
  const gs = await s.generate({ n: 20, temperature: 0 });
  assert.deepEqual(gs.tokens, ga.tokens, 'the origin answers as its untouched fork did');
  for (const x of [s, a, b]) x.dispose();
});

test('save and load: identical next logits; damaged and foreign files are refused', { skip }, async () => {
  const { s, stats } = await compressed('ada-pyramidkv', 0.3);
  const path = join(dir, 'doc.folio-kv');
  await s.save(path, JSON.stringify({ method: stats.method }));
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.includes('.tmp-')),
    [],
    'no temporary file is left behind',
  );
  const next = await s.prefill(question);
  const { session: loaded, meta } = await model.loadSession(path, opts);
  assert.equal(JSON.parse(meta).method, 'ada-pyramidkv');
  assert.equal(loaded.nPast, 415);
  sameArray(loaded.tokens(), prefix, 'tokens');
  assert.deepEqual(
    loaded.memory().headLengths,
    stats.layers.map((l) => l.heads.map((h) => h.kept)),
  );
  sameArray((await loaded.prefill(question)).logits, next.logits, 'logits after the question');
  loaded.dispose();

  const bytes = readFileSync(path);
  const expectLoad = async (b: Uint8Array, code: string) => {
    const p = join(dir, `bad-${code}-${Math.random()}.kv`);
    writeFileSync(p, b);
    await assert.rejects(model.loadSession(p, opts), (e: EngineError) => e.code === code);
  };
  for (const at of [100, Math.floor(bytes.length / 2), bytes.length - 20]) {
    const bad = Buffer.from(bytes);
    bad[at] ^= 0x40;
    await expectLoad(bad, 'SESSION_FILE_CORRUPT');
  }
  await expectLoad(bytes.subarray(0, bytes.length - 1000), 'SESSION_FILE_CORRUPT');
  await expectLoad(bytes.subarray(0, 10), 'SESSION_FILE_CORRUPT');
  await expectLoad(Buffer.from('not a session at all'), 'SESSION_FILE_FORMAT');
  const v4 = Buffer.from(bytes);
  v4.writeUInt32LE(4, 8);
  await expectLoad(v4, 'SESSION_FILE_VERSION');
  // the same session file opened with another model
  const otherPath = join(dir, 'other.gguf');
  writeRandomModel(otherPath, { seed: 3 });
  const other = await addon.loadModel(otherPath);
  await assert.rejects(
    other.loadSession(path),
    (e: EngineError) => e.code === 'SESSION_FILE_MODEL' && /another model/.test(e.message),
  );
  other.dispose();
  // a failed save leaves nothing behind and the old file intact
  await assert.rejects(s.save(join(dir, 'no/such/dir/x.kv')), (e: EngineError) => e.code === 'SESSION_FILE_WRITE');
  assert.ok(existsSync(path));
  s.dispose();
});

test('a quantized cache (q8_0 keys, q4_0 values, rotated) is saved and loaded block for block', { skip }, async () => {
  const s = model.createSession({ ...opts, kvTypeK: 'q8_0', kvTypeV: 'q4_0', kvRotate: true });
  const { stats } = await s.compress(prefix, { method: 'ada-snapkv', budget: 0.3 });
  assert.equal(stats.kvType, 'q8_0/q4_0+rot');
  // stories260K's heads of 8: a q8_0 key 2 + 8 bytes, a q4_0 value 2 + 4
  assert.equal(s.memory().entryBytes, 10 + 6);
  const path = join(dir, 'quantized.folio-kv');
  await s.save(path, '{}');
  const next = await s.prefill(question);
  // The file decides the format, whatever the options ask for.
  const { session: loaded } = await model.loadSession(path, opts);
  assert.equal(loaded.memory().kvType, 'q8_0/q4_0+rot');
  assert.deepEqual(
    loaded.memory().headLengths,
    s.memory().headLengths.map((l) => l.map((n) => n - question.length)),
  );
  sameArray((await loaded.prefill(question)).logits, next.logits, 'logits after the question');
  // The app's reader of kept positions reads the layout (format 3) to the file's end.
  const { header, positions } = await readKeptPositions(path, 2, 1);
  assert.deepEqual(header.kv, { k: 'q8_0', v: 'q4_0', rotate: true });
  assert.equal(positions.length, stats.layers[2].heads[1].kept);
  // A quantized cache answers close to the f32 one: the same greedy continuation on this model.
  const exact = model.createSession(opts);
  await exact.compress(prefix, { method: 'ada-snapkv', budget: 0.3 });
  const want = await exact.generate({ n: 12, temperature: 0 });
  const { session: again } = await model.loadSession(path, opts);
  assert.equal((await again.generate({ n: 12, temperature: 0 })).text, want.text);
  for (const x of [s, loaded, exact, again]) x.dispose();
});

// End to end on F32 caches: on F16 caches the two would differ by more than their arithmetic, because a
// last-bit difference upstream can flip a later value's rounding to F16 (native/tests/attention-selftest.cc
// compares them on fixed F16 caches instead).
test('the fast attention agrees with the reference attention on compressed caches', { skip }, async () => {
  for (const method of ['ada-snapkv', 'streaming'] as const) {
    const logits: Float32Array[] = [];
    for (const attention of ['fast', 'reference'] as const) {
      const s = model.createSession({ ...opts, attention, nBatch: 7 });
      await s.compress(prefix, { method, budget: 0.3 });
      logits.push((await s.prefill(question, { allLogits: true })).logits);
      s.dispose();
    }
    let max = 0;
    for (let i = 0; i < logits[0].length; i++) max = Math.max(max, Math.abs(logits[0][i] - logits[1][i]));
    assert.ok(max < 1e-4, `${method}: max |Δ| ${max}`);
  }
});

test('compression is cancellable and leaves an empty session behind', { skip }, async () => {
  const s: Session = model.createSession({ ...opts, nBatch: 16 });
  const p = s.compress(prefix, { method: 'ada-snapkv', budget: 0.3 });
  s.cancel();
  await assert.rejects(p, (e: EngineError) => e.code === 'CANCELLED');
  assert.equal(s.nPast, 0);
  assert.equal(s.memory().bytesUsed, 0);
  const again = await s.compress(prefix, { method: 'ada-snapkv', budget: 0.3 });
  assert.equal(again.stats.compressed, true);
  s.dispose();
});

test("compressSpan: older turns compressed by a question's attention free positions; the document stays", {
  skip,
}, async () => {
  const { s } = await compressed('ada-snapkv', 0.3);
  const L = s.nPast;
  const doc = s.memory().headLengths;
  const pristine = s.fork();
  // Two "turns" after the document: 40 and 30 tokens.
  const turns = [prefix.slice(0, 40), prefix.slice(100, 130)];
  for (const t of turns) await s.prefill(t);
  const forgets = s.fork();
  const zero = s.fork();
  const partial = s.fork();
  const tokensBefore = s.tokens().length;

  // Both turns at a quarter: every head held all 70 span entries; each layer keeps ceil(70·Hk/4) of them, no
  // head more than ceil(70/4) = 18, the positions the span takes.
  const r = await s.compressSpan(L, L + 70, 0.25, question);
  assert.equal(r.nPast, L + 18);
  assert.equal(s.nPast, L + 18);
  assert.equal(s.tokens().length, tokensBefore - (70 - 18), 'one token per position after the document');
  const kept = s.memory().headLengths.map((l, i) => l.map((n, g) => n - doc[i][g]));
  for (const layer of kept) {
    assert.equal(
      layer.reduce((a, b) => a + b, 0),
      Math.ceil((70 * layer.length) / 4),
    );
    assert.ok(
      layer.every((n) => n >= 1 && n <= 18),
      `${layer}`,
    );
  }
  assert.equal(Math.max(...kept.flat()), 18);
  // The chat goes on after the compressed turns.
  await s.prefill(question);
  const g = await s.generate({ n: 8, temperature: 0 });
  assert.equal(g.tokens.length, 8);
  assert.equal(s.nPast, L + 18 + question.length + 8);
  // The document's entries are as they were: without the conversation, the next logits are the pristine ones.
  s.truncate(L);
  assert.deepEqual(s.memory().headLengths, doc);
  sameArray((await s.prefill(question)).logits, (await pristine.prefill(question)).logits, 'the document alone');

  // Keeping nothing is forgetting.
  forgets.forget(L, L + 70);
  assert.equal((await zero.compressSpan(L, L + 70, 0, question)).nPast, forgets.nPast);
  sameArray((await zero.prefill(question)).logits, (await forgets.prefill(question)).logits, 'keep nothing = forget');

  // Only the first turn: the second moves back behind its kept 10 positions (ceil(40/4)).
  assert.equal((await partial.compressSpan(L, L + 40, 0.25, question)).nPast, L + 10 + 30);
  await partial.prefill(question);
  assert.equal((await partial.generate({ n: 4, temperature: 0 })).tokens.length, 4);

  // Refused: a span outside the cache, a ratio outside [0, 1].
  await assert.rejects(
    partial.compressSpan(L, partial.nPast + 1, 0.5, question),
    (e: EngineError) => e.code === 'INVALID_ARGUMENT',
  );
  await assert.rejects(
    partial.compressSpan(L, L + 10, 1.5, question),
    (e: EngineError) => e.code === 'INVALID_ARGUMENT',
  );
  for (const x of [s, pristine, forgets, zero, partial]) x.dispose();
});

test('compressSpan near the end of the context: the question runs past it and nothing of it stays', {
  skip,
}, async () => {
  const { s } = await compressed('ada-snapkv', 0.3);
  const L = s.nPast;
  const fill = [...prefix, ...prefix].slice(0, 512 - L - 2);
  await s.prefill(fill);
  const window = prefix.slice(200, 240); // 40 tokens: positions 510 .. 549, past the 512 of the context
  const r = await s.compressSpan(L, s.nPast, 0.5, window);
  assert.equal(r.nPast, L + Math.ceil(fill.length / 2));
  await s.prefill(window);
  assert.equal(s.nPast, r.nPast + 40);
  s.dispose();
});
