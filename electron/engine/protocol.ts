// The message protocol between the app core (EngineClient, client.ts) and the engine process (host.ts).
// Every message is a plain structured-clonable object: it travels over Node's child-process IPC channel
// (serialization: 'advanced') or an Electron utilityProcess MessagePort, both of which carry typed arrays
// (token ids as Int32Array, logits as Float32Array) as they are.
//
//   core → host   { type: 'request', id, method, params }         id: a number the client picks, unique per process
//   host → core   { type: 'response', id, ok: true, result }
//                 { type: 'response', id, ok: false, error: { code, message } }
//                 { type: 'event', id, event: 'progress', done, total }      tied to the request `id`
//                 { type: 'event', id, event: 'token', token: { id, text } } tied to the request `id`
//                 { type: 'hello', ... }    once, when the host is up (or could not load the addon)
//                 { type: 'notice', ... }   a message the host could not tie to a request (malformed)
//
// Both sides validate with the schemas below: the host every request's envelope and parameters (a bad one
// is answered with BAD_REQUEST, never a crash), the client every message and every result. Models and
// sessions are named by ids the host hands out; the ids carry the host's pid, so an id from a process that
// died is never mistaken for one of its successor (it answers UNKNOWN_SESSION / UNKNOWN_MODEL).
import { z } from 'zod';

import { BudgetValue } from '../shared/kv/budget.ts';
import { CompressionMethod } from '../shared/kv/methods.ts';
import { compressOption, samplingOption } from '../shared/kv/options.ts';
import { KvType } from '../shared/kv/precision.ts';
import { EngineCompressionStats } from '../shared/kv/stats.ts';
import type * as B from './binding.ts';
import { BACKEND_CHOICES, COMPUTE_BACKENDS } from '../shared/compute-backends.ts';

export const PROTOCOL_VERSION = 1;

// ---------------------------------------------------------------------------------------------------------
// Error codes that the protocol adds to the addon's own (FILE_OPEN, GGUF_*, BUSY, CANCELLED, INVALID_ARGUMENT,
// NO_PROMPT, SESSION_FILE_*, ...; those pass through unchanged).

export const ErrorCodes = {
  /** The request's envelope or parameters do not match the protocol. */
  BAD_REQUEST: 'BAD_REQUEST',
  UNKNOWN_METHOD: 'UNKNOWN_METHOD',
  UNKNOWN_MODEL: 'UNKNOWN_MODEL',
  UNKNOWN_SESSION: 'UNKNOWN_SESSION',
  /** Cancelled (through an AbortSignal, a cancel request, or disposal of the session it waited for). */
  CANCELLED: 'CANCELLED',
  /** The engine process died while the request was pending. */
  ENGINE_CRASHED: 'ENGINE_CRASHED',
  /** The engine was stopped (client.stop()) while the request was pending. */
  ENGINE_STOPPED: 'ENGINE_STOPPED',
  /** The engine cannot run: the addon did not load, it did not start in time, or it crashed too often. */
  ENGINE_UNAVAILABLE: 'ENGINE_UNAVAILABLE',
  /** The other side sent something that does not match the protocol. */
  PROTOCOL_ERROR: 'PROTOCOL_ERROR',
  /** A test-only request while the host was started without FOLIO_ENGINE_TEST_HOOKS=1. */
  TEST_HOOKS_DISABLED: 'TEST_HOOKS_DISABLED',
  /** A thrown error without a code. */
  INTERNAL: 'INTERNAL',
} as const;

/** The host honours the test-only requests (testCrash, testHang) only when this is set to 1 in its environment. */
export const TEST_HOOKS_ENV = 'FOLIO_ENGINE_TEST_HOOKS';

/** An error that crossed (or concerns) the process boundary; `code` is stable. Fits binding.ts's EngineError. */
export class EngineRequestError extends Error implements B.EngineError {
  constructor(
    readonly code: string,
    message: string,
    readonly method?: string,
  ) {
    super(message);
    this.name = 'EngineRequestError';
  }
}

// ---------------------------------------------------------------------------------------------------------
// Shared shapes

