// The chat driver (electron/services/conversation.ts) on stories260K through the engine process, as the app and
// `folio chat` drive it: forks of one compressed document do not disturb each other, a replayed conversation
// leaves the cache as the live one did, stop sequences cut the answer where the unstopped one had the
// sequence, a question that does not fit is refused before anything changes, a full context compresses the
// older turns by the next question (or sets them aside), and reset goes back to the document. (The chat
// template's re-sent answer is run end to end by chat.test.ts.)
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { EventBus } from '../electron/api/dispatcher.ts';
import { ContextFullError, ConversationSession, generateAnswer } from '../electron/services/conversation.ts';
import { EngineManager, type LoadedModel } from '../electron/services/engine-manager.ts';
import { documentPrefix, type ChatFormat, type DocumentPrefix } from '../electron/services/prefix.ts';
import { EngineClient } from '../electron/engine/client.ts';
import { missing, repoRoot, sharedModel } from './helpers/shared.ts';

const stories = sharedModel('stories260K.gguf');
const skip = missing(stories);
const lily = readFileSync(join(repoRoot, 'test/docs/lily-and-the-red-kite.txt'), 'utf8');
const greedy = { temperature: 0, seed: 1 };

let client: EngineClient;
let engine: EngineManager;
let model: LoadedModel;
let format: ChatFormat;
let documentSession: string;
let L = 0;

/** A fresh conversation over the compressed document (the prefix's Conversation is per chat). */
async function fork(): Promise<ConversationSession> {
  const prefix: DocumentPrefix = await documentPrefix(
    (t, o) => engine.call('tokenize', { modelId: model.engineId, text: t, ...o }),
    format,
    '',
    [{ page: 1, text: lily }],
  );
  return ConversationSession.fork(engine, model, format, prefix.conversation, documentSession);
}

before(async () => {
  if (skip) return;
  client = new EngineClient();
  engine = new EngineManager(client, new EventBus(), () => ({
    nCtx: null,
    threads: null,
    kvType: 'f16',
    kvTypeV: null,
    kvRotate: false,
    backend: 'auto',
  }));
  model = await engine.ensureModel(stories, stories);
  format = await engine.chatFormat(model);
  const prefix = await documentPrefix(
    (t, o) => engine.call('tokenize', { modelId: model.engineId, text: t, ...o }),
    format,
    '',
    [{ page: 1, text: lily }],
  );
  const h = await engine.createSession(model);
  const r = await engine.call('compress', {
    sessionId: h.sessionId,
    tokens: prefix.tokenized.tokens,
    options: {
      method: 'ada-snapkv',
      budget: 0.2,
      alpha: 0.2,
      window: 32,
      kernel: 7,
    },
  });
  documentSession = h.sessionId;
  L = r.nPast;
});

after(async () => {
  if (skip) return;
  await client.stop();
});

test('a turn: the question after the document, the answer streamed and kept in the cache; forks are independent', {
  skip,
}, async () => {
  const a = await fork();
  const b = await fork();
  assert.deepEqual(a.status(), {
    position: L,
    nCtx: 512,
    free: 512 - L,
    turns: 0,
    forgottenTurns: 0,
    compressedTurns: 0,
  });
  const { promptTokens } = await a.ask('What did Lily have?');
  assert.ok(promptTokens > 3);
  let streamed = '';
  const answer = await a.answer({ ...greedy, maxTokens: 12, onText: (t) => (streamed += t) });
  assert.equal(streamed, answer.text, 'what streamed is the answer');
  assert.ok(answer.tokens >= 1 && answer.tokens <= 12);
  assert.equal(a.status().position, L + promptTokens + answer.cacheTokens);
  assert.equal(a.status().turns, 1);

  // The other fork still holds the document alone, and answers the same question the same way.
  assert.equal(b.status().position, L);
  await b.ask('What did Lily have?');
  assert.equal((await b.answer({ ...greedy, maxTokens: 12 })).text, answer.text);

  // Reset: back to the document, the same answer again.
  await a.reset();
  assert.deepEqual(a.status(), {
    position: L,
    nCtx: 512,
    free: 512 - L,
    turns: 0,
    forgottenTurns: 0,
    compressedTurns: 0,
  });
  await a.ask('What did Lily have?');
  assert.equal((await a.answer({ ...greedy, maxTokens: 12 })).text, answer.text);
  await a.dispose();
  await b.dispose();
});

