// The typed face of native/folio.node. Everything the addon exports is declared here, once.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import type { ResolvedBudget } from '../shared/kv/budget.ts';
import type { CompressionMethod, MethodRow } from '../shared/kv/methods.ts';
import type { OptionRow } from '../shared/kv/options.ts';
import type { KvType } from '../shared/kv/precision.ts';
import type { EngineCompressionStats, StatsSchema } from '../shared/kv/stats.ts';
import type { BackendChoice, ComputeBackend, GpuBackend } from '../shared/compute-backends.ts';

export { COMPUTE_BACKENDS, type ComputeBackend, type GpuBackend } from '../shared/compute-backends.ts';

/** Errors thrown by the addon carry a stable code (GGUF_TRUNCATED, UNSUPPORTED_ARCH, ...). */
export interface EngineError extends Error {
  code: string;
}

/** Kernel-level entry points, used by the tests to check every ISA against the scalar reference. */
export interface OpsBinding {
  /** ISAs compiled in and supported by this CPU, e.g. ['scalar', 'avx2', 'avx512']. */
  isas(): string[];
  /** The ISA the engine uses by default. */
  bestIsa(): string;
  /** ggml type id of the activations a weight type's dot product consumes. */
  vecDotType(type: number): number;
  /** Dequantizes `n` elements of `type` from `data`. */
  dequantize(type: number, data: Uint8Array, n: number, isa?: string): Float32Array;
  /** Quantizes `x` into `type` (reference quantization; the fast path for activation types). */
  quantize(type: number, x: Float32Array, isa?: string): Uint8Array;
  /** Σ w·x: `w` holds n elements of `type`, `x` n elements of vecDotType(type) (already quantized). */
  vecDot(type: number, w: Uint8Array, x: Uint8Array, n: number, isa?: string): number;
  /**
   * The engine's matrix product Y [n × rows] = X [n × cols] · Wᵀ, W `rows` rows of `type` (packed), X floats
   * (converted to vecDotType(type) first, as the engine does). `path`: 'auto' (what the engine does),
   * 'blocked' (the blocked kernel for any n) or 'vecdot' (vecDot per row and token). Threads default 1.
   */
  matmul(
    type: number,
    w: Uint8Array,
    rows: number,
    cols: number,
    x: Float32Array,
    n: number,
    isa?: string,
    threads?: number,
    path?: 'auto' | 'blocked' | 'vecdot',
  ): Float32Array;
  /**
   * The machine's memory read bandwidth as `threads` threads see it (default: all hardware threads),
   * reading a buffer of `mib` MiB (default 512; in huge pages where the OS gives them, as the weights'
   * copies are); the best of `passes` (default 5) timed passes.
   */
  readBandwidth(
    threads?: number,
    mib?: number,
    passes?: number,
  ): {
    bytesPerSecond: number;
    bytes: number;
    threads: number;
    passes: number;
    seconds: number;
  };
  /**
   * The GPU's memory bandwidth as a device-to-device copy of `mib` MiB (default 1024) sees it, bytes read
   * plus written; the best of `passes` (default 5). Throws GPU_UNAVAILABLE without a GPU.
   */
  gpuCopyBandwidth(
    mib?: number,
    passes?: number,
    backend?: GpuBackend,
  ): { bytesPerSecond: number; bytes: number; passes: number; seconds: number };
}

export interface VocabInfo {
  /** tokenizer.ggml.model: 'llama' (SentencePiece), 'gpt2' (byte-level BPE), ... */
  model: string;
  /** tokenizer.ggml.pre: 'default', 'llama-bpe', 'qwen2', ... */
  pre: string;
  nTokens: number;
  bos: number;
  eos: number;
  /** -1 when the vocabulary has none. */
  eot: number;
  unk: number;
  pad: number;
  addBos: boolean;
  addEos: boolean;
  /** End-of-generation tokens (EOS, EOT, <|im_end|>, ...). */
  eog: number[];
}