export const HandleId = z.string().min(1).max(128);
const Int = z.number().int();
const Num = z.number();
// Typed arrays as the addon makes them (typed over ArrayBufferLike, as binding.ts declares them).
const Int32s = z.custom<Int32Array>((v) => v instanceof Int32Array, 'expected an Int32Array');
const Float32s = z.custom<Float32Array>((v) => v instanceof Float32Array, 'expected a Float32Array');

/** Token ids: an Int32Array, or an array of non-negative whole numbers. */
export const Tokens = z.union([Int32s, z.array(Int.min(0).max(0x7fffffff))]);

export const SessionOptions = z.strictObject({
  nCtx: Int.min(1).optional(),
  nBatch: Int.min(1).optional(),
  nThreads: Int.min(0).max(1024).optional(),
  kvType: KvType.optional(),
  kvTypeK: KvType.optional(),
  kvTypeV: KvType.optional(),
  kvRotate: z.boolean().optional(),
  attention: z.enum(['fast', 'reference']).optional(),
  backend: z.enum(BACKEND_CHOICES).optional(),
});

export { CompressionMethod };

/** binding.ts's CompressOptions without the callback (progress comes as events), with the engine's bounds. */
export const CompressOptions = z.strictObject({
  method: CompressionMethod,
  budget: BudgetValue.optional(),
  alpha: compressOption('alpha').optional(),
  window: compressOption('window').optional(),
  kernel: compressOption('kernel').optional(),
  beta: compressOption('beta').optional(),
  measureLoss: z.boolean().optional(),
  chunk: z.union([z.literal('auto'), Int]).optional(),
  rebase: z.boolean().optional(),
  /** After the read, the kept entries get contiguous positions even where the document fits (ReadOptions). */
  packPositions: z.boolean().optional(),
  room: Int.optional(),
  checkpoint: z.string().min(1).optional(),
  checkpointSeconds: Num.optional(),
});

export const SamplingOptions = z.strictObject({
  temperature: samplingOption('temperature').optional(),
  topK: samplingOption('topK').optional(),
  topP: samplingOption('topP').optional(),
  minP: samplingOption('minP').optional(),
  repeatPenalty: samplingOption('repeatPenalty').optional(),
  repeatLastN: samplingOption('repeatLastN').optional(),
  seed: samplingOption('seed').optional(),
});

export const ModelInfo = z.object({
  path: z.string(),
  fileBytes: Num,
  ggufVersion: Num,
  architecture: z.string(),
  name: z.string(),
  nParams: Num,
  weightBytes: Num,
  nVocab: Int,
  contextLength: Num,
  slidingLayers: Int,
  slidingWindow: Int,
  nEmbd: Int,
  nLayer: Int,
  nHead: Int,
  nHeadKv: Int,
  headDim: Int,
  headDimV: Int,
  nFf: Int,
  ropeBase: Num,
  ropeDim: Int,
  ropeScaling: z.enum(['none', 'linear', 'llama3', 'longrope']),
  rmsEps: Num,
  tensorTypes: z.record(z.string(), Num),
  fileType: Num,
  tokenizer: z.object({
    model: z.string(),
    pre: z.string(),
    nTokens: Int,
    bos: Int,
    eos: Int,
    addBos: z.boolean(),
    addEos: z.boolean(),
  }),
  chatTemplate: z.string(),
  isa: z.string(),
  backend: z.enum(COMPUTE_BACKENDS),
  backendReason: z.string(),
});

/** The statistics as the addon returns them (electron/shared/kv/stats.ts), checked strictly. */
export const CompressionStats = EngineCompressionStats;

/** What a new, forked or loaded session looks like. */
export const SessionHandle = z.object({
  sessionId: HandleId,
  modelId: HandleId,
  nCtx: Int,
  nThreads: Int,
  nPast: Int,
  /** Where its forward pass runs. */
  backend: z.enum(COMPUTE_BACKENDS),
});

const Logits = Float32s.nullable();
const Ok = z.object({ ok: z.literal(true) });
const Empty = z.strictObject({});

