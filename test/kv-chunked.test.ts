// Reading a long document in chunks (docs/compression.md, "Reading a long document"), on stories260K: a
// chunked read without compression equals one pass, every method keeps the cache within the budget plus one
// chunk at every chunk whatever the document's length, streaming keeps exactly its sinks and recent tokens,
// a document four times longer than the model's context is read with re-based positions and answered, and
// failures leave an empty session.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadAddon, type CompressOptions, type EngineError, type Model } from '../electron/engine/binding.ts';
import { METHOD_NAMES } from '../electron/shared/kv/methods.ts';
import { kvEntryBytes } from '../electron/shared/kv/precision.ts';
import { estimateMemory, kvBytesPerToken, shapeFromInfo } from '../electron/models/estimate.ts';
import { missing, sharedModel, sharedReference } from './helpers/shared.ts';

const addon = loadAddon();
const stories = sharedModel('stories260K.gguf');
const longCase = sharedReference('stories260K/p4_long.json');
const skip = missing(stories, longCase);
const dir = mkdtempSync(join(tmpdir(), 'folio-chunked-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

let model: Model;
let doc: number[] = []; // 415 tokens, BOS first
const opts = { nCtx: 512, nThreads: 2, kvType: 'f32' as const };

/** The document repeated (without its BOS) to `n` tokens. */
function longDoc(n: number): number[] {
  const out = [...doc];
  while (out.length < n) out.push(...doc.slice(1));
  return out.slice(0, n);
}

async function read(tokens: number[], o: Omit<CompressOptions, 'onProgress'>, sessionOpts = {}) {
  const s = model.createSession({ ...opts, ...sessionOpts });
  const r = await s.compress(tokens, o);
  return { s, ...r };
}

test('setup: stories260K and a 415-token document', { skip }, async () => {
  model = await addon.loadModel(stories);
  doc = JSON.parse(readFileSync(longCase, 'utf8')).tokens;
  assert.equal(doc.length, 415);
  assert.equal(model.info().contextLength, 512);
});

test('read in chunks without compression, the document gives one pass’s logits and cache', { skip }, async () => {
  const one = await read(doc, { method: 'full' });
  const chunked = await read(doc, { method: 'full', chunk: 64 });
  assert.equal(chunked.stats.chunks, 6); // 0, 64, ..., 320, then 384..415 (31 < the window) joins the chunk before
  assert.equal(chunked.stats.chunkTokens, 64);
  assert.equal(one.stats.chunks, 1);
  assert.equal(chunked.nPast, one.nPast);
  assert.deepEqual(chunked.s.memory().headLengths, one.s.memory().headLengths);
  let worst = 0;
  for (let i = 0; i < one.logits.length; i++) worst = Math.max(worst, Math.abs(one.logits[i] - chunked.logits[i]));
  assert.ok(worst < 1e-4, `logits differ by ${worst}`);
  const a = await one.s.generate({ n: 24, temperature: 0 });
  const b = await chunked.s.generate({ n: 24, temperature: 0 });
  assert.equal(b.text, a.text);
  one.s.dispose();
  chunked.s.dispose();
});

test('chunks hold at least the window: a short tail joins the chunk before, a small size is raised', {
  skip,
}, async () => {
  const tail = await read(doc, { method: 'ada-snapkv', budget: 100, chunk: 100 });
  assert.equal(tail.stats.chunks, 4); // 0, 100, 200, 300..415
  tail.s.dispose();
  const small = await read(doc, { method: 'ada-snapkv', budget: 100, chunk: 5, window: 32 });
  assert.equal(small.stats.chunkTokens, 32);
  assert.equal(small.stats.chunks, 12); // 415 = 12 · 32 + 31: the tail of 31 joins the last chunk
  small.s.dispose();
});

test('every method keeps the cache within the budget plus one chunk, at every chunk and any length', {
  skip,
}, async () => {
  for (const method of METHOD_NAMES.filter((m) => m !== 'full')) {
    const bounds: number[] = [];
    for (const n of [512, 1024, 2048]) {
      const r = await read(longDoc(n), { method, budget: 48, chunk: 64, rebase: true, room: 32 });

      const st = r.stats;
      assert.equal(st.compressed, true, `${method} at ${n}`);
      assert.ok(st.kvBytesBound > 0, `${method} at ${n}: a bound`);
      assert.ok(st.kvBytesPeak > 0 && st.kvBytesPeak <= st.kvBytesBound, `${method} at ${n}: peak ${st.kvBytesPeak}`);
      assert.ok(r.s.memory().bytesReserved <= st.kvBytesBound, `${method} at ${n}: what stays`);
      // What each layer keeps is its budget: Σ over heads = Hk · B_l.
      st.layers.forEach((l, i) =>
        assert.equal(
          l.heads.reduce((a, h) => a + h.kept, 0),
          l.heads.length * l.budget,
          `${method} at ${n}, layer ${i}`,
        ),
      );
      // The retention map counts what the cache holds.
      const held = r.s
        .memory()
        .headLengths.flat()
        .reduce((a, b) => a + b, 0);
      assert.equal(
        st.tokenRetention.reduce((a, b) => a + b, 0),
        held,
        `${method} at ${n}: retention`,
      );
      bounds.push(st.kvBytesBound);
      r.s.dispose();
    }
    // The bound does not grow with the document (chunks of 64 tokens throughout).
    assert.equal(new Set(bounds).size, 1, `${method}: bounds ${bounds}`);
  }
});

test('a chunked read in q4_0 stays within its memory bound, which is q4_0 entries, not f16 ones', {
  skip,
}, async () => {
  // stories260K's heads are 8 numbers: a q4_0 entry is one short block, 2 + 4 bytes, against f32's 32.
  const f32 = await read(longDoc(1024), { method: 'ada-snapkv', budget: 48, chunk: 64, rebase: true, room: 32 });
  const q4 = await read(
    longDoc(1024),
    { method: 'ada-snapkv', budget: 48, chunk: 64, rebase: true, room: 32 },
    {
      kvType: 'q4_0',
    },
  );
  const entry = q4.s.memory().entryBytes;
  assert.equal(entry, 2 * kvEntryBytes('q4_0', 8));
  assert.equal(q4.s.memory().kvType, 'q4_0');
  assert.ok(q4.stats.kvBytesPeak > 0 && q4.stats.kvBytesPeak <= q4.stats.kvBytesBound, `peak ${q4.stats.kvBytesPeak}`);
  assert.ok(q4.s.memory().bytesReserved <= q4.stats.kvBytesBound);
  // The same entries kept; each in 12 bytes (and a 4-byte position) instead of 64.
  assert.equal(q4.s.memory().bytesUsed * 64, f32.s.memory().bytesUsed * 12);
  assert.ok(
    q4.stats.kvBytesBound * 3 < f32.stats.kvBytesBound,
    `${q4.stats.kvBytesBound} against ${f32.stats.kvBytesBound}`,
  );
  // and it still answers
  const a = await q4.s.generate({ n: 8, temperature: 0 });
  assert.ok(a.text.length > 0);
  f32.s.dispose();
  q4.s.dispose();
});

test('the memory estimate is never under what the engine reserves: every method, in one pass and in chunks', {
  skip,
}, async () => {
  const shape = shapeFromInfo(model.info());
  const kv = { k: 'f32', v: 'f32', rotate: false } as const;
  // The engine's bytes count each entry's position (4 bytes per layer and head); the estimate leaves them out.
  const perEntry = kvBytesPerToken(shape, kv) / (shape.layers * shape.kvHeads);
  const withoutPositions = (bytes: number) => (bytes * perEntry) / (perEntry + 4);
  for (const method of METHOD_NAMES.filter((m) => m !== 'full')) {
    for (const chunk of [0, 128]) {
      const r = await read(doc, { method, budget: 0.25, chunk });
      const e = estimateMemory(shape, {
        nCtx: 512,
        conversationTokens: 512 - doc.length,
        compression: { method, budget: 0.25 },
        kv,
        chunkTokens: chunk || undefined,
        memory: { free: () => 1e12, total: () => 1e12 },
      });
      const engine = withoutPositions(r.stats.kvBytesPeak);
      const tag = `${method}, chunk ${chunk}: estimate ${e.kvBytesReading}, engine ${Math.round(engine)}`;
      assert.ok(e.kvBytesReading >= engine, tag);
      // and close to it: no further over than the engine's slack and the estimate's round numbers
      assert.ok(e.kvBytesReading <= 1.35 * engine, tag);
      // and close to it: no further over than the engine's own slack (a quarter of what a pass appends)

      r.s.dispose();
    }
  }
});

test('streaming read in chunks keeps exactly the sinks and the most recent tokens', { skip }, async () => {
  const B = 40;
  const r = await read(doc, { method: 'streaming', budget: B, chunk: 50 });
  const slots = r.stats.layers.length * r.stats.layers[0].heads.length;
  const L = doc.length;
  r.stats.tokenRetention.forEach((count, t) => {
    const kept = t < 4 || t >= L - (B - 4);
    assert.equal(count, kept ? slots : 0, `token ${t}`);
  });
  r.s.dispose();
});

test('packed positions: a document that fits takes only the positions of what it keeps, and answers', {
  skip,
}, async () => {
  // 415 tokens in 512 positions leave 97: packed at 20%, the document takes what its fullest head keeps.
  const own = await read(doc, { method: 'ada-snapkv', budget: 0.2 });
  const packed = await read(doc, { method: 'ada-snapkv', budget: 0.2, packPositions: true });
  assert.equal(own.nPast, 415);
  assert.equal(own.stats.rebased, false);
  const fullest = Math.max(...packed.s.memory().headLengths.flat());
  assert.equal(packed.nPast, fullest, 'the frontier is the most entries a head keeps');
  assert.equal(packed.stats.positions, fullest);
  assert.ok(fullest < 415 / 2, `${fullest} positions`);
  assert.equal(packed.stats.rebased, true);
  // The same entries kept (packing moves positions, not entries), and the same statistics of what was kept.
  assert.deepEqual(packed.s.memory().headLengths, own.s.memory().headLengths);
  assert.deepEqual(packed.stats.tokenRetention, own.stats.tokenRetention);
  // The conversation goes on after the frontier, with the room compression freed.
  await packed.s.prefill([13, 13, 319, 411, 261]);
  assert.equal(packed.s.nPast, fullest + 5);
  const answer = await packed.s.generate({ n: 200, temperature: 0 });
  assert.equal(answer.tokens.length, 200, 'an answer longer than the 97 positions the document would leave');
  assert.ok(answer.text.trim().length > 0);
  // Nothing dropped, nothing to pack: the full cache keeps its positions.
  const full = await read(doc, { method: 'full', packPositions: true });
  assert.deepEqual([full.nPast, full.stats.rebased], [415, false]);
  for (const r of [own, packed, full]) r.s.dispose();
});

test('a document four times the context is read with re-based positions and answers', { skip }, async () => {
  // A budget whose kept entries alone outnumber the free positions: the longest heads' oldest entries share
  // position 0, and the read still leaves the conversation its room.
  const big = await read(longDoc(2048), { method: 'ada-snapkv', budget: 0.3, chunk: 'auto', rebase: true, room: 64 });
  assert.ok(big.stats.positions + 64 <= 512, `room for the conversation: ${big.stats.positions}`);
  assert.ok(Math.max(...big.s.memory().headLengths.flat()) > big.stats.positions, 'some head holds more than R');
  big.s.dispose();

  const tokens = longDoc(2048);
  const r = await read(tokens, { method: 'ada-snapkv', budget: 64, chunk: 'auto', rebase: true, room: 64 });
  const st = r.stats;
  assert.equal(st.rebased, true);
  assert.equal(st.prefixTokens, 2048);
  assert.ok(st.chunks > 4, `${st.chunks} chunks`);
  assert.ok(st.chunkTokens <= 512 / 4, `the engine's chunk fits the context: ${st.chunkTokens}`);
  assert.equal(r.nPast, st.positions);
  assert.ok(st.positions + 64 <= 512, `room for the conversation: ${st.positions}`);
  assert.equal(r.s.tokens().length, 2048);
  // A question and an answer after it.
  await r.s.prefill([13, 13, 319, 411, 261]);
  const answer = await r.s.generate({ n: 32, temperature: 0 });
  assert.equal(answer.tokens.length, 32);
  assert.ok(answer.text.trim().length > 0);
  // Back to the document: the tokens and positions of the question and answer are gone.
  r.s.truncate(st.positions);
  assert.equal(r.s.nPast, st.positions);
  assert.equal(r.s.tokens().length, 2048);
  // Saved and loaded, the re-based session continues the same way.
  const path = join(dir, 'rebased.folio-kv');
  await r.s.prefill([13, 13, 319, 411, 261]);
  await r.s.save(path);
  const before = await r.s.generate({ n: 16, temperature: 0 });
  const { session } = await model.loadSession(path, opts);
  const after = await session.generate({ n: 16, temperature: 0 });
  assert.equal(after.text, before.text);
  session.dispose();
  r.s.dispose();
});

test('a document longer than the positions is refused, saying how to read it', { skip }, async () => {
  const s = model.createSession(opts);
  await assert.rejects(
    s.compress(longDoc(1024), { method: 'ada-snapkv', budget: 0.2, chunk: 'auto' }),
    (e: EngineError) => e.code === 'CONTEXT_FULL' && /1024 tokens/.test(e.message) && /re-based/.test(e.message),
  );
  assert.equal(s.nPast, 0);
  // Even re-based, a context that cannot hold a chunk and the conversation's room is refused, and the session
  // stays empty.
  await assert.rejects(
    s.compress(longDoc(2048), { method: 'ada-snapkv', budget: 0.2, chunk: 128, rebase: true, room: 400 }),
    (e: EngineError) => e.code === 'CONTEXT_FULL' && /smaller room/.test(e.message),
  );
  assert.equal(s.nPast, 0);
  assert.equal(s.memory().bytesUsed, 0);
  s.dispose();
});

test('a chunked read reports progress over the whole document, is cancellable and leaves an empty session', {
  skip,
}, async () => {
  const s = model.createSession(opts);
  const tokens = longDoc(2048);
  const seen: [number, number][] = [];
  const p = s.compress(tokens, {
    method: 'ada-snapkv',
    budget: 0.1,
    chunk: 128,
    rebase: true,
    onProgress: (d, t) => {
      seen.push([d, t]);
      if (d >= 1000) s.cancel();
    },
  });
  await assert.rejects(p, (e: EngineError) => e.code === 'CANCELLED');
  assert.ok(seen.length > 3 && seen.every(([, t]) => t === 2048), 'progress counts the whole document');
  assert.ok(
    seen.every(([d], i) => i === 0 || d >= seen[i - 1][0]),
    'progress never goes back',
  );
  assert.equal(s.nPast, 0);
  assert.equal(s.memory().bytesUsed, 0);
  const again = await s.compress(tokens, { method: 'ada-snapkv', budget: 0.1, chunk: 128, rebase: true });
  assert.equal(again.stats.rebased, true);
  s.dispose();
});

// The scorers that carry state from chunk to chunk (ExpectedAttention's query statistics, KVzip's largest attention
// so far, with the global schedule) resume as exactly as SnapKV's; KVzip's progress counts the re-reading too.
for (const method of ['ada-snapkv', 'ada-expected', 'ada-kvzip-global'] as const)
  test(`a read cut short resumes from its last checkpoint and ends exactly as an uninterrupted read (${method})`, {
    skip,
  }, async () => {
    const tokens = longDoc(2048);
    const o = { method, budget: 64, chunk: 128, rebase: true, room: 32 };
    const whole = await read(tokens, o);
    const wholeAnswer = await whole.s.generate({ n: 24, temperature: 0 });

    const checkpoint = join(dir, 'reading.folio-kv');
    const first = model.createSession(opts);
    await assert.rejects(
      first.compress(tokens, {
        ...o,
        checkpoint,
        checkpointSeconds: 0,
        onProgress: (d, total) => {
          if (d >= 0.54 * total) first.cancel();
        },
      }),
      (e: EngineError) => e.code === 'CANCELLED',
    );
    first.dispose();
    assert.ok(existsSync(checkpoint), 'a checkpoint was left');

    // Another read (another budget) does not take it: it starts from the beginning.
    const seenOther: number[] = [];
    const other = model.createSession(opts);
    await other.compress(tokens, {
      ...o,
      budget: 48,
      checkpoint: join(dir, 'other.folio-kv'),
      onProgress: (d) => seenOther.push(d),
    });
    assert.ok(seenOther[0] < 128, `started at ${seenOther[0]}`);
    other.dispose();

    const seen: number[] = [];
    const resumed = model.createSession(opts);
    let total = 0;
    const r = await resumed.compress(tokens, {
      ...o,
      checkpoint,
      checkpointSeconds: 0,
      onProgress: (d, t) => {
        seen.push(d / t);
        total = t;
      },
    });
    assert.ok(seen[0] > 0.49, `resumed at ${seen[0]}`);
    assert.equal(
      total,
      method === 'ada-kvzip-global' ? 2 * tokens.length : tokens.length,
      'progress in tokens of work',
    );
    assert.ok(!existsSync(checkpoint), 'the checkpoint is removed once the read is done');
    assert.deepEqual(Array.from(r.stats.tokenRetention), Array.from(whole.stats.tokenRetention));
    assert.deepEqual(
      r.stats.layers.map((l) => l.heads.map((h) => h.kept)),
      whole.stats.layers.map((l) => l.heads.map((h) => h.kept)),
    );
    assert.equal(r.stats.rebased, whole.stats.rebased);
    assert.equal(r.nPast, whole.nPast);
    assert.deepEqual(Array.from(r.logits), Array.from(whole.logits));
    const answer = await resumed.generate({ n: 24, temperature: 0 });
    assert.equal(answer.text, wholeAnswer.text);
    resumed.dispose();
    whole.s.dispose();

    // A damaged checkpoint is ignored: the read starts over and completes.
    writeFileSync(checkpoint, 'FOLIOKV\0 not a session at all');
    const again = model.createSession(opts);
    const fresh = await again.compress(tokens, { ...o, checkpoint });
    assert.deepEqual(Array.from(fresh.stats.tokenRetention), Array.from(r.stats.tokenRetention));
    again.dispose();
  });
