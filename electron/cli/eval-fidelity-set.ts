// folio eval --suite fidelity --set N: what a set of documents read apart and assembled (a chat over stored
// documents) does to the model's predictions, against the same set read together (issue 41, "Quality"). Each set
// is N stories of the docs folder in a row, each its first 100 tokens; the last one's first half is the set's last
// document and its second half the continuation, teacher-forced after the set. Token for token the same text either way: the first
// document with its BOS, each next one without (as a set leaves a document's BOS out). The reference is the set read
// together with the full cache; against it, by KL and top-1 agreement over the continuation:
//   assembled, full   each document's full cache alone, placed side by side: what independent encoding costs;
//   together, M@B     the set read as one document and compressed;
//   assembled, M@B    each compressed alone and placed side by side;
//   one budget, M@B   each compressed alone to twice B, placed, then as many entries kept as assembled at B keeps,
//                     chosen by one budget over the set (Session.reselect with the reads' scores): the same memory,
//                     spent where the scores say.
// Each row says the share of the full cache's entries it kept, so that rows compare at their real memory.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

import type { CompressionMethod, Model, Session } from '../engine/binding.ts';
import { compressOptionsFor, type SetBudgetChoice } from '../shared/kv/budget.ts';
import { budgetToMatch, placeApart, type PlacedSet } from './eval-set-assembly.ts';
import {
  argmax,
  compare,
  continuationRows,
  documentFiles,
  logSoftmaxRows,
  type PositionSums,
  type Reference,
} from './predictions.ts';
import type { NeedleRunOptions } from './eval-niah.ts';
import { fmtBudget, methodWidth } from './text-table.ts';

export interface SetFidelityRow {
  mode: 'together' | 'assembled' | 'one budget';
  method: CompressionMethod;
  budget: number;
  sets: number;
  positions: number;
  /** Mean KL(together, full ‖ this) in nats over every continuation position of every set. */
  kl: number;
  top1: number;
  /** The entries kept, over the full cache's (every set's). */
  kept: number;
}

interface FidelitySet {
  name: string;
  /** Each document's tokens as read alone: the first with its BOS, each next without (its place in the set). */
  docs: Int32Array[];
  rest: Int32Array;
}

/** Each document's first tokens at most: sets of a few fit a small model's context (stories260K's 512). */
const DOCUMENT_TOKENS = 100;

function sets(model: Model, files: string[], size: number): FidelitySet[] {
  const tok = (text: string, bos: boolean) =>
    model.tokenize(text, { addSpecial: bos, parseSpecial: false }).subarray(0, DOCUMENT_TOKENS + (bos ? 1 : 0));
  return files.map((_, i) => {
    const names = Array.from({ length: size }, (_, j) => files[(i + j) % files.length]);
    const texts = names.map((f) => readFileSync(f, 'utf8').replace(/\s+/g, ' ').trim());
    const last = tok(texts[size - 1], false);
    const half = Math.floor(last.length / 2);
    return {
      name: names.map((f) => basename(f, '.txt')).join(' + '),
      docs: [...texts.slice(0, -1).map((t, j) => tok(t, j === 0)), last.subarray(0, half)],
      rest: last.subarray(half),
    };
  });
}