export interface Vocab {
  info(): VocabInfo;
  /** Text as a string, or raw bytes (which may be invalid UTF-8). Defaults: addSpecial true, parseSpecial false. */
  tokenize(text: string | Uint8Array, opts?: { addSpecial?: boolean; parseSpecial?: boolean }): Int32Array;
  /** The bytes of one token (special tokens rendered only when `special`). */
  tokenToPiece(id: number, special?: boolean): Uint8Array;
  /** Text of a token sequence (llama_detokenize: SentencePiece's leading space dropped); bytes that do not
   * form valid UTF-8 become U+FFFD. */
  detokenize(ids: ArrayLike<number>, opts?: { special?: boolean }): string;
  /** What a streaming decoder releases after each token (complete UTF-8 only), for streaming checks. */
  detokenizeSteps(ids: ArrayLike<number>, opts?: { special?: boolean }): string[];
}

export interface ModelInfo {
  path: string;
  fileBytes: number;
  ggufVersion: number;
  architecture: string;
  name: string;
  nParams: number;
  /** Bytes of the tensors the model uses (memory-mapped, not copied). */
  weightBytes: number;
  nVocab: number;
  /** The context length the model was trained for. */
  contextLength: number;
  /** Layers whose attention slides over the newest slidingWindow positions (HParams::layer_window), and that
   * window (0: none). */
  slidingLayers: number;
  slidingWindow: number;
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  headDim: number;
  headDimV: number;
  nFf: number;
  ropeBase: number;
  ropeDim: number;
  ropeScaling: 'none' | 'linear' | 'llama3' | 'longrope';
  rmsEps: number;
  /** Tensor count per type name, e.g. { F32: 11, Q4_K: 96, Q6_K: 17 }. */
  tensorTypes: Record<string, number>;
  /** general.file_type, -1 when absent. */
  fileType: number;
  tokenizer: {
    model: string;
    pre: string;
    nTokens: number;
    bos: number;
    eos: number;
    addBos: boolean;
    addEos: boolean;
  };
  chatTemplate: string;
  /** The kernel ISA in use: scalar, avx2, avx512 or neon. */
  isa: string;
  /** The backend sessions get by default, and why (see FolioAddon.backendInfo). */
  backend: ComputeBackend;
  backendReason: string;
}

export interface SessionOptions {
  /** Context length in tokens (default: the model's, at most api/contract.ts DEFAULT_CONTEXT_TOKENS). */
  nCtx?: number;
  /** Tokens per forward step during prefill (default 512). */
  nBatch?: number;
  /** Threads (default: all hardware threads). */
  nThreads?: number;
  /** How the cached keys and values are stored (default 'f16'; shared/kv/precision.ts). */
  kvType?: KvType;
  /** The keys' or the values' type where it differs from kvType. */
  kvTypeK?: KvType;
  kvTypeV?: KvType;
  /** Rotate the quantized ones before quantizing (a Hadamard transform over the head). */
  kvRotate?: boolean;
  /** 'reference': the slow, obviously correct attention and window scores the fast ones are tested against (CPU only). */
  attention?: 'fast' | 'reference';
  /** Where the forward pass runs: 'auto' (default: backendInfo().backend), or a backend by name (a GPU one
   * must be usable: backendInfo().gpus says why not). */
  backend?: BackendChoice;
}

export interface PrefillResult {
  /** Logits of the last position ([nVocab]), or of every position ([n × nVocab]) with allLogits. */
  logits: Float32Array;
  nPast: number;
  seconds: number;
  tokensPerSecond: number;
}

export interface SamplingOptions {
  /** 0 = greedy (the lowest id wins ties). Default 0.8. */
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  repeatPenalty?: number;
  repeatLastN?: number;
  seed?: number;
}

export interface GenerateOptions extends SamplingOptions {
  /** Exactly this many tokens unless stopped earlier (default 128). */
  n?: number;
  /** Stop at an end-of-generation token (EOS, EOT, ...). Default false. */
  stopAtEog?: boolean;
  /** Add up the attention the answer pays what the cache held before it (GenerateResult.attention; the
   * citations, docs/citations.md). Default false: the pass then does none of that work. */
  collectAttention?: boolean;
  /** Called for every token, with the complete UTF-8 text it finished; return false to stop. Generation
   * waits for the callback of each token before the next (at most a second), so a stop is exact. */
  onToken?: (t: { id: number; text: string }) => boolean | void;
}

