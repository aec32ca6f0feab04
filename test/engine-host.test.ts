// The engine process and its client: the real addon in a child process behind protocol.ts, with
// stories260K (the shared model) and random-weight models. Load, tokenize, compress, prefill, generate with
// streamed tokens, fork, save / load; errors keep their codes across the process boundary; cancellation of a
// long prefill; a host killed mid-generation (and one that aborts itself) is reported and replaced; stop()
// ends a healthy host gracefully and a hung one by force; the host also speaks Electron's parentPort.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadAddon, type Model, type SessionMemory } from '../electron/engine/binding.ts';
import {
  EngineClient,
  type CrashEvent,
  type EngineClientStatus,
  type EngineState,
  type RestartEvent,
} from '../electron/engine/client.ts';
import { ModelInfo, tokenCharOffsets, TEST_HOOKS_ENV } from '../electron/engine/protocol.ts';
import { spawnNodeHost } from '../electron/engine/spawn.ts';
import { EventBus } from '../electron/api/dispatcher.ts';
import { EngineManager } from '../electron/services/engine-manager.ts';
import { missing, sharedModel, sharedReference } from './helpers/shared.ts';
import { SLOW_MODEL, writeRandomModel } from './helpers/random-model.ts';
import { engineRejection } from './helpers/rejections.ts';

