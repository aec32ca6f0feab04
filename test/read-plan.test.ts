// How the app reads a document (electron/services/read-plan.ts): the context sized to the document and the
// memory, one pass or chunks, re-based positions beyond the model's context, on a Llama-3.2-1B shape with
// faked memory.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import type { ApiError, CompressionSettings } from '../electron/api/contract.ts';
import { estimateMemory, type ModelShape } from '../electron/models/estimate.ts';
import { llama1b } from './helpers/model-shapes.ts';
import { ONE_PASS_MAX_TOKENS, planRead, type ReadPlanInput } from '../electron/services/read-plan.ts';

const GiB = 1024 ** 3;
const compression: CompressionSettings = { method: 'ada-snapkv', budget: 0.2, alpha: 0.2, window: 32, kernel: 7 };
const memory = (free: number) => ({ free: () => free, total: () => 16 * GiB });

function plan(prefixTokens: number, o: Partial<ReadPlanInput> = {}) {
  return planRead({
    prefixTokens,
    shape: llama1b,
    compression,
    kv: { k: 'f16', v: 'f16', rotate: false },
    contextCap: null,
    conversationRoom: null,
    memory: memory(64 * GiB),
    ...o,
  });
}

test('plenty of memory: a document that fits is read in one pass into the model’s whole context', () => {
  const p = plan(5000);
  assert.deepEqual([p.nCtx, p.room, p.chunk, p.rebase], [131072, 1024, 0, false]);
  assert.equal(p.note, 'Read in one pass, then compressed.');
});

test('the context is the largest whose estimate fits the memory, from the document and its room up', () => {
  const free = 3 * GiB;
  const p = plan(5000, { memory: memory(free) });
  assert.equal(p.chunk, 0);
  assert.ok(p.nCtx >= 5000 + 1024 && p.nCtx < 131072, `${p.nCtx}`);
  const at = (nCtx: number) =>
    estimateMemory(llama1b, { nCtx, conversationTokens: nCtx - 5000, compression, memory: memory(free) }).fits;
  assert.equal(at(p.nCtx), true);
  assert.equal(at(p.nCtx + 1), false);
  assert.match(p.note, /the context is [\d,]+ positions, what the memory allows/);
});

test('a setting caps the context; a cap beyond the model’s trained context is refused with the reason', () => {
  const p = plan(3000, { contextCap: 4096 });
  assert.deepEqual([p.nCtx, p.room, p.chunk, p.rebase], [4096, 1024, 0, false]);
  assert.throws(
    () => plan(3000, { contextCap: 200_000 }),
    (e: ApiError) => e.code === 'CONTEXT_TOO_LONG' && /trained context of 131072/.test(e.message),
  );
  // The room for the conversation is a setting too, at most a quarter of the context.
  assert.equal(plan(3000, { conversationRoom: 300 }).room, 300);
  assert.equal(plan(3000, { contextCap: 4096, conversationRoom: 3000 }).room, 1024);
});

test('a document that fits but not with the whole room is read at its own positions with what is left', () => {
  const small: ModelShape = { ...llama1b, contextLength: 512 };
  const own = { ...compression, positions: 'own' as const };
  const p = plan(420, { shape: small, compression: own });
  assert.deepEqual([p.nCtx, p.room, p.chunk, p.rebase, p.pack], [512, 92, 0, false, false]);
  assert.match(p.note, /leaves 92 positions for the conversation, whose older turns are compressed \(or set aside\)/);
  // Less than 64 left: re-based instead.
  assert.equal(plan(460, { shape: small, compression: own }).rebase, true);
});

test('automatic positions: packed where the document would leave the conversation less than its room', () => {
  const small: ModelShape = { ...llama1b, contextLength: 512 };
  // 393 of 512 positions (the walk's story-garden.pdf on stories260K): 119 left, under the room of 128.
  const p = plan(393, { shape: small });
  assert.deepEqual([p.nCtx, p.rebase, p.pack], [512, false, true]);
  assert.match(
    p.note,
    /would leave the conversation 119 of 512 positions, less than its room of 128: its kept entries were packed/,
  );
  assert.match(p.note, /less accurate, and their page chips come from the words they share/);
  // With room to spare the document keeps its own positions (and its citations).
  assert.equal(plan(300, { shape: small }).pack, false);
  // Nothing to pack when nothing is dropped: the full cache, or a budget above the document's length.
  assert.equal(plan(393, { shape: small, compression: { ...compression, method: 'full' } }).pack, false);
  assert.equal(plan(393, { shape: small, compression: { ...compression, budget: 400 } }).pack, false);
  // Asked for: packed even with room to spare; the document's own: never (but beyond the context, re-based).
  assert.equal(plan(300, { shape: small, compression: { ...compression, positions: 'packed' } }).pack, true);
  const long = plan(200_000, { compression: { ...compression, positions: 'own' } });
  assert.deepEqual([long.rebase, long.pack], [true, false]);
  assert.equal(plan(200_000).pack, true);
});

test('longer than one pass reads, or a one pass that does not fit the memory: chunks', () => {
  const long = plan(ONE_PASS_MAX_TOKENS + 1);
  assert.deepEqual([long.chunk, long.rebase], ['auto', false]);
  assert.match(long.note, /^Read in chunks.*longer than 8,192 tokens/);
  // 100K tokens in one pass hold one layer's whole cache and the scores of the window; in chunks they do not.
  const L = 8000;
  const onePass = estimateMemory(llama1b, { nCtx: L + 1024, conversationTokens: 1024, compression });
  const chunked = estimateMemory(llama1b, {
    nCtx: L + 1024,
    conversationTokens: 1024,
    compression,
    chunkTokens: 1600,
  });
  assert.ok(chunked.totalBytes < onePass.totalBytes);
  const between = (onePass.totalBytes + chunked.totalBytes) / 2;
  const p = plan(L, { memory: memory(between) });
  assert.equal(p.chunk, 'auto');
  assert.match(p.note, /one pass would not fit the memory/);
});

test('beyond the model’s context: chunks with re-based positions, labelled; no memory at all: refused', () => {
  const p = plan(200_000);
  assert.deepEqual([p.nCtx, p.chunk, p.rebase], [131072, 'auto', true]);
  assert.match(p.note, /does not fit the model's context of 131,072.*re-based positions.*less accurately/);
  assert.throws(
    () => plan(5000, { memory: memory(100e6) }),
    (e: ApiError) => e.code === 'NOT_ENOUGH_MEMORY' && /cannot be read: it needs/.test(e.message),
  );
});
