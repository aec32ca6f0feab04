// folio eval --suite niah: needle-in-a-haystack retrieval through a compressed cache (docs/compression.md, "Quality
// measures": retrieval, question-agnostic). Each case is a haystack with a planted needle and a question at
// the end. Question-agnostic (the app's normal case): the haystack alone is compressed, with the window at
// its own end, and the question is appended afterwards; question-aware: haystack and question are
// compressed together. Then the answer is greedy-decoded and must match exactly.
import { readFileSync } from 'node:fs';

import { compressOptionsFor } from '../shared/kv/budget.ts';
import type { CompressionMethod, Model } from '../engine/binding.ts';
import { type PrecisionFlags, UsageError } from './args.ts';
import { fmtBudget, methodWidth } from './text-table.ts';

/** One case of a needle-eval set (JSON lines: ../shared/models/needle-eval/README.md). */
export interface NiahCase {
  id: string;
  task: string;
  prompt: string;
  answer: string;
  answer_tokens: number[];
  length: number;
  depth: number;
}

export function readNiahCases(path: string, tasks?: string[], lengths?: number[]): NiahCase[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(`--cases: cannot read ${path}: ${(e as Error).message}`);
  }
  const cases = text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l, i) => {
      try {
        return JSON.parse(l) as NiahCase;
      } catch {
        throw new UsageError(`--cases: line ${i + 1} of ${path} is not JSON`);
      }
    });
  return cases.filter((c) => (!tasks || tasks.includes(c.task)) && (!lengths || lengths.includes(c.length)));
}

/** Splits a case's tokens into the haystack and the question ("What is ..." at the end of the prompt). */
export function splitQuestion(model: Model, c: NiahCase): { tokens: Int32Array; questionStart: number } {
  const tokens = model.tokenize(c.prompt, { addSpecial: true, parseSpecial: false });
  const at = c.prompt.lastIndexOf(' What is');
  if (at < 0) throw new UsageError(`case ${c.id}: no question ("What is ...") at the end of the prompt`);
  const haystack = model.tokenize(c.prompt.slice(0, at), { addSpecial: true, parseSpecial: false });
  // The haystack's tokens must be a prefix of the whole prompt's (SentencePiece splits at the space).
  if (!haystack.every((t, i) => t === tokens[i]))
    throw new UsageError(`case ${c.id}: the question does not start at a token boundary`);
  return { tokens, questionStart: haystack.length };
}

export interface NiahRow {
  method: CompressionMethod;
  budget: number;
  cases: number;
  correct: number;
  accuracy: number;
  /** Accuracy per length bucket and per depth. */
  by_length: Record<string, number>;
  by_depth: Record<string, number>;
  kept_ratio: number;
}

/** What every needle-set run takes: the methods and budgets to run, their options, the sessions'. */
export interface NeedleRunOptions {
  methods: CompressionMethod[];
  budgets: number[];
  alpha: number;
  window: number;
  kernel: number;
  sessionOpts: { nThreads: number; nCtx: number } & PrecisionFlags;
}

export interface NiahOptions extends NeedleRunOptions {
  questionAware: boolean;
  /** How the haystack is read (docs/compression.md, "Reading a long document"). */
  read?: ReadChoice;
}

/** One pass (chunk 0), or chunks; re-based positions for a haystack longer than the context; packed positions
 * (the kept entries at contiguous positions after the read, where the haystack fits too). */
export interface ReadChoice {
  chunk: 'auto' | number;
  rebase: boolean;
  packPositions?: boolean;
}

/** An eval's compression options: `after` tokens follow the document, room a re-based read keeps for them. */
export function evalCompressOptions(
  method: CompressionMethod,
  budget: number,
  o: { alpha: number; window: number; kernel: number; read?: ReadChoice },
  after: number,
) {
  return { ...compressOptionsFor(method, budget, o), ...o.read, room: o.read?.rebase ? after : undefined };
}

export async function runNiah(model: Model, cases: NiahCase[], o: NiahOptions): Promise<NiahRow[]> {
  const split = cases.map((c) => ({ c, ...splitQuestion(model, c) }));
  const rows: NiahRow[] = [];
  for (const method of o.methods) {
    for (const budget of method === 'full' ? [1] : o.budgets) {
      let correct = 0,
        full = 0,
        kept = 0;
      const tally = (m: Map<string, [number, number]>, k: string, ok: boolean) => {
        const [a, n] = m.get(k) ?? [0, 0];
        m.set(k, [a + (ok ? 1 : 0), n + 1]);
      };
      const byLength = new Map<string, [number, number]>(),
        byDepth = new Map<string, [number, number]>();
      for (const { c, tokens, questionStart } of split) {
        const cut = o.questionAware ? tokens.length : questionStart;
        const session = model.createSession(o.sessionOpts);
        // the question and the answer come after the haystack
        const r = await session.compress(
          tokens.subarray(0, cut),
          evalCompressOptions(method, budget, o, tokens.length - cut + c.answer_tokens.length),
        );
        if (cut < tokens.length) await session.prefill(tokens.subarray(cut));
        const g = await session.generate({ n: c.answer_tokens.length, temperature: 0 });
        session.dispose();
        const ok = g.tokens.length === c.answer_tokens.length && g.tokens.every((t, i) => t === c.answer_tokens[i]);
        if (ok) correct++;
        full += r.stats.kvBytesFull;
        kept += r.stats.kvBytesKept;
        tally(byLength, String(c.length), ok);
        tally(byDepth, String(c.depth), ok);
      }
      const ratio = (m: Map<string, [number, number]>) => Object.fromEntries([...m].map(([k, [a, n]]) => [k, a / n]));
      rows.push({
        method,
        budget,
        cases: cases.length,
        correct,
        accuracy: correct / cases.length,
        by_length: ratio(byLength),
        by_depth: ratio(byDepth),
        kept_ratio: kept / full,
      });
    }
  }
  return rows;
}

export function niahTable(rows: NiahRow[], questionAware: boolean): string {
  const lengths = Object.keys(rows[0]?.by_length ?? {});
  const mw = methodWidth(rows.map((r) => r.method));
  const out = [
    `needle in a haystack, ${questionAware ? 'question-aware (the question is compressed with the haystack)' : 'question-agnostic (the haystack is compressed before the question is seen)'}`,
    '',
    `${'method'.padEnd(mw)}  budget   accuracy  ` + lengths.map((l) => `len ${l}`.padStart(9)).join('') + '   KV kept',
  ];
  for (const r of rows) {
    out.push(
      `${r.method.padEnd(mw)}  ${(r.method === 'full' ? 'all' : fmtBudget(r.budget)).padStart(6)}   ` +
        `${r.accuracy.toFixed(3).padStart(8)}  ${lengths.map((l) => r.by_length[l].toFixed(2).padStart(9)).join('')}  ${(100 * r.kept_ratio).toFixed(1).padStart(7)}%`,
    );
  }
  return out.join('\n') + '\n';
}
