// The engine process: loads the native addon and serves protocol.ts's requests. It runs as a Node child
// process (child_process.fork with an IPC channel: process.on('message') / process.send) or as an Electron
// utilityProcess (process.parentPort: on('message', e => e.data) / postMessage); which one is detected at
// start, without importing 'electron'.
//
// Models and sessions live in maps under ids handed out here. Operations on one session run one at a time,
// in arrival order (a per-session queue; the addon's own BUSY, should it ever fire, is passed through).
// Long work runs off this thread (in the addon's jobs, or in the tokenizer worker for long texts), so the
// event loop stays free for cancellations and for the progress and token events it forwards.
// It ends at once whenever it ends, and never outlives its parent (host-exit.ts).
import type { Worker } from 'node:worker_threads';

import {
  addonPath,
  loadAddon,
  type ComputeBackend,
  type FolioAddon,
  type GpuBackend,
  type GpuStatus,
  type Model,
  type Session,
} from './binding.ts';
import { startWorker } from '../worker-thread.ts';
import { endAtOnce, exitNow, TEST_NO_DEATH_SIGNAL_ENV, watchParent } from './host-exit.ts';
import {
  EngineRequestError,
  ErrorCodes,
  methods,
  PROTOCOL_VERSION,
  TEST_HOOKS_ENV,
  type BackendOffer,
  type HostMessage,
  type Methods,
  type SessionHandle,
} from './protocol.ts';
import { type CallContext, errorShape, type HandlerTable, serveRequests } from './serve.ts';
import { PieceLengths, specialIdsOfModel, tokenizeWithPieces } from './tokenize.ts';
import type { WorkerCall, WorkerReply } from './tokenizer-worker.ts';

/** Texts up to this many UTF-16 units are tokenized on the main thread (a few ms at most), longer ones in the worker. */
const INLINE_TOKENIZE_CHARS = 16 * 1024;
/** Token sequences up to this length are detokenized on the main thread. */
const INLINE_DETOKENIZE_TOKENS = 32 * 1024;

// ---------------------------------------------------------------------------------------------------------
// Transport

interface Transport {
  kind: 'node-ipc' | 'electron-parent-port';
  send(message: HostMessage, then?: () => void): void;
  onMessage(listener: (message: unknown) => void): void;
}

interface ParentPortLike {
  on(event: 'message', listener: (e: { data: unknown }) => void): unknown;
  postMessage(message: unknown): void;
  start?(): void;
}

function detectTransport(): Transport {
  const parentPort = (process as unknown as { parentPort?: ParentPortLike }).parentPort;
  if (parentPort && typeof parentPort.postMessage === 'function') {
    return {
      kind: 'electron-parent-port',
      send(message, then) {
        try {
          parentPort.postMessage(message);
        } catch {
          // the parent is gone (the watchdog in host-exit.ts ends this process): nobody to tell
        }
        if (then) setTimeout(then, 50); // no delivery callback on a MessagePort: give it a moment to flush
      },
      onMessage(listener) {
        parentPort.on('message', (e) => listener(e.data));
        parentPort.start?.();
      },
    };
  }
  if (typeof process.send === 'function') {
    // The parent is gone: nothing will ever ask again, so do not linger holding gigabytes.
    process.on('disconnect', leaveOrphaned);
    return {
      kind: 'node-ipc',
      send(message, then) {
        if (!process.connected) return then?.();
        try {
          process.send!(message, undefined, undefined, () => then?.());
        } catch {
          then?.();
        }
      },
      onMessage(listener) {
        process.on('message', listener);
      },
    };
  }
  process.stderr.write(
    'folio engine host: start me with child_process.fork (an IPC channel) or as an Electron utilityProcess\n',
  );
  process.exit(2);
}

const transport = detectTransport();
const startedAt = Date.now();
const testHooks = process.env[TEST_HOOKS_ENV] === '1';

