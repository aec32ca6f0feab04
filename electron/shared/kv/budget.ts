// Compression budgets. A budget is one number, read one way everywhere: a kept ratio r in (0, 1], or
// whole tokens per KV head when > 1 (the observation window included). The engine decodes and resolves
// it (native/src/kv/method.cc: set_budget, resolve_budget; compress() returns the result in its
// statistics). The memory estimate runs before any model is loaded, without the engine, so it resolves
// with the copy below; test/kv-schema.test.ts compares the two over a grid of prefixes, windows and budgets.
// The same holds for the chunk size of a chunked read (native/src/kv/compressor.cc: default_chunk) and the
// bound such a read keeps the cache under (Compressor::chunked_bound).

import { methodRow, type CompressionMethod } from './methods.ts';
import { COMPRESS_DEFAULTS, compressOption } from './options.ts';

/** A budget: a kept ratio (<= 1) or whole tokens per head (> 1), within the engine's bounds (options.ts). */
export const BudgetValue = compressOption('budget').refine(
  (b) => b <= 1 || Number.isInteger(b),
  'a budget above 1 is tokens per head and must be whole',
);

/** The engine's default observation window and pyramid steepness. */
export const DEFAULT_WINDOW = COMPRESS_DEFAULTS.window;
export const DEFAULT_BETA = COMPRESS_DEFAULTS.beta;

/**
 * The engine's compression options for `method` at `budget` with the rest of a compression's settings (the
 * app's settings, an eval's flags): `full` keeps everything and takes no budget; an option left out is the
 * engine's default.
 */
export function compressOptionsFor(
  method: CompressionMethod,
  budget: number,
  o: { alpha?: number; window?: number; kernel?: number; beta?: number },
) {
  return {
    method,
    budget: method === 'full' ? undefined : budget,
    alpha: o.alpha,
    window: o.window,
    kernel: o.kernel,
    beta: o.beta,
  };
}

export type BudgetKind = { ratio: number } | { tokensPerHead: number };

/** What a budget number means. */
export function budgetKind(budget: number): BudgetKind {
  return budget <= 1 ? { ratio: budget } : { tokensPerHead: budget };
}

/** The per-head budget of an L-token prefix, as the engine's resolve_budget has it. */
export interface ResolvedBudget {
  /** False: everything is kept, for `reason`. */
  compress: boolean;
  reason: '' | 'full' | 'prefix within the window' | 'budget covers the prefix';
  /** Per-head budget, window included (L when nothing is compressed). */
  B: number;
  /** Its selectable part B − w (0 when nothing is compressed). */
  b: number;
  /** A ratio gave B <= w and was raised to w + 1. */
  clamped: boolean;
}

export function resolveBudget(
  c: { method: CompressionMethod; budget: number; window?: number },
  prefixTokens: number,
): ResolvedBudget {
  const L = Math.max(0, Math.floor(prefixTokens));
  const w = c.window ?? DEFAULT_WINDOW;
  if (methodRow(c.method).selection === 'full') return { compress: false, reason: 'full', B: L, b: 0, clamped: false };
  if (L <= w) return { compress: false, reason: 'prefix within the window', B: L, b: 0, clamped: false };
  const kind = budgetKind(c.budget);
  // llround: halves away from zero (Math.round takes them up, the same for positive numbers)
  let B = 'ratio' in kind ? Math.round(kind.ratio * L) : kind.tokensPerHead;
  let clamped = false;
  if (B <= w) {
    B = w + 1; // only a ratio gets here: the engine refuses tokens within the window
    clamped = true;
  }
  if (B >= L) return { compress: false, reason: 'budget covers the prefix', B: L, b: 0, clamped };
  return { compress: true, reason: '', B, b: B - w, clamped };
}

/** The chunk size the engine takes for a chunked read ('auto') with a per-head budget of B tokens in an nCtx
 * context: about the budget, within 512 to 1024 tokens, at most a quarter of the positions. */
export function defaultChunk(B: number, nCtx: number): number {
  return Math.min(Math.min(Math.max(B, 512), 1024), Math.max(Math.floor(nCtx / 4), 1));
}

/** One budget over a set of documents, as the engine's reselect takes it (docs/compression.md, "One budget over
 * the set"). */
export interface SetBudgetChoice {
  /** The share of the documents' kept entries the set keeps (contract SetBudget). */
  keep: number;
  /** Ada's floor within a layer (1: every head alike, as a uniform allocator). */
  alpha: number;
  /** The layers' shares from one ranking over them all (the global schedule). */
  acrossLayers: boolean;
}

/** One budget of `keep` chosen as the documents' reads chose: by their method's allocator and schedule. */
export function setBudgetChoice(keep: number, method: CompressionMethod, alpha: number): SetBudgetChoice {
  const m = methodRow(method);
  return { keep, alpha: m.allocator === 'ada' ? alpha : 1, acrossLayers: m.schedule === 'global' };
}