const stories = sharedModel('stories260K.gguf');
const longCase = sharedReference('stories260K/p4_long.json');
const skip = missing(stories, longCase);
const dir = mkdtempSync(join(tmpdir(), 'folio-host-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

/** A random model large enough that a 2048-token prefill takes seconds on two cores (~50 MB, F32). */
const bigModel = join(dir, 'big-random.gguf');
/** A small random model for the crash tests. */
const smallModel = join(dir, 'small-random.gguf');

const hooks = { [TEST_HOOKS_ENV]: '1' };
const clients: EngineClient[] = [];
function newClient(opts: ConstructorParameters<typeof EngineClient>[0] = {}): EngineClient {
  const c = new EngineClient({ restartDelayMs: 0, ...opts, env: { ...hooks, ...opts.env } });
  clients.push(c);
  return c;
}

function waitFor(c: EngineClient, state: EngineState, ms = 20_000): Promise<void> {
  if (c.status().state === state) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no '${state}' within ${ms} ms (now ${c.status().state})`));
    }, ms);
    const off = c.on('status', (s) => {
      if (s.state === state) {
        clearTimeout(timer);
        off();
        resolve();
      }
    });
  });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

let client: EngineClient;

before(async () => {
  writeRandomModel(bigModel, SLOW_MODEL);
  writeRandomModel(smallModel, { nCtx: 2048, seed: 3 });
  client = newClient();
  await client.start();
});

after(async () => {
  await Promise.all(clients.map((c) => c.stop()));
  for (const m of inProcess.values()) (await m).dispose();
});

/** The addon's own model of a file, in this process (one per path), to hold the host's answers against. */
const inProcess = new Map<string, Promise<Model>>();
function inProcessModel(path: string): Promise<Model> {
  let m = inProcess.get(path);
  if (!m) inProcess.set(path, (m = loadAddon().loadModel(path)));
  return m;
}

let snapshots = 0;
/**
 * What a host session holds (its tokens and its cache), read the way the app reads a session back: the host
 * saves it and the addon loads the file here. The protocol has no request for this; the app never needs one.
 */
async function snapshot(sessionId: string, modelPath: string): Promise<{ tokens: Int32Array; memory: SessionMemory }> {
  const file = join(dir, `snapshot-${++snapshots}.session`);
  await client.call('save', { sessionId, path: file });
  const { session } = await (await inProcessModel(modelPath)).loadSession(file);
  try {
    return { tokens: session.tokens(), memory: session.memory() };
  } finally {
    session.dispose();
    rmSync(file);
  }
}

test('the host starts, says hello and answers pings', async () => {
  const s = client.status();
  assert.equal(s.state, 'ready');
  // The CPU here, or the GPU `auto` found, with the reason either way.
  assert.match(s.backend, /^(cpu|cuda|vulkan) \(/);
  assert.ok(s.backendReason.length > 0);
  assert.equal(s.restarts, 0);
  const info = client.hostInfo()!;
  // Every backend by name, as the settings may choose one: the CPU always; each GPU usable or not, and why.
  assert.deepEqual(Object.keys(info.backends).sort(), ['cpu', 'cuda', 'vulkan']);
  assert.equal(info.backends.cpu.available, true);
  for (const b of ['cuda', 'vulkan'] as const) {
    const o = info.backends[b];
    assert.ok(o.reason.length > 0, `${b}: a reason`);
    assert.match(o.label, o.available ? new RegExp(`^${b} \\(.+\\)$`) : new RegExp(`^${b} \\(unavailable\\)$`));
    assert.equal(o.gpu !== null, o.available);
  }
  assert.equal(info.transport, 'node-ipc');
  assert.equal(info.testHooks, true);
  assert.equal(info.addonPath, process.env.FOLIO_ADDON ?? info.addonPath, 'FOLIO_ADDON is inherited');
  const pong = await client.call('ping', {});
  assert.equal(pong.pid, s.pid);
  assert.notEqual(pong.pid, process.pid);
  const small = await client.call('loadModel', { path: smallModel });
  assert.equal(small.info.architecture, 'llama');
  await client.call('unloadModel', { modelId: small.modelId });
});

// ---------------------------------------------------------------------------------------------------------
// stories260K: the whole path of a chat over a compressed document

let modelId = '';
let docSession = '';
const ref = skip
  ? null
  : (JSON.parse(readFileSync(longCase, 'utf8')) as { prompt: string; tokens: number[]; token_pieces_hex: string[] });
const question = [13, 13, 319, 411, 261, 376, 298];

test("load and tokenize: llama.cpp's tokens, piece lengths, character offsets, long texts off the main thread", {
  skip,
}, async () => {
  const loaded = await client.call('loadModel', { path: stories });
  modelId = loaded.modelId;
  assert.equal(loaded.info.architecture, 'llama');
  assert.equal(loaded.info.path, stories);
  assert.deepEqual(
    loaded.info,
    ModelInfo.parse((await inProcessModel(stories)).info()),
    'the host reports the model as the addon does',
  );

  const t = await client.call('tokenize', { modelId, text: ref!.prompt });
  assert.ok(t.tokens instanceof Int32Array);
  assert.deepEqual([...t.tokens], ref!.tokens);
  // Piece lengths are llama.cpp's pieces, the BOS the tokenizer added counting 0.
  assert.deepEqual(
    [...t.pieceBytes],
    ref!.token_pieces_hex.map((h, i) => (i === 0 ? 0 : h.length / 2)),
  );
  assert.equal(t.textBytes, Buffer.byteLength(ref!.prompt));
  const starts = tokenCharOffsets(ref!.prompt, t.pieceBytes);
  assert.equal(ref!.prompt.slice(starts[1], starts[2]), 'Once', 'the dummy-prefix space is not in the text');
  assert.equal(ref!.prompt.slice(starts[2], starts[3]), ' upon');
  const back = (await client.call('detokenize', { modelId, tokens: t.tokens })).text;
  assert.equal(back.trimStart(), ref!.prompt);

  // Texts and token lists above the inline limits go through the host's tokenizer worker: the same answers
  // as the addon in-process.
  const long = (ref!.prompt + ' Ünïcödé — 東京 ✓\n').repeat(100);
  const direct = await loadAddon().loadModel(stories);
  const w = await client.call('tokenize', { modelId, text: long });
  assert.deepEqual([...w.tokens], [...direct.tokenize(long)]);
  assert.deepEqual(
    [...w.pieceBytes.slice(1)],
    [...w.tokens.slice(1)].map((id) => direct.tokenToPiece(id).length),
  );
  assert.ok(w.tokens.length > 32 * 1024);
  assert.equal((await client.call('detokenize', { modelId, tokens: [...w.tokens] })).text, direct.detokenize(w.tokens));
  assert.equal(
    (await client.call('detokenize', { modelId, tokens: w.tokens.slice(0, 1000) })).text,
    direct.detokenize(w.tokens.slice(0, 1000)),
  );
  direct.dispose();
});

test('compress a document with ada-snapkv, prefill a question, generate with streamed tokens', { skip }, async () => {
  const s = await client.call('createSession', { modelId, options: { nCtx: 512, nThreads: 2, kvType: 'f32' } });
  docSession = s.sessionId;
  assert.equal(s.nCtx, 512);
  const progress: [number, number][] = [];
  const c = await client.call(
    'compress',
    { sessionId: docSession, tokens: ref!.tokens, options: { method: 'ada-snapkv', budget: 0.3 } },
    { onProgress: (d, t) => progress.push([d, t]) },
  );
  assert.equal(c.stats.method, 'ada-snapkv');
  assert.equal(c.stats.compressed, true);
  assert.equal(c.stats.prefixTokens, 415);
  assert.ok(c.stats.tokenRetention instanceof Int32Array && c.stats.tokenRetention.length === 415);
  assert.ok(c.stats.kvBytesKept < c.stats.kvBytesFull);
  assert.equal(c.nPast, 415);
  assert.equal(c.logits, null, 'no logits unless asked');
  assert.ok(
    progress.length > 0 && progress.every(([d, t], i) => d <= t && (i === 0 || d >= progress[i - 1][0])),
    'progress climbs',
  );

  const p = await client.call('prefill', { sessionId: docSession, tokens: question, logits: 'last' });
  assert.equal(p.nPast, 415 + question.length);
  assert.ok(p.logits instanceof Float32Array && p.logits.length === 512);

  const streamed: { id: number; text: string }[] = [];
  let resolved = false;
  const gen = client.call(
    'generate',
    { sessionId: docSession, n: 24, temperature: 0 },
    {
      onToken: (t) => {
        assert.equal(resolved, false, 'a token after the promise resolved');
        streamed.push(t);
      },
    },
  );
  const g = await gen.then((r) => {
    resolved = true;
    return r;
  });
  assert.equal(g.stopReason, 'length');
  assert.deepEqual(
    streamed.map((t) => t.id),
    g.tokens,
    'every token streamed, in order',
  );
  assert.equal(streamed.map((t) => t.text).join(''), g.text);

  // The same steps in this process give the same tokens: the protocol changes nothing.
  const direct = await loadAddon().loadModel(stories);
  const ds = direct.createSession({ nCtx: 512, nThreads: 2, kvType: 'f32' });
  await ds.compress(ref!.tokens, { method: 'ada-snapkv', budget: 0.3 });
  const dp = await ds.prefill(question);
  assert.deepEqual([...p.logits!], [...dp.logits]);
  assert.deepEqual((await ds.generate({ n: 24, temperature: 0 })).tokens, g.tokens);
  ds.dispose();
  direct.dispose();
});

test('fork, truncate, tokens, memory, save and loadSession', { skip }, async () => {
  const before = (await snapshot(docSession, stories)).tokens;
  assert.equal(before.length, 415 + question.length + 24);
  const f = await client.call('fork', { sessionId: docSession });
  assert.notEqual(f.sessionId, docSession);
  assert.equal(f.nPast, before.length);
  assert.deepEqual([...(await snapshot(f.sessionId, stories)).tokens], [...before]);
  // The fork goes on as the original does.
  const fromFork = await client.call('generate', { sessionId: f.sessionId, n: 8, temperature: 0 });
  const fromOriginal = await client.call('generate', { sessionId: docSession, n: 8, temperature: 0 });
  assert.deepEqual(fromFork.tokens, fromOriginal.tokens);
  const t = await client.call('truncate', { sessionId: f.sessionId, n: 415 + question.length });
  assert.equal(t.nPast, 415 + question.length);
  assert.equal((await snapshot(f.sessionId, stories)).tokens.length, 415 + question.length);
  assert.equal((await snapshot(docSession, stories)).tokens.length, before.length + 8, 'the original is untouched');
  const mem = (await snapshot(f.sessionId, stories)).memory;
  assert.equal(mem.kvType, 'f32');
  assert.ok(mem.bytesUsed > 0 && mem.headLengths.length === 5);

  const file = join(dir, 'doc.session');
  assert.deepEqual(await client.call('save', { sessionId: docSession, path: file, meta: '{"doc":1}' }), { ok: true });
  const loaded = await client.call('loadSession', {
    modelId,
    path: file,
    options: { nCtx: 512, nThreads: 2, kvType: 'f32' },
  });
  assert.equal(loaded.meta, '{"doc":1}');
  const saved = (await snapshot(docSession, stories)).tokens;
  assert.deepEqual([...(await snapshot(loaded.sessionId, stories)).tokens], [...saved]);
  await client.call('prefill', { sessionId: loaded.sessionId, tokens: [13] });
  await client.call('prefill', { sessionId: docSession, tokens: [13] });
  const a = await client.call('generate', { sessionId: loaded.sessionId, n: 8, temperature: 0 });
  const b = await client.call('generate', { sessionId: docSession, n: 8, temperature: 0 });
  assert.deepEqual(a.tokens, b.tokens);
  await client.call('disposeSession', { sessionId: f.sessionId });
  await client.call('disposeSession', { sessionId: loaded.sessionId });
  assert.equal((await engineRejection(snapshot(f.sessionId, stories))).code, 'UNKNOWN_SESSION');
  assert.deepEqual(
    client.handles().sessions.map((s) => s.sessionId),
    [docSession],
  );
});

test('errors keep their codes across the process boundary; malformed requests do not hurt the host', async () => {
  const pid = client.status().pid;
  const notFound = await engineRejection(client.call('loadModel', { path: join(dir, 'missing.gguf') }));
  assert.equal(notFound.code, 'FILE_OPEN');
  assert.equal(notFound.method, 'loadModel');
  assert.match(notFound.message, /missing\.gguf/);
  writeFileSync(join(dir, 'junk.gguf'), 'not a gguf file at all, not at all');
  assert.match((await engineRejection(client.call('loadModel', { path: join(dir, 'junk.gguf') }))).code, /^GGUF_/);

  const { modelId: small } = await client.call('loadModel', { path: smallModel });
  const { sessionId } = await client.call('createSession', { modelId: small, options: { nCtx: 256, nThreads: 1 } });
  assert.equal((await engineRejection(client.call('generate', { sessionId, n: 4 }))).code, 'NO_PROMPT');
  assert.equal(
    (
      await engineRejection(
        client.call('compress', { sessionId, tokens: [1, 5, 6], options: { method: 'ada-snapkv' } }),
      )
    ).code,
    'INVALID_ARGUMENT',
  );
  writeFileSync(join(dir, 'junk.session'), 'not a session');
  assert.match(
    (await engineRejection(client.call('loadSession', { modelId: small, path: join(dir, 'junk.session') }))).code,
    /^SESSION_FILE_/,
  );
  assert.equal(
    (await engineRejection(client.call('prefill', { sessionId: 's-nope', tokens: [1] }))).code,
    'UNKNOWN_SESSION',
  );
  assert.equal(
    (await engineRejection(client.call('tokenize', { modelId: 'm-nope', text: 'x' }))).code,
    'UNKNOWN_MODEL',
  );

  // The client checks what it sends...
  const local = await engineRejection(client.call('truncate', { sessionId, n: -1 }));
  assert.equal(local.code, 'BAD_REQUEST');
  // ...and the host checks what it gets.
  const bad = await engineRejection(client.callUnchecked('prefill', { sessionId: 42, tokens: 'abc' }));
  assert.equal(bad.code, 'BAD_REQUEST');
  assert.match(bad.message, /^prefill: sessionId/);
  assert.equal(
    (await engineRejection(client.callUnchecked('prefill', { sessionId, tokens: [1.5] }))).code,
    'BAD_REQUEST',
  );
  assert.equal(
    (await engineRejection(client.callUnchecked('generate', { sessionId, temprature: 0 }))).code,
    'BAD_REQUEST',
  );
  assert.equal((await engineRejection(client.callUnchecked('formatDisk', {}))).code, 'UNKNOWN_METHOD');
  const notices: string[] = [];
  const off = client.on('notice', (n) => notices.push(n.code));
  client.postRaw('garbage');
  client.postRaw({ type: 'request', id: -3, method: 'ping' });
  client.postRaw(null);
  const pong = await client.call('ping', {});
  off();
  assert.deepEqual(notices, ['BAD_REQUEST', 'BAD_REQUEST', 'BAD_REQUEST']);
  assert.equal(pong.pid, pid, 'the same host');

  // Test hooks are off unless the host's environment turns them on.
  const plain = new EngineClient();
  clients.push(plain);
  assert.equal((await engineRejection(plain.call('testCrash', {}))).code, 'TEST_HOOKS_DISABLED');
  await plain.stop();
  await client.call('unloadModel', { modelId: small });
});

test('cancellation: a long prefill stops well within a second (the latency is printed); a queued one is dropped', async () => {
  const { modelId: big } = await client.call('loadModel', { path: bigModel });
  const { sessionId } = await client.call('createSession', {
    modelId: big,
    options: { nCtx: 4096, nBatch: 128, nThreads: 2 },
  });
  const tokens = Array.from({ length: 4000 }, (_, i) => 3 + ((i * 37) % 300));
  const latencies: number[] = [];
  let dropLatency = 0;
  for (const after of [2, 8, 16]) {
    // Abort at an arbitrary point of a running prefill: at its `after`-th progress event (progress comes per
    // chunk of 128 tokens and layer, so the prefill is well under way and far from done).
    const ac = new AbortController();
    let abortedAt = 0;
    let events = 0;
    const running = client.call(
      'prefill',
      { sessionId, tokens },
      {
        signal: ac.signal,
        onProgress: () => {
          if (++events === after) {
            abortedAt = performance.now();
            ac.abort();
          }
        },
      },
    );
    const settled = engineRejection(running); // handled from the start: it may reject before it is awaited
    assert.equal(client.status().state, 'busy');
    const err = await settled;
    const latency = performance.now() - abortedAt;
    assert.equal(err.code, 'CANCELLED');
    assert.ok(abortedAt > 0, 'aborted while running');
    latencies.push(latency);
  }
  {
    // A second prefill on the same session waits in its queue; aborting it drops it at once, while the
    // first one still runs.
    const first = new AbortController();
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    let firstDone = false;
    const firstErr = engineRejection(
      client.call('prefill', { sessionId, tokens }, { signal: first.signal, onProgress: () => started() }),
    ).finally(() => (firstDone = true));
    await running;
    const queuedAbort = new AbortController();
    const queued = engineRejection(
      client.call('prefill', { sessionId, tokens: [5, 6, 7] }, { signal: queuedAbort.signal }),
    );
    const droppedAt = performance.now();
    queuedAbort.abort();
    assert.equal((await queued).code, 'CANCELLED');
    dropLatency = performance.now() - droppedAt;
    assert.equal(firstDone, false, 'dropped while the first one still ran');
    first.abort();
    assert.equal((await firstErr).code, 'CANCELLED');
  }
  console.log(
    `# cancellation latency of a running 4000-token prefill (abort → rejection): ${latencies.map((l) => l.toFixed(1)).join(', ')} ms;` +
      ` of a queued one (the protocol's round trip alone, engine busy): ${dropLatency.toFixed(1)} ms`,
  );
  for (const l of latencies) assert.ok(l < 1000, `cancellation took ${l.toFixed(0)} ms`);
  // An abort before sending never reaches the host.
  const pre = new AbortController();
  pre.abort();
  assert.equal(
    (await engineRejection(client.call('prefill', { sessionId, tokens }, { signal: pre.signal }))).code,
    'CANCELLED',
  );

  // The session still works, and a cancelled generation resolves with what it made.
  assert.equal((await snapshot(sessionId, bigModel)).tokens.length, 0, 'nothing of the cancelled prefill is kept');
  await client.call('prefill', { sessionId, tokens: [1, 5, 6] });
  const genAbort = new AbortController();
  let n = 0;
  const g = await client.call(
    'generate',
    { sessionId, n: 2000, temperature: 0 },
    { signal: genAbort.signal, onToken: () => void (++n === 3 && genAbort.abort()) },
  );
  assert.equal(g.stopReason, 'cancelled');
  assert.ok(g.tokens.length >= 3 && g.tokens.length < 2000);
  await client.call('unloadModel', { modelId: big });
  assert.equal(client.status().state, 'ready');
});