// ---------------------------------------------------------------------------------------------------------
// The engine-call table: every operation once, with its parameters and result, the events it streams, whether
// it is long (the engine shows as busy while it runs) and whether cancelling stops it while it runs (else a
// cancel only takes it out of its session's queue) and what it does to the host's handles. The client's `call`,
// the host's dispatch (serve.ts) and the engine manager are derived from it: an operation is a row here and its
// handler in host.ts, nothing else.

export const methods = {
  /** Liveness and what the host holds. */
  ping: {
    params: Empty,
    result: z.object({ pid: Int, uptimeMs: Num, models: Int, sessions: Int, running: Int }),
    events: 'none',
    long: false,
    cancels: false,
  },
  /** Maps a GGUF model (weights stay memory-mapped). */
  loadModel: {
    params: z.strictObject({ path: z.string().min(1) }),
    result: z.object({ modelId: HandleId, info: ModelInfo }),
    events: 'none',
    long: true,
    cancels: false,
    handles: 'makesModel',
  },
  /** Disposes a model and every session over it (their running and queued operations are cancelled). */
  unloadModel: {
    params: z.strictObject({ modelId: HandleId }),
    result: z.object({ disposedSessions: z.array(HandleId) }),
    events: 'none',
    long: false,
    cancels: false,
    handles: 'disposesModel',
  },
  /**
   * Text → token ids, with the byte length of each token's piece (special tokens the tokenizer added, such
   * as BOS, count 0) and the text's own UTF-8 byte length. Σ pieceBytes − textBytes is what the tokenizer
   * added to the text, e.g. the SentencePiece dummy-prefix space at the start (see tokenCharOffsets).
   * Long texts are tokenized off the host's main thread.
   */
  tokenize: {
    params: z.strictObject({
      modelId: HandleId,
      text: z.string(),
      addSpecial: z.boolean().optional(),
      parseSpecial: z.boolean().optional(),
    }),
    result: z.object({ tokens: Int32s, pieceBytes: Int32s, textBytes: Int }),
    events: 'none',
    long: false,
    cancels: false,
  },
  detokenize: {
    params: z.strictObject({ modelId: HandleId, tokens: Tokens, special: z.boolean().optional() }),
    result: z.object({ text: z.string() }),
    events: 'none',
    long: false,
    cancels: false,
  },
  createSession: {
    params: z.strictObject({ modelId: HandleId, options: SessionOptions.optional() }),
    result: SessionHandle,
    events: 'none',
    long: false,
    cancels: false,
    handles: 'makesSession',
  },
  /** Prefills `tokens` into an empty session, compressing the cache as it goes. Cancellable. */
  compress: {
    params: z.strictObject({
      sessionId: HandleId,
      tokens: Tokens,
      options: CompressOptions,
      logits: z.boolean().optional(),
    }),
    result: z.object({ stats: CompressionStats, nPast: Int, logits: Logits }),
    events: 'progress',
    long: true,
    cancels: true,
  },
  /** Appends tokens. logits: 'none' (default), 'last' ([nVocab]) or 'all' ([n × nVocab]). Cancellable. */
  prefill: {
    params: z.strictObject({ sessionId: HandleId, tokens: Tokens, logits: z.enum(['none', 'last', 'all']).optional() }),
    result: z.object({ nPast: Int, seconds: Num, tokensPerSecond: Num, logits: Logits }),
    events: 'progress',
    long: true,
    cancels: true,
  },
  /** Samples up to n tokens (default 128), streamed as token events. Cancelling stops it: stopReason 'cancelled'. */
  generate: {
    params: SamplingOptions.extend({
      sessionId: HandleId,
      n: Int.min(0).optional(),
      stopAtEog: z.boolean().optional(),
      collectAttention: z.boolean().optional(),
    }),
    result: z.object({
      tokens: z.array(Int),
      text: z.string(),
      stopReason: z.enum(['length', 'eog', 'cancelled', 'context']),
      seconds: Num,
      tokensPerSecond: Num,
      nPast: Int,
      attention: z.array(Float32s).nullable(),
    }),
    events: 'token',
    long: true,
    cancels: true,
  },
  /** Cancels the request `requestId`: removed if it waits in its session's queue, stopped if it runs. */
  cancel: {
    params: z.strictObject({ requestId: Int.min(0) }),
    result: z.object({ found: z.enum(['queued', 'running', 'none']) }),
    events: 'none',
    long: false,
    cancels: false,
  },
  truncate: {
    params: z.strictObject({ sessionId: HandleId, n: Int.min(0) }),
    result: z.object({ nPast: Int }),
    events: 'none',
    long: false,
    cancels: false,
  },
  forget: {
    params: z.strictObject({ sessionId: HandleId, from: Int.min(0), to: Int.min(0) }),
    result: z.object({ nPast: Int }),
    events: 'none',
    long: false,
    cancels: false,
  },
  /** Positions [from, to)'s entries on contiguous positions, the span taking as many as its fullest head holds
   * (Session.packSpan): a document's kept entries packed. */
  packSpan: {
    params: z.strictObject({ sessionId: HandleId, from: Int.min(0), to: Int.min(0) }),
    result: z.object({ nPast: Int }),
    events: 'none',
    long: false,
    cancels: false,
  },
  /** One budget over a set's documents at positions `spans` (Session.reselect): each span's entries per (layer ·
   * heads + head) after, the KV heads per layer, the bytes of one entry and of every entry the session holds. keep
   * 1 only counts. */
  reselect: {
    params: z.strictObject({
      sessionId: HandleId,
      spans: z.array(z.tuple([Int.min(0), Int.min(0)])).max(64),
      keep: Num.gt(0).max(1),
      alpha: Num.min(0).max(1).optional(),
      acrossLayers: z.boolean().optional(),
    }),
    result: z.object({ entries: z.array(z.array(Int)), heads: Int, entryBytes: Int, bytesUsed: Int }),
    events: 'none',
    long: false,
    cancels: false,
  },
  /**
   * Compresses positions [from, to) (a conversation's older turns) by the attention of `window` (the next
   * question's tokens) instead of dropping them: about keepRatio of the span's entries stay, on fewer positions
   * (docs/compression.md, "The conversation"). Cancelling rejects with CANCELLED, the cache as it was.
   */
  compressSpan: {
    params: z.strictObject({
      sessionId: HandleId,
      from: Int.min(0),
      to: Int.min(0),
      keepRatio: Num.min(0).max(1),
      window: Tokens,
    }),
    result: z.object({ nPast: Int }),
    events: 'none',
    long: true,
    cancels: true,
  },
  /** A new session with a copy of this one's cache. */
  fork: {
    params: z.strictObject({ sessionId: HandleId }),
    result: SessionHandle,
    events: 'none',
    long: true,
    cancels: false,
    handles: 'makesSession',
  },
  save: {
    params: z.strictObject({ sessionId: HandleId, path: z.string().min(1), meta: z.string().optional() }),
    result: Ok,
    events: 'none',
    long: true,
    cancels: false,
  },
  /** A saved session's entries of positions [from, to) appended after the session's, at their own spacing or
   * packed (Session.appendSaved). */
  appendSaved: {
    params: z.strictObject({
      sessionId: HandleId,
      path: z.string().min(1),
      from: Int.min(0).optional(),
      to: Int.min(0).optional(),
      pack: z.boolean().optional(),
    }),
    result: z.object({ nPast: Int }),
    events: 'none',
    long: true,
    cancels: false,
  },
  loadSession: {
    params: z.strictObject({ modelId: HandleId, path: z.string().min(1), options: SessionOptions.optional() }),
    result: SessionHandle.extend({ meta: z.string() }),
    events: 'none',
    long: true,
    cancels: false,
    handles: 'makesSession',
  },
  /** Cancels what runs or waits on the session, then disposes it. */
  disposeSession: {
    params: z.strictObject({ sessionId: HandleId }),
    result: Ok,
    events: 'none',
    long: false,
    cancels: false,
    handles: 'disposesSession',
  },
  /** Disposes every session and model (cancelling what runs), answers, then the host exits. */
  shutdown: {
    params: Empty,
    result: z.object({ disposedSessions: Int, disposedModels: Int }),
    events: 'none',
    long: false,
    cancels: false,
  },
  /** Test only (FOLIO_ENGINE_TEST_HOOKS=1): the host aborts (process.abort()), as a native crash would. */
  testCrash: { params: Empty, result: Ok, events: 'none', long: false, cancels: false },
  /** Test only: the host blocks its event loop for `ms` (a hung host). */
  testHang: {
    params: z.strictObject({ ms: Int.min(0).max(600_000) }),
    result: Ok,
    events: 'none',
    long: false,
    cancels: false,
  },
} as const satisfies MethodTable;

