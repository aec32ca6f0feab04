// What the set suites (eval-niah-set.ts, eval-fidelity-set.ts) share: a set of documents read apart, saved and
// placed side by side as a chat over stored documents opens, and one budget over such a set at the memory of
// another (docs/compression.md, "One budget over the set").
import { join } from 'node:path';

import type { Model, Session, SessionOptions } from '../engine/binding.ts';
import { setBudgetChoice, type SetBudgetChoice } from '../shared/kv/budget.ts';
import type { CompressionMethod } from '../shared/kv/methods.ts';

/** A set placed in a session: where each document's entries lie ([from, to) pairs back to back), and how many
 * entries the documents hold there. */
export interface PlacedSet {
  session: Session;
  spans: number[];
  held: number;
}

/**
 * Each document (its tokens as read alone, BOS first) read with `options`, saved under `dir`, and placed after
 * the previous in a new session: the first whole, each next after its BOS (its place in the set has none).
 */
export async function placeApart(
  model: Model,
  sessionOpts: SessionOptions,
  dir: string,
  docs: readonly Int32Array[],
  options: Parameters<Session['compress']>[1],
): Promise<PlacedSet> {
  const session = model.createSession(sessionOpts);
  const spans: number[] = [];
  for (const [i, doc] of docs.entries()) {
    const alone = model.createSession(sessionOpts);
    await alone.compress(doc, options);
    const path = join(dir, `${i}.folio-kv`);
    await alone.save(path);
    alone.dispose();
    const start = session.nPast;
    spans.push(start, (await session.appendSaved(path, { from: i === 0 ? 0 : 1 })).nPast);
  }
  const held = session.reselect(spans, { keep: 1 }).entries.reduce((n, e) => n + e.reduce((a, b) => a + b, 0), 0);
  return { session, spans, held };
}

/**
 * One budget over a placed set that leaves it `target` entries (another way's, at equal memory): of what it holds,
 * the scored entries (all but each head's window of `window` tokens, which stay) cut to the rest.
 */
export function budgetToMatch(
  set: PlacedSet,
  target: number,
  docs: readonly Int32Array[],
  window: number,
  method: CompressionMethod,
  alpha: number,
): SetBudgetChoice {
  const slots = set.session.memory().headLengths.flat().length;
  const windows = docs.reduce((n, d) => n + slots * Math.min(window, d.length), 0);
  return setBudgetChoice(Math.min(1, Math.max(1e-3, (target - windows) / (set.held - windows))), method, alpha);
}