export interface GenerateResult {
  tokens: number[];
  text: string;
  stopReason: 'length' | 'eog' | 'cancelled' | 'context';
  seconds: number;
  tokensPerSecond: number;
  nPast: number;
  /** With collectAttention, per layer, per position before the answer: the attention the queries of the
   * answer's tokens (each fed back) gave the entries from that position, summed over the tokens and query heads
   * and divided by their number (a layer's values sum to at most 1). Null when not collected or nothing was fed back. */
  attention: Float32Array[] | null;
}

/** The methods of the engine's table (native/src/kv/method.cc; electron/shared/kv/methods.ts). */
export type { CompressionMethod };

export interface CompressOptions {
  method: CompressionMethod;
  /** Per-head budget: a kept ratio of the prefix (<= 1, e.g. 0.2) or tokens per head (> 1, e.g. 512), the
   * observation window included. Not needed for 'full'. */
  budget?: number;
  /** Ada safeguard (default 0.2). */
  alpha?: number;
  /** Observation window (default 32). */
  window?: number;
  /** Max-pool kernel, odd (default 7). */
  kernel?: number;
  /** Pyramid steepness (default 20). */
  beta?: number;
  /** Measure the L1 change of the window queries' attention output per layer (slower). */
  measureLoss?: boolean;
  /** How the document is read (docs/compression.md, "Reading a long document"): 0 or absent in one pass;
   * 'auto' or a number of tokens in chunks, each compressed back to the budget (a ratio: its share of what was
   * read so far), so the cache never holds more than the budget plus one chunk. */
  chunk?: 'auto' | number;
  /** When the document's positions would run out of the context, give the kept entries contiguous
   * positions (lower quality; a document longer than the model's context). */
  rebase?: boolean;
  /** After the read, give the kept entries contiguous positions even where the document fits: it then takes as
   * many positions as the most entries a head keeps, and the conversation the rest (lower quality, as rebase). */
  packPositions?: boolean;
  /** Positions a re-based read keeps free after the document for the conversation. */
  room?: number;
  /** A chunked read saves where it stands in this file (at most every checkpointSeconds, default 30) and a read
   * of the same tokens and options resumes from it; removed when the read completes. */
  checkpoint?: string;
  checkpointSeconds?: number;
  onProgress?: (done: number, total: number) => void;
}

/** What a compression did (docs/compression.md, "Statistics"): the shape of electron/shared/kv/stats.ts, the retention map an Int32Array. */
export type CompressionStats = EngineCompressionStats;

export interface CompressResult {
  stats: CompressionStats;
  /** Logits after the prefix. */
  logits: Float32Array;
  nPast: number;
}

export interface SessionMemory {
  /** The cache's format, as shared/kv/precision.ts kvFormatName names it ('f16', 'q8_0/q4_0+rot'). */
  kvType: string;
  /** Bytes of the keys and values the cache holds. */
  bytesUsed: number;
  /** Bytes the cache has allocated (spare room and positions included). */
  bytesReserved: number;
  /** Bytes of one entry (a key and a value of one head). */
  entryBytes: number;
  /** [layer][KV head] entries. */
  headLengths: number[][];
}