// ---------------------------------------------------------------------------------------------------------
// The tokenizer worker (long texts)

class TokenizerWorker {
  private worker: Worker | null = null;
  private next = 1;
  private readonly pending = new Map<
    number,
    { resolve: (r: WorkerReply & { ok: true }) => void; reject: (e: Error) => void }
  >();

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = startWorker(new URL('./tokenizer-worker.ts', import.meta.url));
    w.unref();
    w.on('message', (r: WorkerReply) => {
      const p = this.pending.get(r.id);
      if (!p) return;
      this.pending.delete(r.id);
      if (r.ok) p.resolve(r);
      else p.reject(new EngineRequestError(r.code, r.message));
    });
    const fail = (why: string) => {
      if (this.worker !== w) return;
      this.worker = null;
      for (const p of this.pending.values())
        p.reject(new EngineRequestError(ErrorCodes.INTERNAL, `the tokenizer worker ${why}`));
      this.pending.clear();
    };
    w.on('error', (e) => fail(`failed: ${e.message}`));
    w.on('exit', (code) => fail(`exited (${code})`));
    this.worker = w;
    return w;
  }

  call(req: WorkerCall): Promise<WorkerReply & { ok: true }> {
    const w = this.start();
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      w.postMessage({ ...req, id });
    });
  }

  forget(path: string): void {
    if (this.worker) void this.call({ op: 'forget', path }).catch(() => {});
  }

  async stop(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
  }
}

// ---------------------------------------------------------------------------------------------------------
// State

interface ModelEntry {
  id: string;
  path: string;
  model: Model;
  sessions: Set<string>;
  pieces: PieceLengths;
}

interface Job {
  requestId: number;
  /** Whether session.cancel() stops it (prefill, compress, generate). */
  cancellable: boolean;
  run(): Promise<void>;
  /** Rejects it with CANCELLED without running it. */
  drop(why: string): void;
}

interface SessionEntry {
  id: string;
  modelId: string;
  session: Session;
  queue: Job[];
  running: Job | null;
}

const models = new Map<string, ModelEntry>();
const sessions = new Map<string, SessionEntry>();
/** Request id → the session whose queue holds it or which runs it. */
const jobsByRequest = new Map<number, SessionEntry>();
/** The requests under way (serve.ts keeps them). */
let inFlight: ReadonlySet<number> = new Set<number>();
const tokenizer = new TokenizerWorker();
let nextHandle = 1;
const handlePrefix = process.pid.toString(36);
let shuttingDown = false;

/** What the engine computes on by default (`auto`) and with each backend by name, for the status line, and
 * why (the GPU found, or why there is none). */
function backendLabel(addon: FolioAddon) {
  const info = addon.backendInfo();
  const cpu: BackendOffer = {
    available: true,
    label: `cpu (${addon.ops.bestIsa()})`,
    reason: 'the CPU, on every core the settings allow',
    gpu: null,
  };
  const offer = (b: GpuStatus, kind: GpuBackend): BackendOffer =>
    b.gpuAvailable && b.device
      ? {
          available: true,
          label: `${kind} (${b.device.name})`,
          reason: b.reason,
          gpu: { name: b.device.name, freeBytes: b.device.freeBytes, totalBytes: b.device.totalBytes },
        }
      : { available: false, label: `${kind} (unavailable)`, reason: b.reason, gpu: null };
  const chosen = info.backend === 'cpu' ? { ...cpu, reason: info.reason } : offer(info, info.backend);
  const backends = { cpu } as Record<ComputeBackend, BackendOffer>;
  for (const g of info.gpus) backends[g.kind] = offer(g, g.kind);
  return { backend: chosen.label, backendReason: chosen.reason, gpu: chosen.gpu, backends };
}