/** A row of the table (what a test's own table must hold too). */
export interface MethodRow {
  params: z.ZodType;
  result: z.ZodType;
  events: 'none' | 'progress' | 'token';
  long: boolean;
  cancels: boolean;
  /** What it does to the host's handles, which the client keeps track of (for what a crash loses): a result with
   * modelId (and info.path) or sessionId and modelId; a modelId or sessionId parameter it disposes. */
  handles?: 'makesModel' | 'makesSession' | 'disposesModel' | 'disposesSession';
}
export type MethodTable = Record<string, MethodRow>;

export type Methods = typeof methods;
export type EngineMethod = keyof Methods;
export type EngineParams<M extends EngineMethod> = z.input<Methods[M]['params']>;
export type EngineResult<M extends EngineMethod> = z.output<Methods[M]['result']>;

export type ModelInfo = z.infer<typeof ModelInfo>;
export type CompressOptions = z.infer<typeof CompressOptions>;
export type SamplingOptions = z.infer<typeof SamplingOptions>;
export type SessionOptions = z.infer<typeof SessionOptions>;
export type CompressionStats = z.infer<typeof CompressionStats>;
export type SessionHandle = z.infer<typeof SessionHandle>;

// The schemas mirror binding.ts: these lines stop compiling if the two drift apart.
const _modelInfo: ModelInfo = {} as B.ModelInfo;
const _stats: CompressionStats = {} as B.CompressionStats;
const _sessionOpts: B.SessionOptions = {} as SessionOptions;
const _compressOpts: B.CompressOptions = {} as CompressOptions;
const _sampling: B.SamplingOptions = {} as SamplingOptions;
const _generated: EngineResult<'generate'> = {} as B.GenerateResult;
void [_modelInfo, _stats, _sessionOpts, _compressOpts, _sampling, _generated];

