// Memory estimate before a model is loaded: what the weights, the KV cache and the working buffers
// take, against the memory available now.
//
// weights  = the bytes of the tensor data (the engine maps the file; every mapped page is touched).
// KV cache = layers × KV heads × (key head size + value head size) × element bytes × tokens
//            (F16: 2 bytes; Llama-3.2-1B: 16 × 8 × (64 + 64) × 2 = 32 KiB per token).
//   full:       tokens = the context length n_ctx.
//   compressed: the prefix (system prompt + document, L = n_ctx − conversation room) keeps B tokens
//               per KV head, with B = round(r·L) for a kept ratio r ≤ 1 or B tokens when budget > 1
//               (docs/compression.md: B includes the observation window w; L ≤ w means no compression, else B ≤ w
//               is raised to w + 1, then B ≥ L means no compression: electron/shared/kv/budget.ts, the
//               engine's rule), and the conversation's room is kept whole:
//               tokens = B + conversation room. Ada allocation moves slots between heads but keeps
//               the layer's total, so the bytes are the same as uniform SnapKV.
// working  = activations of one prefill step of n = min(512, n_ctx) tokens, in F32 (4 bytes):
//               4 · n · (2·E + H·dk + Hk·(dk + dv) + H·dv + 3·F + V)
//            E: embedding length (the residual stream and its normed copy), H·dk: queries,
//            Hk·(dk+dv): keys and values, H·dv: attention output, 3·F: FFN gate, up and their
//            product, V: logits over the vocabulary;
//          + the residual stream of everything read at once (the pass keeps it from layer to layer):
//            4 · E · L for the prefix in one pass, 4 · E · C for a chunk;
//          + while compressing in one pass (a layer is compressed right after its prefill, docs/compression.md),
//            that layer's full K/V of the prefix, L · Hk · (dk + dv) · element bytes, the 32 entries each head
//            of a cut layer keeps free, and the window's attention scores, 4 · H · w · L; but a method that cuts every layer at the end (the global schedule ranks
//            them together, kvzip re-reads the document first) holds every layer's whole prefix until then,
//            (L − B) · KV bytes per token more than the kept cache;
//          or, for a document read in chunks of C tokens (each compressed back to the budget as it comes), one
//            chunk more in every layer, (C + w) · KV bytes per token (a chunk may be longer by less than the
//            window), and the window's scores over the budget and the chunk, 4 · H · w · (B + C);
//          + for kvzip, the re-reading in every layer: a piece of at most 2,048 tokens of the prefix or chunk,
//            the request to repeat it (at most 64 tokens), and the pass's slack (a quarter more, at least 32), as
//            Context::reread_room.
// Not counted: the flat cache's int32 source position per kept entry (under 1% at head size 128) and
// allocator slack; the engine's real numbers come back in the compression statistics.
import { freemem, totalmem } from 'node:os';

import { ApiError, type CompressionSettings, type MemoryEstimate } from '../api/contract.ts';
import { formatBytes } from '../api/units.ts';
import { DEFAULT_WINDOW, resolveBudget } from '../shared/kv/budget.ts';
import { methodRow } from '../shared/kv/methods.ts';
import { type KvFormat, kvEntryBytes } from '../shared/kv/precision.ts';
import { inspectGguf, type GgufSummary } from './gguf-header.ts';

/** The numbers of a model that the estimate needs. */
export interface ModelShape {
  layers: number;
  heads: number;
  kvHeads: number;
  /** Key head size. */
  headSize: number;
  /** Value head size. */
  valueHeadSize: number;
  embeddingLength: number;
  feedForwardLength: number;
  vocabSize: number;
  /** The model's own context length, if known. */
  contextLength: number | null;
  /** Bytes of tensor data. */
  weightBytes: number;
  /** Layers whose attention slides over the newest slidingWindow positions (gemma3's five of six, every
   * phi3 layer): a compression keeps min(prefix, slidingWindow) of their entries per head, not the budget
   * (docs/compression.md, "Models with sliding-window layers"). Default none. */
  slidingLayers?: number;
  slidingWindow?: number;
}