/** The entry of a handle the host gave out; UNKNOWN_MODEL / UNKNOWN_SESSION when it holds none by that id. */
function entryOf<E>(map: Map<string, E>, id: string, code: string, what: string, gone: string): E {
  const e = map.get(id);
  if (!e)
    throw new EngineRequestError(code, `no ${what} '${id}' in this engine process (${gone}, or lost in a restart)`);
  return e;
}
const modelEntry = (id: string) => entryOf(models, id, ErrorCodes.UNKNOWN_MODEL, 'model', 'unloaded');
const sessionEntry = (id: string) => entryOf(sessions, id, ErrorCodes.UNKNOWN_SESSION, 'session', 'disposed');

function addSession(modelId: string, session: Session): SessionHandle {
  const id = `s${handlePrefix}-${nextHandle++}`;
  sessions.set(id, { id, modelId, session, queue: [], running: null });
  modelEntry(modelId).sessions.add(id);
  return {
    sessionId: id,
    modelId,
    nCtx: session.nCtx,
    nThreads: session.nThreads,
    nPast: session.nPast,
    backend: session.backend,
  };
}

function pump(entry: SessionEntry): void {
  if (entry.running) return;
  const job = entry.queue.shift();
  if (!job) return;
  entry.running = job;
  void job.run().finally(() => {
    entry.running = null;
    if (jobsByRequest.get(job.requestId) === entry) jobsByRequest.delete(job.requestId);
    pump(entry);
  });
}

/** Runs `fn` on the session when its earlier operations are done; cancellable as the table says. */
function onSession<T>(
  entry: SessionEntry,
  { id: requestId, cancellable }: Pick<CallContext, 'id' | 'cancellable'>,
  fn: (s: Session) => T | Promise<T>,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const job: Job = {
      requestId,
      cancellable,
      run: async () => {
        try {
          resolve(await fn(entry.session));
        } catch (e) {
          reject(e);
        }
      },
      drop: (why) => {
        if (jobsByRequest.get(requestId) === entry) jobsByRequest.delete(requestId);
        reject(new EngineRequestError(ErrorCodes.CANCELLED, why));
      },
    };
    if (requestId >= 0) jobsByRequest.set(requestId, entry);
    entry.queue.push(job);
    pump(entry);
  });
}

/** Forgets the session at once (new requests get UNKNOWN_SESSION), cancels its work, disposes it once idle. */
function disposeSessionEntry(entry: SessionEntry): Promise<void> {
  sessions.delete(entry.id);
  models.get(entry.modelId)?.sessions.delete(entry.id);
  for (const job of entry.queue.splice(0)) job.drop('cancelled: the session was disposed');
  if (entry.running?.cancellable) entry.session.cancel();
  return onSession(entry, { id: -1, cancellable: false }, (s) => s.dispose());
}

async function disposeModelEntry(entry: ModelEntry): Promise<string[]> {
  const ids = [...entry.sessions];
  await Promise.all(ids.map((id) => disposeSessionEntry(sessionEntry(id))));
  models.delete(entry.id);
  entry.model.dispose();
  tokenizer.forget(entry.path);
  return ids;
}

// ---------------------------------------------------------------------------------------------------------
// Handlers

/** A handler per row of the table, typed by it (serve.ts runs them). */
type Handlers = HandlerTable<Methods>;