/** A KV cache over a model. One prefill, compression or generation runs at a time (else BUSY). */
export interface Session {
  readonly nPast: number;
  readonly nCtx: number;
  readonly nThreads: number;
  /** Where this session's forward pass runs. */
  readonly backend: ComputeBackend;
  readonly busy: boolean;
  prefill(
    tokens: Int32Array | number[],
    opts?: { allLogits?: boolean; onProgress?: (done: number, total: number) => void },
  ): Promise<PrefillResult>;
  /** Prefills `tokens` into an empty session, compressing the cache layer by layer as it goes. */
  compress(tokens: Int32Array | number[], opts: CompressOptions): Promise<CompressResult>;
  generate(opts?: GenerateOptions): Promise<GenerateResult>;
  /** Makes the running prefill reject with CANCELLED, or the running generation stop ('cancelled'). */
  cancel(): void;
  /** Forgets every position from n on. */
  truncate(n: number): void;
  /** Forgets positions [from, to) (a conversation's oldest turns); what follows moves back to `from`. */
  forget(from: number, to: number): void;
  /** Gives positions [from, to)'s entries contiguous positions, each head's ending together: the span takes as
   * many as its fullest head holds, and what follows moves back. Returns the new nPast. */
  packSpan(from: number, to: number): number;
  /**
   * One budget over a set (docs/compression.md, "One budget over the set"): of the entries at positions `spans`
   * ([from, to) pairs back to back) that a read scored, about `keep` stay, chosen over all spans at once by the
   * scores the reads kept them by (Ada's alpha within a layer; acrossLayers: the global schedule's shares); every
   * other entry stays and nothing moves. Returns each span's entries per (layer · kvHeads + head) after; keep 1
   * only counts them.
   */
  reselect(
    spans: Int32Array | number[],
    o: { keep: number; alpha?: number; acrossLayers?: boolean },
  ): { entries: Int32Array[] };
  /**
   * Compresses positions [from, to) (a conversation's older turns) by the attention `window` (the next
   * question's tokens, run and not kept) gives them: each layer keeps about keepRatio of the span's entries,
   * on ceil(keepRatio·(to − from)) positions at most, and what follows moves back. keepRatio 0 is forget().
   */
  compressSpan(from: number, to: number, keepRatio: number, window: Int32Array | number[]): Promise<{ nPast: number }>;
  /** The tokens the cache holds. */
  tokens(): Int32Array;
  lastLogits(): Float32Array;
  /** A new session with a copy of this one's cache (a new chat over the same compressed document). */
  fork(): Session;
  /** Writes the session atomically with a checksum; `meta` is stored as given. */
  save(path: string, meta?: string): Promise<void>;
  /**
   * Appends the entries of the saved session at `path` whose positions are in [from, to) (default: all it
   * holds) after this session's, with their tokens, their keys rotated to their new positions: a document
   * placed beside others. Refused (NOT_SUPPORTED) for a session read with re-based or packed positions.
   */
  appendSaved(path: string, o?: { from?: number; to?: number; pack?: boolean }): Promise<{ nPast: number }>;
  memory(): SessionMemory;
  dispose(): void;
}

export interface Model {
  info(): ModelInfo;
  tokenize(text: string, opts?: { addSpecial?: boolean; parseSpecial?: boolean }): Int32Array;
  tokenToPiece(id: number, special?: boolean): Uint8Array;
  detokenize(ids: ArrayLike<number>, opts?: { special?: boolean }): string;
  createSession(opts?: SessionOptions): Session;
  /** Reads a saved session (SESSION_FILE_* errors for damaged files or files of another model). */
  loadSession(path: string, opts?: SessionOptions): Promise<{ session: Session; meta: string }>;
  /** Releases the model; sessions still open keep it alive until they are disposed. */
  dispose(): void;
}

export interface GgufHeader {
  version: number;
  alignment: number;
  dataOffset: number;
  fileBytes: number;
  /** Metadata by key; arrays are summarised as { arrayOf, length } unless read with arrays: 'full'. */
  metadata: Record<string, unknown>;
  /** GGUF value type of each key: 'uint32', 'string', 'array', ... */
  metadataTypes: Record<string, string>;
  tensors: { name: string; dims: number[]; type: string; typeId: number; offset: number; bytes: number }[];
}