// ---------------------------------------------------------------------------------------------------------
// Envelopes

const RequestId = Int.min(0);

export const RequestMessage = z.object({
  type: z.literal('request'),
  id: RequestId,
  method: z.string(),
  params: z.unknown(),
});
export type RequestMessage = z.infer<typeof RequestMessage>;

export const ErrorShape = z.object({ code: z.string(), message: z.string() });

export const ResponseMessage = z.discriminatedUnion('ok', [
  z.object({ type: z.literal('response'), id: RequestId, ok: z.literal(true), result: z.unknown() }),
  z.object({ type: z.literal('response'), id: RequestId, ok: z.literal(false), error: ErrorShape }),
]);
export type ResponseMessage = z.infer<typeof ResponseMessage>;

export const ProgressEvent = z.object({
  type: z.literal('event'),
  id: RequestId,
  event: z.literal('progress'),
  done: Num,
  total: Num,
});
export const TokenEvent = z.object({
  type: z.literal('event'),
  id: RequestId,
  event: z.literal('token'),
  token: z.object({ id: Int, text: z.string() }),
});
export const EventMessage = z.discriminatedUnion('event', [ProgressEvent, TokenEvent]);
export type EventMessage = z.infer<typeof EventMessage>;

/** A GPU and its memory when the host started. */
export const GpuMemory = z.object({ name: z.string(), freeBytes: Num, totalBytes: Num });
/** A backend as the host offers it: usable or not, its label ("vulkan (AMD Radeon …)"), why, and its GPU. */
export const BackendOffer = z.object({
  available: z.boolean(),
  label: z.string(),
  reason: z.string(),
  gpu: GpuMemory.nullable(),
});
export type BackendOffer = z.infer<typeof BackendOffer>;

