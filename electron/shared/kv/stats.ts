// The compression statistics (docs/compression.md, "Statistics"): the app's copy of the engine's field tables
// (native/src/kv/stats.h, reported by the addon's statsSchema()), one zod schema for the binding, the
// engine protocol, the API contract and the storage. test/kv-schema.test.ts holds the field tables equal
// to the engine's in both directions and parses a real compression's statistics strictly.
import { z } from 'zod';

import { CompressionMethod } from './methods.ts';
import { KvFormatName } from './precision.ts';

/** A field's kind, as statsSchema() names it. */
export type StatsKind =
  | 'integer'
  | 'number'
  | 'boolean'
  | 'string'
  | 'numberOrNull'
  | 'stringOrNull'
  | 'int32Array'
  | 'layers'
  | 'heads';
type Fields = Record<string, StatsKind>;

/** One KV head of a layer. */
export const HEAD_STATS_FIELDS = {
  /** Entries kept, the window included. */
  kept: 'integer',
  /** Σ_kept Ā / Σ_all Ā, Ā the window's mean attention (before pooling). */
  retainedMass: 'number',
  /** Fraction of the prefix tokens that hold 90% of the head's Ā. */
  concentration: 'number',
} as const satisfies Fields;

/** One layer. */
export const LAYER_STATS_FIELDS = {
  /** Per-head budget B_l of this layer (window included); a sliding-window layer's min(L, slidingWindow). */
  budget: 'integer',
  /** A sliding-window layer's n_swa: it keeps its window (the newest n_swa entries) and is not scored; its
   * heads' retainedMass and concentration are not measured (1). 0: a global layer. */
  slidingWindow: 'integer',
  /** K + V bytes of the whole prefix in this layer, and of the kept entries. */
  bytesFull: 'integer',
  bytesKept: 'integer',
  /** The paper's normalised bound eps/C = 2 · (Hk − Σ retainedMass). */
  epsOverC: 'number',
  /** L1 change of the window queries' attention output; null when not measured. */
  attnL1: 'numberOrNull',
  msScore: 'number',
  msSelect: 'number',
  msCompact: 'number',
  heads: 'heads',
} as const satisfies Fields;

/** The whole compression. */
export const COMPRESSION_STATS_FIELDS = {
  method: 'string',
  /** L, the prefix's tokens. */
  prefixTokens: 'integer',
  window: 'integer',
  kernel: 'integer',
  alpha: 'number',
  kvType: 'string',
  /** False when everything was kept; `reason` says why ('full', 'prefix within the window', 'budget covers the prefix'). */
  compressed: 'boolean',
  reason: 'stringOrNull',
  /** The resolved per-head budget B (window included) and its selectable part b = B − window. */
  budget: 'integer',
  budgetSelectable: 'integer',
  /** A ratio gave a budget within the window and was raised to window + 1. */
  budgetClamped: 'boolean',
  kvBytesFull: 'integer',
  kvBytesKept: 'integer',
  /** The whole prefill, compression included; and scoring, selection and compaction summed over layers. */
  msPrefill: 'number',
  msCompress: 'number',
  /** How the document was read: in one pass (1) or in chunks, each compressed back to the budget. */
  chunks: 'integer',
  /** Tokens per chunk (the prefix for one pass; the last chunk may be longer by less than the window). */
  chunkTokens: 'integer',
  /** The most the cache reserved at any moment of the read, and the bound a chunked read keeps under (0: none). */
  kvBytesPeak: 'integer',
  kvBytesBound: 'integer',
  /** Positions the document takes in the context: prefixTokens, unless re-based. */
  positions: 'integer',
  /** The kept entries were given contiguous positions (a document longer than the context's positions). */
  rebased: 'boolean',
  layers: 'layers',
  /** Per prefix token: how many (layer, KV head) slots kept it. */
  tokenRetention: 'int32Array',
} as const satisfies Fields;

const scalar = {
  integer: z.number().int(),
  number: z.number(),
  boolean: z.boolean(),
  string: z.string(),
  numberOrNull: z.number().nullable(),
  stringOrNull: z.string().nullable(),
};
type Scalar = typeof scalar;
type ScalarKind = keyof Scalar;

/**
 * A strict object of `fields`, each of its kind's schema; `special` gives the schema of the fields whose
 * kind is not a scalar (arrays), and may narrow a scalar one (a string that is an enum).
 */
function objectOf<
  F extends Fields,
  S extends { [K in keyof F as F[K] extends ScalarKind ? never : K]: z.ZodType } & { [K in keyof F]?: z.ZodType },
>(fields: F, special: S) {
  const shape: Record<string, z.ZodType> = {};
  for (const [name, kind] of Object.entries(fields)) {
    shape[name] = (special as Record<string, z.ZodType>)[name] ?? scalar[kind as ScalarKind];
    if (!shape[name]) throw new Error(`stats field ${name}: kind ${kind} needs its schema`);
  }
  return z.strictObject(shape) as unknown as z.ZodObject<
    { [K in keyof F]: K extends keyof S ? S[K] : F[K] extends ScalarKind ? Scalar[F[K]] : never },
    z.core.$strict
  >;
}

export const HeadStats = objectOf(HEAD_STATS_FIELDS, {});
export const LayerStats = objectOf(LAYER_STATS_FIELDS, { heads: z.array(HeadStats) });

/** The statistics with the retention map as `retention` has it. */
function compressionStats<R extends z.ZodType>(retention: R) {
  return objectOf(COMPRESSION_STATS_FIELDS, {
    method: CompressionMethod,
    kvType: KvFormatName,
    layers: z.array(LayerStats),
    tokenRetention: retention,
  });
}

/** As the engine returns them: the retention map an Int32Array. */
export const EngineCompressionStats = compressionStats(
  z.custom<Int32Array>((v) => v instanceof Int32Array, 'expected an Int32Array'),
);
export type EngineCompressionStats = z.infer<typeof EngineCompressionStats>;

/** As the API contract carries them (JSON): the retention map a plain array. */
export const CompressionStats = compressionStats(z.array(z.number()));
export type CompressionStats = z.infer<typeof CompressionStats>;

/** What the addon's statsSchema() reports, and what these tables say it must. */
export interface StatsSchema {
  compression: Record<string, StatsKind>;
  layer: Record<string, StatsKind>;
  head: Record<string, StatsKind>;
}
export const STATS_SCHEMA: StatsSchema = {
  compression: COMPRESSION_STATS_FIELDS,
  layer: LAYER_STATS_FIELDS,
  head: HEAD_STATS_FIELDS,
};