/** The pieces of KV compression as plain functions (for tests). */
export interface KvOps {
  /** SnapKV window scores: attn [Hk][L] (window mean, GQA mean), score [Hk][L − w] (max-pooled). */
  windowScores(
    qw: Float32Array,
    keys: Float32Array[],
    shape: { nHead: number; nHeadKv: number; headDim: number; L: number; w: number; kernel?: number },
  ): { attn: Float32Array[]; score: Float32Array[] };
  maxPool(x: Float32Array, kernel: number): Float32Array;
  adaCaps(scores: Float32Array[], b: number, alpha: number): number[];
  topTokens(scores: Float32Array, cap: number): number[];
  pyramidSchedule(b: number, selectable: number, layers: number, beta: number): number[];
  /** The per-head budget of an L-token prefix, with the options read as compress() reads them. */
  resolveBudget(opts: Omit<CompressOptions, 'onProgress'>, L: number): ResolvedBudget;
  /** The chunk size a chunked read takes ('auto') for a budget of B tokens per head in an nCtx context. */
  defaultChunk(B: number, nCtx: number): number;
}

/** One GPU library's outcome, or (backendInfo() itself) the one `auto` runs on. */
export interface GpuStatus {
  /** The backend: the GPU's kind when it is usable, else 'cpu'. */
  backend: ComputeBackend;
  gpuAvailable: boolean;
  /** The library path tried ('' when none: GPU turned off, or no GPU chosen). */
  library: string;
  /** Why the GPU is not used (library missing, no driver, no device, a device auto leaves alone), or which is. */
  reason: string;
  device?: {
    name: string;
    runtime: string;
    /** 'auto' takes a discrete GPU (any GPU on macOS); a software device ('cpu', lavapipe) only when named. */
    type: 'discrete' | 'integrated' | 'virtual' | 'cpu';
    computeCapability: string;
    multiprocessors: number;
    totalBytes: number;
    freeBytes: number;
    /** The largest single allocation (0: no limit below its memory); larger weights are uploaded in parts. */
    maxAllocationBytes: number;
  };
}

/** The compute backend sessions get by default ('auto'), and why; and each GPU library's own outcome. */
export interface BackendInfo extends GpuStatus {
  gpus: (GpuStatus & { kind: GpuBackend })[];
}

export interface FolioAddon {
  kv: KvOps;
  /** The engine's method table (held equal to electron/shared/kv/methods.ts by test/kv-schema.test.ts). */
  methods(): MethodRow[];
  /** The fields of the compression statistics and their kinds (held equal to electron/shared/kv/stats.ts). */
  statsSchema(): StatsSchema;
  /** The numeric options of a compression and of sampling, with bounds and defaults (held equal to
   * electron/shared/kv/options.ts). */
  optionsSchema(): { compress: OptionRow[]; sampling: OptionRow[] };
  napiVersion: number;
  backendInfo(): BackendInfo;
  /** The architectures and tensor types the engine opens (held equal to electron/models/gguf-tables.ts). */
  capabilities(): { architectures: string[]; tensorTypes: string[] };
  /** Reads and checks a GGUF file's header without loading tensor data. */
  readGguf(path: string, opts?: { arrays?: 'summary' | 'full' }): GgufHeader;
  ops: OpsBinding;
  /** Opens the tokenizer of a GGUF file (a model or a vocabulary-only file) without loading weights. */
  openVocab(path: string): Vocab;
  /** Maps a GGUF model and checks it; weights stay memory-mapped. */
  loadModel(path: string): Promise<Model>;
  /** Linux: the kernel sends `signal` when the thread that started this process ends; false elsewhere. */
  setParentDeathSignal(signal: number): boolean;
  /** Ends the process at once (_Exit), without waiting for native jobs on the thread pool. */
  exitNow(code: number): never;
}

const require = createRequire(import.meta.url);
let cached: FolioAddon | undefined;

/** Path of the built addon: $FOLIO_ADDON, or native/build/Release/folio.node. */
export function addonPath(): string {
  return process.env.FOLIO_ADDON ?? fileURLToPath(new URL('../../native/build/Release/folio.node', import.meta.url));
}

export function loadAddon(): FolioAddon {
  if (cached) return cached;
  const path = addonPath();
  if (!existsSync(path)) {
    throw new Error(
      `the native engine is not built (${path} is missing): run \`npm install\` or \`npm run build:native\``,
    );
  }
  cached = require(path) as FolioAddon;
  return cached;
}