/** The host's first message: it is ready (ok), or it cannot serve (the addon did not load). */
export const HelloMessage = z.discriminatedUnion('ok', [
  z.object({
    type: z.literal('hello'),
    ok: z.literal(true),
    protocol: Int,
    pid: Int,
    /** The transport the host detected. */
    transport: z.enum(['node-ipc', 'electron-parent-port']),
    addonPath: z.string(),
    napiVersion: Num,
    /** The compute backend, e.g. "cpu (avx2)", "cuda (NVIDIA H200)" or "vulkan (AMD Radeon RX 7900 XTX)", and
     * why it is that one. */
    backend: z.string(),
    backendReason: z.string(),
    /** The GPU the engine computes on, with its memory when the host started; null on the CPU. */
    gpu: GpuMemory.nullable(),
    /** The same for each backend by name (what a session with that `backend` runs on): the settings may
     * choose one over `auto`. */
    backends: z.record(z.enum(COMPUTE_BACKENDS), BackendOffer),
    testHooks: z.boolean(),
  }),
  z.object({ type: z.literal('hello'), ok: z.literal(false), protocol: Int, pid: Int, error: ErrorShape }),
]);
export type HelloMessage = z.infer<typeof HelloMessage>;

/** Something the host could not answer as a response (a message without a usable id). */
export const NoticeMessage = z.object({ type: z.literal('notice'), code: z.string(), message: z.string() });
export type NoticeMessage = z.infer<typeof NoticeMessage>;

export const HostMessage = z.union([ResponseMessage, EventMessage, HelloMessage, NoticeMessage]);
export type HostMessage = z.infer<typeof HostMessage>;

/** "path: message" of a zod error's first issue. */
export function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid';
  return `${issue.path.length ? issue.path.join('.') + ': ' : ''}${issue.message}`;
}

// ---------------------------------------------------------------------------------------------------------
// Helpers for callers

/**
 * UTF-16 offset in `text` where each token starts, from tokenize's pieceBytes: token i covers
 * text.slice(start[i], start[i + 1]) (the last one up to text.length). Bytes the tokenizer added (the
 * SentencePiece dummy-prefix space; Σ pieceBytes − UTF-8 length of text) are taken off the first tokens.
 * A token that ends inside a multi-byte character starts the next one at that character's end.
 */
export function tokenCharOffsets(text: string, pieceBytes: ArrayLike<number>): Int32Array {
  const walk = new TokenStarts(text, pieceBytes);
  const starts = new Int32Array(pieceBytes.length);
  for (let i = 0; i < starts.length; i++) starts[i] = walk.next();
  return starts;
}

/**
 * tokenCharOffsets one token at a time (a long document's map is made in slices, between which the event
 * loop runs): one walk over the text's bytes alongside the tokens, whose starts only grow.
 */
export class TokenStarts {
  private readonly bytes: Buffer;
  private surplus: number;
  private i = 0;
  /** The byte where the character at UTF-16 offset `c` starts. */
  private b = 0;
  private c = 0;
  /** The byte the next token starts at. */
  private pos = 0;

  constructor(
    private readonly text: string,
    private readonly pieceBytes: ArrayLike<number>,
  ) {
    this.bytes = Buffer.from(text, 'utf8');
    let total = 0;
    for (let k = 0; k < pieceBytes.length; k++) total += pieceBytes[k];
    this.surplus = Math.max(0, total - this.bytes.length);
  }

  /** The start of the next token. */
  next(): number {
    const { bytes } = this;
    const target = Math.min(this.pos, bytes.length);
    let start: number;
    for (;;) {
      if (this.b >= target) {
        start = this.b >= bytes.length ? this.text.length : this.c;
        break;
      }
      const lead = bytes[this.b];
      const len = lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
      const units = len === 4 ? 2 : 1;
      if (this.b + len > target) {
        start = Math.min(this.c + units, this.text.length); // a start inside a character: at its end
        break;
      }
      this.b += len;
      this.c += units;
    }
    let n = this.pieceBytes[this.i++];
    const skip = Math.min(this.surplus, n);
    this.surplus -= skip;
    n -= skip;
    this.pos += n;
    return start;
  }
}