/** The shape from a GGUF header summary; throws ApiError MODEL_SHAPE_UNKNOWN naming a missing key. */
export function shapeFromSummary(s: GgufSummary): ModelShape {
  const need = (v: number | null, what: string): number => {
    if (v === null || !Number.isFinite(v) || v <= 0) {
      throw new ApiError('MODEL_SHAPE_UNKNOWN', `cannot estimate memory: the file does not give the ${what}`);
    }
    return v;
  };
  const embeddingLength = need(s.embeddingLength, 'embedding length');
  return {
    layers: need(s.layers, 'layer count (block_count)'),
    heads: need(s.heads, 'attention head count'),
    kvHeads: need(s.kvHeads, 'KV head count'),
    headSize: need(s.headSize, 'head size'),
    valueHeadSize: need(s.valueHeadSize, 'value head size'),
    embeddingLength,
    feedForwardLength: s.feedForwardLength ?? 4 * embeddingLength,
    vocabSize: need(s.vocabSize, 'vocabulary size'),
    contextLength: s.contextLength,
    weightBytes: s.tensorBytes,
    slidingLayers: s.slidingLayers,
    slidingWindow: s.slidingWindow,
  };
}

/** The shape of a model the engine has loaded (its info()). */
export function shapeFromInfo(i: {
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  headDim: number;
  headDimV: number;
  nEmbd: number;
  nFf: number;
  nVocab: number;
  contextLength: number;
  weightBytes: number;
  slidingLayers: number;
  slidingWindow: number;
}): ModelShape {
  return {
    layers: i.nLayer,
    heads: i.nHead,
    kvHeads: i.nHeadKv,
    headSize: i.headDim,
    valueHeadSize: i.headDimV,
    embeddingLength: i.nEmbd,
    feedForwardLength: i.nFf,
    vocabSize: i.nVocab,
    contextLength: i.contextLength,
    weightBytes: i.weightBytes,
    slidingLayers: i.slidingLayers,
    slidingWindow: i.slidingWindow,
  };
}

const F32 = 4;
const F16_CACHE: KvFormat = { k: 'f16', v: 'f16', rotate: false };

/** Bytes of one token's key and value in one KV head, in the cache's format. */
function kvBytesPerEntry(shape: Pick<ModelShape, 'headSize' | 'valueHeadSize'>, kv: KvFormat): number {
  return kvEntryBytes(kv.k, shape.headSize) + kvEntryBytes(kv.v, shape.valueHeadSize);
}

/** KV cache bytes per token: layers × KV heads × (a key and a value in the cache's format). */
export function kvBytesPerToken(
  shape: Pick<ModelShape, 'layers' | 'kvHeads' | 'headSize' | 'valueHeadSize'>,
  kv: KvFormat = F16_CACHE,
): number {
  return shape.layers * shape.kvHeads * kvBytesPerEntry(shape, kv);
}

export type CompressionInput = Pick<CompressionSettings, 'method' | 'budget'> &
  Partial<Pick<CompressionSettings, 'window'>>;

/**
 * Tokens each KV head keeps of an L-token prefix under a compression budget (docs/compression.md), resolved as the
 * engine resolves it (electron/shared/kv/budget.ts; test/kv-schema.test.ts compares the two).
 */
export function keptPrefixTokens(
  prefixTokens: number,
  c: CompressionInput | undefined,
): { kept: number; compressed: boolean; clamped: boolean } {
  const L = Math.max(0, Math.floor(prefixTokens));
  if (!c) return { kept: L, compressed: false, clamped: false };
  const r = resolveBudget(c, L);
  return { kept: r.B, compressed: r.compress, clamped: r.clamped };
}