test('a host killed mid-generation: ENGINE_CRASHED, crashed → starting → ready, the caller reloads', async () => {
  const { modelId: m } = await client.call('loadModel', { path: bigModel });
  const { sessionId } = await client.call('createSession', { modelId: m, options: { nCtx: 4096, nThreads: 2 } });
  await client.call('prefill', { sessionId, tokens: [1, 5, 6, 7] });
  const states: EngineClientStatus[] = [];
  const offStatus = client.on('status', (s) => states.push(s));
  const crashes: CrashEvent[] = [];
  client.on('crash', (c) => crashes.push(c));
  const restarted = new Promise<RestartEvent>((resolve) => {
    const off = client.on('restart', (r) => {
      off();
      resolve(r);
    });
  });
  const pid = client.status().pid!;
  let killedAfter = -1;
  const streamed: number[] = [];
  const gen = client.call(
    'generate',
    { sessionId, n: 2000, temperature: 0 },
    {
      onToken: (t) => {
        streamed.push(t.id);
        if (killedAfter < 0) {
          killedAfter = streamed.length;
          process.kill(pid, 'SIGKILL');
        }
      },
    },
  );
  const err = await engineRejection(gen);
  assert.equal(err.code, 'ENGINE_CRASHED');
  assert.match(err.message, /SIGKILL/);
  const r = await restarted;
  await waitFor(client, 'ready');
  offStatus();
  assert.equal(isAlive(pid), false);
  const seq = states.map((s) => s.state);
  const i = seq.indexOf('crashed');
  assert.ok(
    i >= 0 && seq.indexOf('starting', i) > i && seq.indexOf('ready', i) > seq.indexOf('starting', i),
    `states: ${seq.join(' → ')}`,
  );
  assert.equal(crashes.length, 1);
  assert.equal(crashes[0].signal, 'SIGKILL');
  assert.equal(crashes[0].willRestart, true);
  assert.deepEqual(r.lost.models.map((x) => x.path).sort(), [bigModel, ...(skip ? [] : [stories])].sort());
  assert.ok(r.lost.sessions.some((s) => s.sessionId === sessionId));
  assert.equal(r.restarts, 1);
  assert.equal(client.status().restarts, 1);
  assert.notEqual(client.status().pid, pid);
  assert.deepEqual(client.handles(), { models: [], sessions: [] });

  // Old ids are gone with the old process; reloading brings the engine back.
  assert.equal((await engineRejection(client.call('generate', { sessionId, n: 1 }))).code, 'UNKNOWN_SESSION');
  const again = await client.call('loadModel', { path: smallModel });
  const s2 = await client.call('createSession', { modelId: again.modelId, options: { nCtx: 256, nThreads: 1 } });
  await client.call('prefill', { sessionId: s2.sessionId, tokens: [1, 5, 6, 7] });
  assert.equal((await client.call('generate', { sessionId: s2.sessionId, n: 5, temperature: 0 })).tokens.length, 5);
});