test('a replayed conversation leaves the cache where the live one did', { skip }, async () => {
  const live = await fork();
  await live.ask('What did Lily have?');
  const first = await live.answer({ ...greedy, maxTokens: 10 });
  await live.ask('Who helped her?');
  const liveText = live.conversation.text,
    livePosition = live.status().position;

  const replayed = await fork();
  await replayed.replay([
    { role: 'user', content: 'What did Lily have?' },
    { role: 'assistant', content: first.text },
    { role: 'user', content: 'Who helped her?' },
  ]);
  assert.equal(replayed.conversation.text, liveText, 'the cache holds the same text');
  assert.equal(replayed.status().turns, 2);
  // The answer is tokenized again from its text, which may split at another place than generation did.
  assert.ok(
    Math.abs(replayed.status().position - livePosition) <= 2,
    `${replayed.status().position} vs ${livePosition}`,
  );
  await live.dispose();
  await replayed.dispose();
});

test('stop sequences: the answer is cut before the first one, and nothing after it is streamed', { skip }, async () => {
  const free = await fork();
  await free.ask('Where did Lily go?');
  const whole = await free.answer({ ...greedy, maxTokens: 24 });
  assert.ok(whole.text.length > 8, whole.text);
  const stop = whole.text.slice(4, 7);
  const cut = whole.text.slice(0, whole.text.indexOf(stop));

  const stopped = await fork();
  await stopped.ask('Where did Lily go?');
  let streamed = '';
  const r = await stopped.answer({
    ...greedy,
    maxTokens: 24,
    stops: ['never appears', stop],
    onText: (t) => (streamed += t),
  });
  assert.equal(r.stopReason, 'stop');
  assert.equal(r.text, cut);
  assert.equal(streamed, cut, 'the held-back start of the stop sequence was never sent');
  // Generation stops once the engine gets the cancellation, a token or a few later (the text is cut exactly).
  assert.ok(r.tokens <= whole.tokens);
  await free.dispose();
  await stopped.dispose();
});

test('a question that does not fit is refused before anything changes; an answer stops at the end of the context', {
  skip,
}, async () => {
  const c = await fork();
  const long = 'Lily ran to the park with her red kite. '.repeat(40);
  await assert.rejects(c.ask(long), (e: unknown) => {
    assert.ok(e instanceof ContextFullError);
    assert.equal(e.code, 'CONTEXT_FULL');
    assert.equal(e.free, 512 - L);
    assert.ok(e.promptTokens + 1 > e.free);
    return true;
  });
  assert.deepEqual(c.status(), {
    position: L,
    nCtx: 512,
    free: 512 - L,
    turns: 0,
    forgottenTurns: 0,
    compressedTurns: 0,
  });
  await c.ask('What did Lily have?');
  const before = c.status().free;
  // More tokens than the context has room for: the answer gets what is left, the cache ends full, and the
  // answer says it stopped at the end of the context.
  const r = await c.answer({ temperature: 0.8, seed: 3, maxTokens: 10_000 });
  assert.ok(r.stopReason === 'context' || r.stopReason === 'eog', r.stopReason);
  if (r.stopReason === 'context') {
    assert.equal(r.tokens, before);
    assert.equal(c.status().free, 0);
  }
  // The next question compresses the older turn to half its positions (the entries the question attends to
  // most): the document stays as it was, the chat goes on.
  const span = c.status().position - L;
  const { promptTokens } = await c.ask('Who helped her?');
  assert.equal(c.status().compressedTurns, 1);
  assert.equal(c.status().forgottenTurns, 0);
  assert.equal(c.status().position, L + Math.floor(span / 2) + promptTokens);
  const next = await c.answer({ ...greedy, maxTokens: 8 });
  assert.ok(next.tokens > 0);
  await c.dispose();
});