export interface EstimateOptions {
  /** Context tokens (document + conversation); default the model's own context length (else 4096). */
  nCtx?: number;
  compression?: CompressionInput;
  /** Room kept whole for the conversation after the document; default min(2048, n_ctx / 4). */
  conversationTokens?: number;
  /** How the cache stores its entries; default f16. */
  kv?: KvFormat;
  /** Tokens per prefill step; default 512. */
  batchTokens?: number;
  /** The document is read in chunks of this many tokens (docs/compression.md); default one pass. */
  chunkTokens?: number;
  /** Where free and total memory come from; default node:os. */
  memory?: { free(): number; total(): number };
  /** What that memory is, for the message (e.g. "the NVIDIA H200's memory"); default this machine's. */
  memoryName?: string;
}

export interface MemoryBreakdown extends MemoryEstimate {
  nCtx: number;
  prefixTokens: number;
  conversationTokens: number;
  keptPrefixTokens: number;
  kvBytesPerToken: number;
  activationBytes: number;
  compressionBytes: number;
  /** The KV cache at its fullest while the document is read (part of the total with compressionBytes). */
  kvBytesReading: number;
  machineBytes: number;
}

/** KVzip re-reads a document in pieces of at most this many tokens (Context::reread), each after a request to
 * repeat it of at most this many more (the request and the 8 tokens it quotes); test/kv-chunked.test.ts holds
 * the estimate to the engine's peak. */
const REREAD_PIECE_TOKENS = 2048;
const REREAD_REQUEST_TOKENS = 64;
/** Entries a head keeps free after it is cut, for what comes next (FlatKvCache::kSpare). */
const CACHE_SPARE_TOKENS = 32;