test('the test-only crash request aborts the host: same recovery; the restart cap stops a crash loop', async () => {
  const c = newClient({ maxRestarts: 1, restartWindowMs: 60_000 });
  await c.start();
  const states: EngineState[] = [];
  c.on('status', (s) => states.push(s.state));
  await c.call('loadModel', { path: smallModel });
  const first = await engineRejection(c.call('testCrash', {}));
  assert.equal(first.code, 'ENGINE_CRASHED');
  await waitFor(c, 'ready');
  assert.deepEqual(states.slice(states.indexOf('crashed')), ['crashed', 'starting', 'ready']);
  assert.equal(c.status().restarts, 1);
  const { modelId: m } = await c.call('loadModel', { path: smallModel });
  assert.equal((await c.call('tokenize', { modelId: m, text: 'ab' })).tokens.length > 0, true);

  // A second crash within the window exceeds maxRestarts = 1: no restart, requests fail until start().
  assert.equal((await engineRejection(c.call('testCrash', {}))).code, 'ENGINE_CRASHED');
  assert.equal(c.status().state, 'crashed');
  assert.match(c.status().message!, /not restarted/);
  assert.equal((await engineRejection(c.call('ping', {}))).code, 'ENGINE_UNAVAILABLE');
  await c.start();
  assert.equal(c.status().state, 'ready');
  assert.ok((await c.call('ping', {})).pid > 0);
});