function makeHandlers(addon: FolioAddon): Handlers {
  return {
    ping: () => ({
      pid: process.pid,
      uptimeMs: Date.now() - startedAt,
      models: models.size,
      sessions: sessions.size,
      running: inFlight.size,
    }),

    loadModel: async ({ path }) => {
      const model = await addon.loadModel(path);
      const id = `m${handlePrefix}-${nextHandle++}`;
      models.set(id, {
        id,
        path,
        model,
        sessions: new Set(),
        pieces: new PieceLengths(model, specialIdsOfModel(model)),
      });
      return { modelId: id, info: model.info() };
    },

    unloadModel: async ({ modelId }) => ({ disposedSessions: await disposeModelEntry(modelEntry(modelId)) }),

    tokenize: async ({ modelId, text, addSpecial, parseSpecial }) => {
      const m = modelEntry(modelId);
      const opts = { addSpecial: addSpecial ?? true, parseSpecial: parseSpecial ?? false };
      const textBytes = Buffer.byteLength(text, 'utf8');
      if (text.length <= INLINE_TOKENIZE_CHARS)
        return { ...tokenizeWithPieces(m.model, m.pieces, text, opts), textBytes };
      const r = await tokenizer.call({ op: 'tokenize', path: m.path, text, ...opts });
      return { tokens: r.tokens!, pieceBytes: r.pieceBytes!, textBytes };
    },

    detokenize: async ({ modelId, tokens, special }) => {
      const m = modelEntry(modelId);
      if (tokens.length <= INLINE_DETOKENIZE_TOKENS)
        return { text: m.model.detokenize(tokens, { special: special ?? false }) };
      const r = await tokenizer.call({ op: 'detokenize', path: m.path, tokens, special });
      return { text: r.text! };
    },

    createSession: ({ modelId, options }) =>
      addSession(modelId, modelEntry(modelId).model.createSession(options ?? {})),

    compress: ({ sessionId, tokens, options, logits }, ctx) =>
      onSession(sessionEntry(sessionId), ctx, async (s) => {
        const r = await s.compress(tokens, { ...options, onProgress: ctx.progress });
        return { stats: r.stats, nPast: r.nPast, logits: logits ? r.logits : null };
      }),

    prefill: ({ sessionId, tokens, logits }, ctx) =>
      onSession(sessionEntry(sessionId), ctx, async (s) => {
        const want = logits ?? 'none';
        const r = await s.prefill(tokens, { allLogits: want === 'all', onProgress: ctx.progress });
        return {
          nPast: r.nPast,
          seconds: r.seconds,
          tokensPerSecond: r.tokensPerSecond,
          logits: want === 'none' ? null : r.logits,
        };
      }),

    generate: ({ sessionId, ...opts }, ctx) =>
      onSession(sessionEntry(sessionId), ctx, (s) => s.generate({ ...opts, onToken: (t) => void ctx.token(t) })),

    cancel: ({ requestId }) => {
      const entry = jobsByRequest.get(requestId);
      if (!entry) return { found: 'none' as const };
      if (entry.running?.requestId === requestId) {
        if (entry.running.cancellable) entry.session.cancel();
        return { found: 'running' as const };
      }
      const i = entry.queue.findIndex((j) => j.requestId === requestId);
      if (i < 0) return { found: 'none' as const };
      const [job] = entry.queue.splice(i, 1);
      job.drop('cancelled before it started');
      return { found: 'queued' as const };
    },

    truncate: ({ sessionId, n }, ctx) =>
      onSession(sessionEntry(sessionId), ctx, (s) => {
        s.truncate(n);
        return { nPast: s.nPast };
      }),

    forget: ({ sessionId, from, to }, ctx) =>
      onSession(sessionEntry(sessionId), ctx, (s) => {
        s.forget(from, to);
        return { nPast: s.nPast };
      }),

    packSpan: ({ sessionId, from, to }, ctx) =>
      onSession(sessionEntry(sessionId), ctx, (s) => ({ nPast: s.packSpan(from, to) })),

    reselect: ({ sessionId, spans, keep, alpha, acrossLayers }, ctx) =>
      onSession(sessionEntry(sessionId), ctx, (s) => {
        const { entries } = s.reselect(spans.flat(), { keep, alpha, acrossLayers });
        const memory = s.memory();
        return {
          entries: entries.map((a) => Array.from(a)),
          heads: memory.headLengths[0]?.length ?? 0,
          entryBytes: memory.entryBytes,
          bytesUsed: memory.bytesUsed,
        };
      }),

    compressSpan: ({ sessionId, from, to, keepRatio, window }, ctx) =>
      onSession(sessionEntry(sessionId), ctx, (s) => s.compressSpan(from, to, keepRatio, window)),

    fork: ({ sessionId }, ctx) => {
      const entry = sessionEntry(sessionId);
      return onSession(entry, ctx, (s) => {
        if (!models.has(entry.modelId))
          throw new EngineRequestError(ErrorCodes.UNKNOWN_MODEL, 'the model was unloaded');
        return addSession(entry.modelId, s.fork());
      });
    },

    save: ({ sessionId, path, meta }, ctx) =>
      onSession(sessionEntry(sessionId), ctx, async (s) => {
        await s.save(path, meta);
        return { ok: true as const };
      }),

    appendSaved: ({ sessionId, path, from, to, pack }, ctx) =>
      onSession(sessionEntry(sessionId), ctx, (s) => s.appendSaved(path, { from, to, pack })),

    loadSession: async ({ modelId, path, options }) => {
      const { session, meta } = await modelEntry(modelId).model.loadSession(path, options ?? {});
      if (!models.has(modelId)) {
        session.dispose();
        throw new EngineRequestError(ErrorCodes.UNKNOWN_MODEL, 'the model was unloaded while the session loaded');
      }
      return { ...addSession(modelId, session), meta };
    },

    disposeSession: async ({ sessionId }) => {
      await disposeSessionEntry(sessionEntry(sessionId));
      return { ok: true as const };
    },

    shutdown: async () => {
      shuttingDown = true;
      const nSessions = sessions.size,
        nModels = models.size;
      await Promise.all([...models.values()].map(disposeModelEntry));
      await tokenizer.stop();
      return { disposedSessions: nSessions, disposedModels: nModels };
    },

    testCrash: () => {
      if (!testHooks)
        throw new EngineRequestError(
          ErrorCodes.TEST_HOOKS_DISABLED,
          `testCrash needs ${TEST_HOOKS_ENV}=1 in the host's environment`,
        );
      process.abort();
    },

    testHang: ({ ms }) => {
      if (!testHooks)
        throw new EngineRequestError(
          ErrorCodes.TEST_HOOKS_DISABLED,
          `testHang needs ${TEST_HOOKS_ENV}=1 in the host's environment`,
        );
      const end = Date.now() + ms;
      while (Date.now() < end) {
        /* a hung host */
      }
      return { ok: true as const };
    },
  };
}