/** Memory needed to run a model with a context and compression, against the memory available now. */
export function estimateMemory(shape: ModelShape, o: EstimateOptions = {}): MemoryBreakdown {
  const nCtx = Math.max(1, Math.floor(o.nCtx ?? shape.contextLength ?? 4096));
  const kv = o.kv ?? F16_CACHE;
  const conversationTokens = Math.min(nCtx, Math.max(0, Math.floor(o.conversationTokens ?? Math.min(2048, nCtx / 4))));
  const prefixTokens = nCtx - conversationTokens;
  const perToken = kvBytesPerToken(shape, kv);
  const { kept, compressed, clamped } = keptPrefixTokens(prefixTokens, o.compression);

  // Compressed, a sliding-window layer keeps its window instead of the budget: the prefix entries kept per KV
  // head, summed over the layers, in bytes
  const sliding = shape.slidingWindow ? Math.min(shape.slidingLayers ?? 0, shape.layers) : 0;
  const keptSliding = Math.min(prefixTokens, shape.slidingWindow ?? 0);
  const keptBytes = compressed
    ? (perToken / shape.layers) * ((shape.layers - sliding) * kept + sliding * keptSliding)
    : perToken * kept;

  const kvBytesFull = perToken * nCtx;
  const kvBytesCompressed = keptBytes + perToken * conversationTokens;

  const {
    embeddingLength: E,
    heads: H,
    kvHeads: Hk,
    headSize: dk,
    valueHeadSize: dv,
    feedForwardLength: F,
    vocabSize: V,
  } = shape;
  const chunk = o.chunkTokens && compressed ? o.chunkTokens : 0;
  const n = Math.min(o.batchTokens ?? 512, nCtx, chunk || nCtx);
  const activationBytes =
    F32 * n * (2 * E + H * dk + Hk * (dk + dv) + H * dv + 3 * F + V) + F32 * E * (chunk || prefixTokens);
  const w = o.compression?.window ?? DEFAULT_WINDOW;
  // while a layer is compressed: its full K/V of the prefix, and the window's attention scores; read in
  // chunks, one chunk more in every layer and the scores over the budget and the chunk
  const row = o.compression ? methodRow(o.compression.method) : undefined;
  const rereads = compressed && row?.scorer === 'kvzip';
  const cutsAtEnd = rereads || row?.schedule === 'global';
  const rereadTokens = Math.min(chunk ? chunk + w : prefixTokens, REREAD_PIECE_TOKENS) + REREAD_REQUEST_TOKENS;
  // the cache at its fullest while the document is read; a layer cut in one pass keeps room for 32 more entries
  const kvBytesReading = !compressed
    ? perToken * prefixTokens
    : (chunk
        ? keptBytes + perToken * (chunk + w)
        : cutsAtEnd
          ? perToken * prefixTokens
          : keptBytes + perToken * CACHE_SPARE_TOKENS + prefixTokens * Hk * kvBytesPerEntry(shape, kv)) +
      (rereads ? perToken * (rereadTokens + Math.max(32, Math.floor(rereadTokens / 4))) : 0);
  const compressionBytes = !compressed
    ? 0
    : kvBytesReading - keptBytes + F32 * H * w * (chunk ? kept + chunk : prefixTokens);
  const workingBytes = activationBytes + compressionBytes;

  const totalBytes = shape.weightBytes + kvBytesCompressed + workingBytes;
  const memory = o.memory ?? { free: freemem, total: totalmem };
  const availableBytes = memory.free();
  const machineBytes = memory.total();
  const fits = totalBytes <= availableBytes;

  const kvPart = compressed
    ? `KV cache ${formatBytes(kvBytesCompressed)} (${count(nCtx)} tokens, ${count(kept)} of the ${count(prefixTokens)}-token document kept per head${sliding ? `, ${count(keptSliding)} in the ${count(sliding)} sliding-window layers` : ''}; ${formatBytes(kvBytesFull)} uncompressed${clamped ? '; the budget was raised to the observation window + 1' : ''})`
    : `KV cache ${formatBytes(kvBytesFull)} (${count(nCtx)} tokens × ${formatBytes(perToken)})`;
  const parts = `weights ${formatBytes(shape.weightBytes)} + ${kvPart} + working buffers ${formatBytes(workingBytes)}`;
  const where = o.memoryName ? ` of ${o.memoryName}` : '';
  let message = `needs ${formatBytes(totalBytes)}, ${formatBytes(availableBytes)}${where} available: ${parts}`;
  if (!fits) {
    message +=
      totalBytes > machineBytes
        ? `. That is more than ${o.memoryName ? `all ${formatBytes(machineBytes)} of ${o.memoryName}` : `this machine's ${formatBytes(machineBytes)} of memory`}: choose a shorter context, a smaller compression budget or a smaller model`
        : `. Close other programs, or choose a shorter context, a smaller compression budget or a smaller model`;
  }

  return {
    weightBytes: shape.weightBytes,
    kvBytesFull,
    kvBytesCompressed,
    workingBytes,
    totalBytes,
    availableBytes,
    fits,
    message,
    nCtx,
    prefixTokens,
    conversationTokens,
    keptPrefixTokens: kept,
    kvBytesPerToken: perToken,
    activationBytes,
    compressionBytes,
    kvBytesReading,
    machineBytes,
  };
}

/**
 * The longest context (a multiple of 256, at least 256, at most the model's own) whose estimate
 * fits the available memory; null when not even 256 tokens fit.
 */
export function largestFittingContext(shape: ModelShape, o: Omit<EstimateOptions, 'nCtx'> = {}): number | null {
  const step = 256;
  const max = Math.max(step, Math.floor((shape.contextLength ?? 4096) / step) * step);
  const fitsAt = (n: number) => estimateMemory(shape, { ...o, nCtx: n }).fits;
  if (!fitsAt(step)) return null;
  let lo = 1; // in steps; fits
  let hi = max / step;
  if (fitsAt(hi * step)) return hi * step;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (fitsAt(mid * step)) lo = mid;
    else hi = mid;
  }
  return lo * step;
}

/** Reads a GGUF header and estimates it. */
export async function estimateForFile(path: string, o: EstimateOptions = {}): Promise<MemoryBreakdown> {
  return estimateMemory(shapeFromSummary(await inspectGguf(path)), o);
}

export { formatBytes };

function count(n: number): string {
  return n.toLocaleString('en-US');
}