test('an addon that does not load: the client reports it and does not loop', async () => {
  const c = newClient({ env: { FOLIO_ADDON: join(dir, 'no-such-addon.node') } });
  const e = await engineRejection(c.start());
  assert.equal(e.code, 'ENGINE_UNAVAILABLE');
  assert.match(e.message, /no-such-addon\.node/);
  assert.equal(c.status().state, 'crashed');
  assert.equal(c.status().restarts, 0);
  assert.equal((await engineRejection(c.call('ping', {}))).code, 'ENGINE_UNAVAILABLE');
  await c.stop();
  assert.equal(c.status().state, 'stopped');
});

test('stop(): a healthy host disposes everything and exits; a hung one is killed after the timeout', async () => {
  const c = newClient({ stopTimeoutMs: 1000 });
  const { modelId: m } = await c.call('loadModel', { path: smallModel }); // a request starts the host
  await c.call('createSession', { modelId: m, options: { nCtx: 128, nThreads: 1 } });
  await c.call('createSession', { modelId: m, options: { nCtx: 128, nThreads: 1 } });
  const pid = c.status().pid!;
  const r = await c.stop();
  assert.deepEqual(r, { graceful: true, disposedSessions: 2, disposedModels: 1 });
  assert.equal(c.status().state, 'stopped');
  assert.equal(isAlive(pid), false);

  await c.start();
  const pid2 = c.status().pid!;
  const hung = c.call('testHang', { ms: 60_000 });
  await new Promise((res) => setTimeout(res, 100));
  const t0 = performance.now();
  const r2 = await c.stop();
  const took = performance.now() - t0;
  assert.equal(r2.graceful, false);
  assert.ok(took >= 900 && took < 5000, `stop took ${took.toFixed(0)} ms`);
  assert.equal((await engineRejection(hung)).code, 'ENGINE_STOPPED');
  assert.equal(isAlive(pid2), false);
  assert.equal(c.status().state, 'stopped');
});

