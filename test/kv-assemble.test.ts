// Documents placed side by side from their saved caches (issue 41, the engine's part: Session.appendSaved), on
// stories260K: one document assembled alone is that document's own session; a document placed after another
// has its keys rotated exactly to its new positions (forgetting the first moves it back, and it answers as
// its own session does); a set's tokens, positions and memory are the sum of its parts; what cannot be
// assembled is refused with the reason.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadAddon, type EngineError, type Model } from '../electron/engine/binding.ts';
import { missing, sharedModel, sharedReference } from './helpers/shared.ts';

const addon = loadAddon();
const stories = sharedModel('stories260K.gguf');
const needle = sharedModel('needle-llama.gguf');
const longCase = sharedReference('stories260K/p4_long.json');
const skip = missing(stories, longCase);
const dir = mkdtempSync(join(tmpdir(), 'folio-assemble-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const opts = { nCtx: 512, nThreads: 2, kvType: 'f32' as const };
const question = [13, 13, 319, 411, 261];

/** Reads `tokens` with `method` into a new session, saves it as `name`; returns the path and the session. */
async function saved(model: Model, name: string, tokens: number[], o: Record<string, unknown> = { method: 'full' }) {
  const s = model.createSession(opts);
  await s.compress(tokens, o as never);
  const path = join(dir, `${name}.folio-kv`);
  await s.save(path);
  return { path, s };
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

test('a document assembled alone is its own session; after another, its keys are rotated to their new positions', {
  skip,
}, async () => {
  const model = await addon.loadModel(stories);
  const doc: number[] = JSON.parse(readFileSync(longCase, 'utf8')).tokens; // 415 tokens, BOS first
  const a = doc.slice(0, 120);
  const d = [doc[0], ...doc.slice(200, 400)]; // another passage, with its own BOS
  for (const method of ['full', 'ada-snapkv']) {
    const o = method === 'full' ? { method } : { method, budget: 0.3 };
    const A = await saved(model, `a-${method}`, a, o);
    const D = await saved(model, `d-${method}`, d, o);

    // Alone: the same entries at the same positions, so the same answer to a question, exactly.
    const alone = model.createSession(opts);
    assert.deepEqual(await alone.appendSaved(D.path), { nPast: d.length });
    assert.deepEqual([...alone.tokens()], d);
    assert.deepEqual(alone.memory().headLengths, D.s.memory().headLengths);
    const ownD = await model.loadSession(D.path, opts);
    const x = (await alone.prefill(question)).logits;
    const y = (await ownD.session.prefill(question)).logits;
    assert.equal(maxDiff(x, y), 0, `${method}: alone, the logits are the document's own`);

    // After A: D's entries move by |A| positions, their keys turned by as much. Forgetting A moves them back
    // (the engine's own, separately tested rotation): the answer is then the document's own again, within the
    // rounding of two rotations.
    const set = model.createSession(opts);
    await set.appendSaved(A.path);
    assert.deepEqual(await set.appendSaved(D.path), { nPast: a.length + d.length });
    assert.deepEqual([...set.tokens()], [...a, ...d]);
    const lengths = set.memory().headLengths;
    const parts = [A.s.memory().headLengths, D.s.memory().headLengths];
    assert.deepEqual(
      lengths,
      parts[0].map((layer, l) => layer.map((n, h) => n + parts[1][l][h])),
      `${method}: every head holds what the two held`,
    );
    set.forget(0, a.length);
    const z = (await set.prefill(question)).logits;
    assert.ok(maxDiff(z, y) < 1e-3, `${method}: moved and moved back, the logits differ by ${maxDiff(z, y)}`);
    for (const s of [A.s, D.s, alone, ownD.session, set]) s.dispose();
  }
});

test('a set takes a part of each saved cache: positions, tokens and memory add up; the rest is refused, saying why', {
  skip,
}, async () => {
  const model = await addon.loadModel(stories);
  const doc: number[] = JSON.parse(readFileSync(longCase, 'utf8')).tokens;
  const one = await saved(model, 'one', doc.slice(0, 150), { method: 'ada-snapkv', budget: 0.3 });
  const two = await saved(model, 'two', [doc[0], ...doc.slice(150, 300)], { method: 'ada-snapkv', budget: 0.3 });
  // The first whole; of the second, what follows its BOS (its prefix, the system prompt in the app, once).
  const set = model.createSession(opts);
  await set.appendSaved(one.path);
  assert.deepEqual(await set.appendSaved(two.path, { from: 1 }), { nPast: 150 + 150 });
  assert.deepEqual([...set.tokens()], [...doc.slice(0, 150), ...doc.slice(150, 300)]);
  const g = (await set.prefill(question)).logits;
  assert.equal(g.length, model.info().nVocab);
  const answer = await set.generate({ n: 8, temperature: 0 });
  assert.equal(answer.tokens.length, 8);

  const code = (e: unknown) => (e as EngineError).code;
  // Positions [from, to) within the saved session's.
  await assert.rejects(set.appendSaved(two.path, { from: 100, to: 999 }), (e) => code(e) === 'INVALID_ARGUMENT');
  // More than the context holds.
  const full = model.createSession({ ...opts, nCtx: 200 });
  await full.appendSaved(one.path);
  await assert.rejects(full.appendSaved(two.path), (e) => code(e) === 'CONTEXT_FULL' && /do not fit/.test(`${e}`));
  assert.equal(full.nPast, 150, 'a refused part leaves the session as it was');
  // A packed read's entries are no longer its tokens.
  const packed = await saved(model, 'packed', doc.slice(0, 300), {
    method: 'ada-snapkv',
    budget: 0.2,
    packPositions: true,
  });
  await assert.rejects(
    model.createSession(opts).appendSaved(packed.path),
    (e) => code(e) === 'NOT_SUPPORTED' && /re-based \(or packed\) positions/.test(`${e}`),
  );
  // Another model's cache.
  if (!missing(needle)) {
    const other = await addon.loadModel(needle);
    const theirs = await saved(other, 'theirs', doc.slice(0, 50));
    await assert.rejects(set.appendSaved(theirs.path), (e) => code(e) === 'SESSION_FILE_MODEL');
    theirs.s.dispose();
  }
  for (const s of [one.s, two.s, set, full, packed.s]) s.dispose();
});

test('packed, a saved cache takes the positions its fullest head keeps: appended or packed in place it is the packed read itself, and a set fits where its own spacing would not', {
  skip,
}, async () => {
  const model = await addon.loadModel(stories);
  const doc: number[] = JSON.parse(readFileSync(longCase, 'utf8')).tokens;
  const o = { method: 'ada-snapkv', budget: 0.2 };
  const own = await saved(model, 'own-spacing', doc.slice(0, 300), o);
  const packedRead = model.createSession(opts);
  const r = await packedRead.compress(doc.slice(0, 300), { ...o, packPositions: true } as never);
  // The packed read and the packed append keep the same entries at the same positions: the same answer.
  const alone = model.createSession(opts);
  assert.deepEqual(await alone.appendSaved(own.path, { pack: true }), { nPast: r.nPast });
  assert.ok(r.nPast < 300, `packed into ${r.nPast} of 300 positions`);
  assert.deepEqual([...alone.tokens()], doc.slice(300 - r.nPast, 300), 'positions count the span’s last tokens');
  assert.deepEqual(alone.memory().headLengths, own.s.memory().headLengths, 'every kept entry, none dropped');
  // And a session loaded at its own positions, then packed where it stands (packSpan), is the same again.
  const loaded = (await model.loadSession(own.path, opts)).session;
  assert.equal(loaded.packSpan(0, 300), r.nPast);
  assert.deepEqual([...loaded.tokens()], doc.slice(300 - r.nPast, 300));
  const x = (await alone.prefill(question)).logits;
  const y = (await packedRead.prefill(question)).logits;
  const z = (await loaded.prefill(question)).logits;
  assert.ok(maxDiff(x, y) < 1e-4, `packed on append as by the read: the logits differ by ${maxDiff(x, y)}`);
  assert.ok(maxDiff(z, y) < 1e-4, `packed in place as by the read: the logits differ by ${maxDiff(z, y)}`);
  loaded.dispose();

  // Two such documents after a prefix: each takes only its fullest head's count, so a context too small for
  // their own spacing holds them.
  const small = model.createSession({ ...opts, nCtx: 320 });
  await small.appendSaved(own.path, { to: 1 });
  await assert.rejects(small.appendSaved(own.path, { from: 1 }).then(() => small.appendSaved(own.path, { from: 1 })));
  const set = model.createSession({ ...opts, nCtx: 320 });
  await set.appendSaved(own.path, { to: 1 });
  const first = await set.appendSaved(own.path, { from: 1, pack: true });
  const second = await set.appendSaved(own.path, { from: 1, pack: true });
  assert.equal(second.nPast - first.nPast, first.nPast - 1, 'the same document packs to the same positions');
  assert.ok(second.nPast <= 1 + 2 * r.nPast, `the set took ${second.nPast} positions`);
  await set.prefill(question);
  assert.equal((await set.generate({ n: 4, temperature: 0 })).tokens.length, 4);
  for (const s of [own.s, packedRead, alone, small, set]) s.dispose();
});

test('one budget over a set keeps the best-scored share of the documents’ entries, by the scores their saved reads kept', {
  skip,
}, async () => {
  const model = await addon.loadModel(stories);
  const doc: number[] = JSON.parse(readFileSync(longCase, 'utf8')).tokens;
  const w = 8;
  const o = { method: 'ada-snapkv', budget: 0.6, window: w };
  const one = await saved(model, 'scored-one', doc.slice(0, 200), o);
  const two = await saved(model, 'scored-two', [doc[0], ...doc.slice(200, 400)], o);
  const assembled = async () => {
    const s = model.createSession(opts);
    await s.appendSaved(one.path);
    await s.appendSaved(two.path, { from: 1 });
    return s;
  };
  const spans = [0, 200, 200, 400];
  const set = await assembled();
  const layers = set.memory().headLengths;
  const Hk = layers[0].length;

  // keep 1 only counts (the spans hold every entry), and gives back what appending reserved ahead: each head keeps
  // only its spare room (32 entries).
  const roomFor = (entries: number) => entries * (set.memory().entryBytes + 4);
  const slots = layers.flat().length;
  const counted = set.reselect(spans, { keep: 1 }).entries;
  const held = layers.flat().reduce((n, x) => n + x, 0);
  assert.ok(set.memory().bytesReserved <= roomFor(held + 32 * slots), `${set.memory().bytesReserved} reserved`);
  assert.deepEqual(
    layers.flat(),
    [...counted[0]].map((n, i) => n + counted[1][i]),
    'the two spans hold every entry of the set',
  );

  // Half of what the reads scored (each head's entries but its window), per layer (Ada, the flat schedule): the
  // layer's best ceil(N/2 / Hk)·Hk, the windows all kept.
  const after = set.reselect(spans, { keep: 0.5, alpha: 0.2 }).entries;
  for (let l = 0; l < layers.length; l++) {
    const slot = (e: Int32Array[], g: number) => e[0][l * Hk + g] + e[1][l * Hk + g];
    let candidates = 0,
      kept = 0;
    for (let g = 0; g < Hk; g++) {
      candidates += counted[0][l * Hk + g] - w + (counted[1][l * Hk + g] - w);
      kept += slot(after, g) - 2 * w;
    }
    assert.equal(kept, Math.min(candidates, Math.ceil(candidates / 2 / Hk) * Hk), `layer ${l}: kept of ${candidates}`);
  }
  assert.deepEqual(
    set.memory().headLengths.flat(),
    [...after[0]].map((n, i) => n + after[1][i]),
    'the engine holds what reselect says',
  );
  assert.equal(set.nPast, 400, 'nothing moves');
  const x = (await set.prefill(question)).logits;
  assert.ok(x.every(Number.isFinite));

  // The scores were saved with each document: the set assembled again from the files keeps the same entries and
  // answers the same. (Unsaved scores would leave nothing to choose by: every entry would stay.)
  const again = await assembled();
  assert.deepEqual(again.reselect(spans, { keep: 0.5, alpha: 0.2 }).entries, after);
  const y = (await again.prefill(question)).logits;
  assert.equal(maxDiff(x, y), 0, 'the same entries, the same answer');

  // Across layers (the global schedule): the same total, the layers' shares by one ranking.
  const global = await assembled();
  const g = global.reselect(spans, { keep: 0.5, alpha: 0.2, acrossLayers: true }).entries;
  const total = (e: Int32Array[]) => e.flatMap((a) => [...a]).reduce((n, v) => n + v, 0);
  assert.ok(Math.abs(total(g) - total(after)) <= Hk * layers.length, `${total(g)} against ${total(after)}`);

  const code = (e: unknown) => (e as EngineError).code;
  assert.throws(
    () => set.reselect([0, 300, 200, 400], { keep: 0.5 }),
    (e) => code(e) === 'INVALID_ARGUMENT',
  );
  assert.throws(
    () => set.reselect(spans, { keep: 0 }),
    (e) => code(e) === 'INVALID_ARGUMENT',
  );
  for (const s of [one.s, two.s, set, again, global]) s.dispose();
});