export async function runSetFidelity(
  model: Model,
  docsDir: string,
  o: NeedleRunOptions & { size: number },
): Promise<SetFidelityRow[]> {
  const nVocab = model.info().nVocab;
  const sessionOpts = { ...o.sessionOpts, kvType: 'f32' as const };
  const all = sets(model, documentFiles(docsDir), o.size);
  const dir = mkdtempSync(join(tmpdir(), 'folio-fidelity-set-'));
  type Sums = PositionSums & { kept: number; full: number };
  const sums = new Map<string, { row: Pick<SetFidelityRow, 'mode' | 'method' | 'budget'>; s: Sums }>();
  const add = (mode: SetFidelityRow['mode'], method: CompressionMethod, budget: number, s: Sums) => {
    const key = `${mode} ${method} ${budget}`;
    const t = sums.get(key) ?? {
      row: { mode, method, budget },
      s: { positions: 0, kl: 0, agree: 0, nll: 0, kept: 0, full: 0 },
    };
    t.s = {
      positions: t.s.positions + s.positions,
      kl: t.s.kl + s.kl,
      agree: t.s.agree + s.agree,
      nll: t.s.nll + s.nll,
      kept: t.s.kept + s.kept,
      full: t.s.full + s.full,
    };
    sums.set(key, t);
  };
  /** The continuation's rows after a session holding the set (its logits after the set first). */
  const rows = async (session: Session, rest: Int32Array) => {
    const { logits } = await session.prefill(rest.subarray(0, 1));
    return continuationRows(session, logits, rest.subarray(1), nVocab);
  };
  try {
    for (const set of all) {
      const together = new Int32Array(set.docs.reduce((n, d) => n + d.length, 0));
      set.docs.reduce((at, d) => (together.set(d, at), at + d.length), 0);
      // The prediction of the continuation's first token comes from the set's own last position: the rest is
      // teacher-forced after a token taken from it, so that every mode predicts from the same place.
      const [first, rest] = [together.subarray(0, together.length - 1), together.subarray(together.length - 1)];
      const forced = new Int32Array(rest.length + set.rest.length);
      forced.set(rest);
      forced.set(set.rest, rest.length);
      const refSession = model.createSession(sessionOpts);
      await refSession.prefill(first);
      const refRows = await rows(refSession, forced);
      refSession.dispose();
      const ref: Reference = { logp: logSoftmaxRows(refRows, nVocab), top: refRows.map((r) => argmax(r, 0, nVocab)) };
      const target = forced.subarray(1);
      /** The session's predictions against the reference, and the entries it keeps against the full cache's. */
      const score = async (session: Session) => {
        const heads = session.memory().headLengths;
        const kept = heads.flat().reduce((n, x) => n + x, 0);
        const full = heads.length * (heads[0]?.length ?? 0) * session.nPast;
        return { ...compare(ref, await rows(session, forced), target, nVocab), kept, full };
      };
      // Each document as read alone: the first with its BOS, each next with one of its own (as the app's prefix has
      // its system prompt), which the set leaves out; the last without its final token, which is forced.
      const docs = set.docs.map((d, i) => {
        const own = i === 0 ? d : Int32Array.from([model.info().tokenizer.bos, ...d]);
        return i === set.docs.length - 1 ? own.subarray(0, own.length - 1) : own;
      });
      /** The documents read apart with `options` and placed; then one budget over them where asked. */
      const assembled = async (
        options: Parameters<Session['compress']>[1],
        budget?: (placed: PlacedSet) => SetBudgetChoice,
      ) => {
        const placed = await placeApart(model, sessionOpts, dir, docs, options);
        if (budget) placed.session.reselect(placed.spans, budget(placed));
        const r = await score(placed.session);
        placed.session.dispose();
        return { ...r, held: placed.held };
      };
      add('assembled', 'full', 1, await assembled({ method: 'full' }));
      for (const method of o.methods.filter((m) => m !== 'full'))
        for (const budget of o.budgets) {
          const options = compressOptionsFor(method, budget, o);
          const t = model.createSession(sessionOpts);
          await t.compress(first, options);
          add('together', method, budget, await score(t));
          t.dispose();
          const apart = await assembled(options);
          add('assembled', method, budget, apart);
          if (budget > 0.5) continue;
          // Read at twice the budget, then cut to as many entries in all as the documents keep apart at it.
          const share = (placed: PlacedSet) => budgetToMatch(placed, apart.held, docs, o.window, method, o.alpha);
          add('one budget', method, budget, await assembled(compressOptionsFor(method, 2 * budget, o), share));
        }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return [...sums.values()].map(({ row, s }) => ({
    ...row,
    sets: all.length,
    positions: s.positions,
    kl: s.kl / s.positions,
    top1: s.agree / s.positions,
    kept: s.kept / s.full,
  }));
}

export function setFidelityTable(rows: SetFidelityRow[], size: number): string {
  const mw = methodWidth(rows.map((r) => r.method));
  const out = [
    `fidelity of a set of ${size} documents against the set read together with the full cache (${rows[0]?.sets ?? 0} sets, ${rows[0]?.positions ?? 0} positions)`,
    '',
    `${'mode'.padEnd(11)}${'method'.padEnd(mw)}  budget    kept        KL   top-1`,
  ];
  for (const r of rows)
    out.push(
      `${r.mode.padEnd(11)}${r.method.padEnd(mw)}  ${(r.method === 'full' ? 'all' : fmtBudget(r.budget)).padStart(6)}  ` +
        `${(100 * r.kept).toFixed(1).padStart(5)}%  ${r.kl.toFixed(4).padStart(8)}  ${r.top1.toFixed(3).padStart(6)}`,
    );
  return `${out.join('\n')}\n`;
}