test("the host speaks Electron's parentPort (MessagePort-style) when it finds one", async () => {
  // A stand-in for utilityProcess: a child process whose IPC channel is presented as process.parentPort.
  const shim = join(dir, 'parent-port-shim.mjs');
  writeFileSync(
    shim,
    [
      "import { EventEmitter } from 'node:events';",
      "import { pathToFileURL } from 'node:url';",
      'const send = process.send.bind(process);',
      'const port = new EventEmitter();',
      'port.postMessage = (m) => send(m);',
      "process.on('message', (m) => port.emit('message', { data: m, ports: [] }));",
      'process.parentPort = port;',
      'process.send = undefined;',
      'await import(pathToFileURL(process.env.FOLIO_SHIM_HOST).href);',
    ].join('\n'),
  );
  const c = newClient({
    spawn: (req) => spawnNodeHost({ ...req, entry: shim, env: { ...req.env, FOLIO_SHIM_HOST: req.entry } }),
  });
  await c.start();
  assert.equal(c.hostInfo()!.transport, 'electron-parent-port');
  const { modelId: m } = await c.call('loadModel', { path: smallModel });
  const { sessionId } = await c.call('createSession', { modelId: m, options: { nCtx: 256, nThreads: 1 } });
  const progress: number[] = [];
  await c.call('prefill', { sessionId, tokens: [1, 5, 6, 7, 8] }, { onProgress: (d) => progress.push(d) });
  assert.ok(progress.length > 0);
  const tokens: number[] = [];
  const g = await c.call('generate', { sessionId, n: 6, temperature: 0 }, { onToken: (t) => tokens.push(t.id) });
  assert.deepEqual(tokens, g.tokens);
  assert.equal((await c.stop()).graceful, true);
});