/** Text of at most `n` − 4 tokens: an answer appended to fill most of what is free. */
async function filler(n: number): Promise<string> {
  const unit = 'Lily ran to the park with her red kite. ';
  const count = async (k: number) =>
    (
      await engine.call('tokenize', {
        modelId: model.engineId,
        text: unit.repeat(k),
        addSpecial: false,
        parseSpecial: false,
      })
    ).tokens.length;
  let lo = 0,
    hi = n;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if ((await count(mid)) <= n - 4) lo = mid;
    else hi = mid - 1;
  }
  return unit.repeat(lo);
}

test('a full context: the older turns are compressed by the next question; set aside whole when that cannot make room', {
  skip,
}, async () => {
  const a = await fork();
  const b = await fork();
  for (const c of [a, b]) {
    await c.ask('What did Lily have?');
    await c.appendAnswer(await filler(c.status().free));
  }
  const span = a.status().position - L;
  // The question and its answer's room (all that is free) do not fit: the one older turn keeps half its
  // positions, the entries the question attends to most.
  const { promptTokens, compressedTurns, forgottenTurns } = await a.ask('Who helped her?', {
    answerRoom: a.status().free,
  });
  assert.deepEqual({ compressedTurns, forgottenTurns }, { compressedTurns: 1, forgottenTurns: 0 });
  assert.deepEqual(a.status(), {
    position: L + Math.floor(span / 2) + promptTokens,
    nCtx: 512,
    free: 512 - (L + Math.floor(span / 2) + promptTokens),
    turns: 2,
    forgottenTurns: 0,
    compressedTurns: 1,
  });
  assert.ok((await a.answer({ ...greedy, maxTokens: 8 })).tokens > 0, 'the chat goes on');
  // An answer room that leaves the older turn fewer than MIN_COMPRESSED_POSITIONS: it is set aside whole.
  const room = 512 - L - promptTokens - 2;
  assert.equal((await b.ask('Who helped her?', { answerRoom: room })).forgottenTurns, 1);
  assert.equal(b.status().forgottenTurns, 1);
  assert.equal(b.status().compressedTurns, 0);
  assert.equal(b.status().position, L + promptTokens);
  await a.dispose();
  await b.dispose();
});

test('a long chat never hits the wall: the older turns are compressed by halves, document whole', {
  skip,
}, async () => {
  const c = await fork();
  const positions: number[] = [];
  for (let i = 0; i < 12; i++) {
    await c.ask(`Question ${i + 1}: what did Lily do with her kite?`);
    const a = await c.answer({ ...greedy, maxTokens: 40 });
    assert.ok(a.tokens > 0, `answer ${i + 1}`);
    positions.push(c.status().position);
    assert.ok(c.status().position <= 512);
  }
  const st = c.status();
  assert.ok(st.compressedTurns > 1, `${st.compressedTurns} turns compressed together`);
  assert.ok(st.compressedTurns + st.forgottenTurns < 12, 'the newest turns stay whole');
  assert.equal(st.forgottenTurns, 0, 'halving the older turns made room every time');
  // The document's entries were never touched: going back to it is where it began.
  const fresh = await fork();
  assert.equal(fresh.status().position, L);
  await fresh.dispose();
  await c.dispose();
});

test('generateAnswer alone: a session that holds a whole prompt, no document', { skip }, async () => {
  const h = await engine.createSession(model);
  const t = await engine.call('tokenize', {
    modelId: model.engineId,
    text: 'Once upon a time',
    addSpecial: true,
    parseSpecial: false,
  });
  await engine.call('prefill', { sessionId: h.sessionId, tokens: t.tokens });
  const r = await generateAnswer(engine, h.sessionId, { ...greedy, maxTokens: 6 });
  assert.equal(r.tokens, 6);
  assert.equal(r.stopReason, 'length');
  assert.equal(r.pieces.join(''), r.text);
  assert.equal(r.nPast, t.tokens.length + 6);
  await engine.disposeSession(h.sessionId);
});