/** Leaves at once, native jobs and all, when the parent is gone (host-exit.ts). */
function leaveOrphaned(): never {
  exitNow(addon, 0);
}

let addon: FolioAddon | null = null;
let loadError: { code: string; message: string } | null = null;
try {
  addon = loadAddon();
} catch (e) {
  loadError = {
    code: ErrorCodes.ENGINE_UNAVAILABLE,
    message: `the native engine did not load (${addonPath()}): ${errorShape(e).message}`,
  };
}
endAtOnce(() => addon);
watchParent({
  control: addon,
  // Only where our parent forked us from its main thread: the signal comes when the forking *thread* ends, and
  // Electron launches a utilityProcess from a launcher thread that may end while the app runs on.
  deathSignal: transport.kind === 'node-ipc' && !(testHooks && process.env[TEST_NO_DEATH_SIGNAL_ENV] === '1'),
  onGone: leaveOrphaned,
});
inFlight = serveRequests({
  transport,
  methods,
  handlers: addon ? makeHandlers(addon) : null,
  unavailable: loadError,
  shuttingDown: () => shuttingDown,
  exitAfter: 'shutdown',
});
if (addon) {
  transport.send({
    type: 'hello',
    ok: true,
    protocol: PROTOCOL_VERSION,
    pid: process.pid,
    transport: transport.kind,
    addonPath: addonPath(),
    napiVersion: addon.napiVersion,
    ...backendLabel(addon),
    testHooks,
  });
} else {
  transport.send({ type: 'hello', ok: false, protocol: PROTOCOL_VERSION, pid: process.pid, error: loadError! });
}