test('tokenCharOffsets maps pieces to UTF-16 offsets, absorbing a dummy-prefix space', () => {
  const text = 'Hé 東京';
  // Pieces as SentencePiece makes them: " Hé" (4 bytes, a space added), " " ... here: " H", "é", " 東", "京".
  const starts = tokenCharOffsets(text, [0, 2, 2, 4, 3]);
  assert.deepEqual([...starts], [0, 0, 1, 2, 4]);
  assert.equal(text.slice(starts[3], starts[4]), ' 東');
});

// The settings' backend: sessions ask for it by name, the status line says what it is (or why it cannot be),
// and the memory a model must fit in is that backend's.
test('the settings choose the backend: sessions run there, the status says so, an unusable GPU says why', {
  skip: missing(stories),
}, async () => {
  let backend: 'auto' | 'cpu' | 'cuda' | 'vulkan' = 'cpu';
  const manager = new EngineManager(client, new EventBus(), () => ({
    nCtx: 256,
    threads: 1,
    kvType: 'f16',
    kvTypeV: null,
    kvRotate: false,
    backend,
  }));
  const model = await manager.ensureModel('stories', stories);
  const offers = client.hostInfo()!.backends;
  for (const choice of ['cpu', 'cuda', 'vulkan'] as const) {
    backend = choice;
    const offer = offers[choice];
    assert.equal(manager.sessionOptions().backend, choice);
    assert.equal(manager.status().backend, offer.label);
    assert.deepEqual(manager.gpu(), offer.gpu);
    if (offer.available) {
      const h = await manager.createSession(model);
      assert.equal(h.backend, choice, `a session on ${choice}`);
      await client.call('disposeSession', { sessionId: h.sessionId });
    } else {
      assert.equal(manager.status().backendReason, `chosen in the settings, but ${offer.reason}`);
      const e = await engineRejection(manager.createSession(model));
      assert.equal(e.code, 'GPU_UNAVAILABLE');
      assert.equal(
        e.message,
        `${offer.reason}. The settings ask for ${choice}: choose Automatic or the CPU under "Compute on"`,
      );
    }
  }
  backend = 'auto';
  assert.equal(manager.status().backend, client.status().backend);
  await client.call('unloadModel', { modelId: model.engineId });
});
