// The fidelity suites' measures (folio eval --suite fidelity, alone or over sets): a model's next-token
// predictions through a compressed (or assembled) cache against a reference's, position by position (KL, top-1
// agreement, the true tokens' negative log-likelihood), and the documents they are measured on.
import { readdirSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';

import type { Session } from '../engine/binding.ts';
import { UsageError } from './args.ts';

/** The documents of a folder: every .txt and .md file except README.md, by name. */
export function documentFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    throw new UsageError(`--docs: cannot read the folder ${dir}: ${(e as Error).message}`);
  }
  const files = names
    .filter((n) => ['.txt', '.md'].includes(extname(n).toLowerCase()) && n.toLowerCase() !== 'readme.md')
    .sort()
    .map((n) => join(dir, n))
    .filter((p) => statSync(p).isFile());
  if (files.length === 0) throw new UsageError(`--docs: no .txt or .md documents in ${dir}`);
  return files;
}

/** Per-position log-probabilities of a logits matrix, in float64 (rows × nVocab). */
export function logSoftmaxRows(rows: Float32Array[], nVocab: number): Float64Array {
  const out = new Float64Array(rows.length * nVocab);
  rows.forEach((row, r) => {
    let max = -Infinity;
    for (let i = 0; i < nVocab; i++) if (row[i] > max) max = row[i];
    let sum = 0;
    for (let i = 0; i < nVocab; i++) sum += Math.exp(row[i] - max);
    const lse = max + Math.log(sum);
    for (let i = 0; i < nVocab; i++) out[r * nVocab + i] = row[i] - lse;
  });
  return out;
}

/** Index of the largest value (the lowest index wins ties, as in greedy sampling). */
export function argmax(x: ArrayLike<number>, from: number, n: number): number {
  let best = 0;
  for (let i = 1; i < n; i++) if (x[from + i] > x[from + best]) best = i;
  return best;
}

/** The predictions for the continuation: the logits after the prefix, then those after each continuation
 * token but the last (row i predicts continuation token i). */
export async function continuationRows(
  session: Session,
  afterPrefix: Float32Array,
  rest: Int32Array,
  nVocab: number,
): Promise<Float32Array[]> {
  const rows = [afterPrefix];
  if (rest.length > 1) {
    const { logits } = await session.prefill(rest.subarray(0, rest.length - 1), { allLogits: true });
    for (let r = 0; r < rest.length - 1; r++) rows.push(logits.subarray(r * nVocab, (r + 1) * nVocab));
  }
  return rows;
}

export interface Reference {
  logp: Float64Array;
  top: number[];
}

/** Sums over the positions of one document (one method × budget). */
export interface PositionSums {
  positions: number;
  kl: number;
  agree: number;
  nll: number;
}

export function compare(ref: Reference, rows: Float32Array[], rest: Int32Array, nVocab: number): PositionSums {
  const logq = logSoftmaxRows(rows, nVocab);
  let kl = 0,
    agree = 0,
    nll = 0;
  for (let r = 0; r < rows.length; r++) {
    const o = r * nVocab;
    let k = 0;
    for (let i = 0; i < nVocab; i++) {
      const lp = ref.logp[o + i];
      const p = Math.exp(lp);
      if (p > 0) k += p * (lp - logq[o + i]);
    }
    kl += Math.max(0, k); // KL >= 0; clamp the last-bit rounding of identical distributions
    if (argmax(rows[r], 0, nVocab) === ref.top[r]) agree++;
    nll -= logq[o + rest[r]];
  }
  return { positions: rows.length, kl, agree, nll };
}
