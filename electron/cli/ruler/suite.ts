// folio eval --suite ruler: RULER's synthetic tasks over a haystack made of any folder of text, run through
// compressed caches (docs/compression.md, "Quality measures"). This file puts the pieces together: the
// documents, the cases (generate.ts), the runs (run.ts), the report and its table.
import { basename } from 'node:path';

import type { CompressionMethod, Model } from '../../engine/binding.ts';
import { kvFormat, kvFormatName } from '../../shared/kv/precision.ts';
import { UsageError } from '../args.ts';
import { generateCases, modelTokenizer } from './generate.ts';
import { readCorpus } from './haystack.ts';
import { runRuler, type RulerMode, type RulerResult, type RulerRow, type RulerRunOptions } from './run.ts';
import type { RulerTask } from './tasks.ts';
import { fmtBudget, methodWidth } from '../text-table.ts';

export interface RulerSuiteOptions extends RulerRunOptions {
  tasks: RulerTask[];
  /** Length buckets in the model's tokens; none: the powers of two from 512 up to the context. */
  lengths: number[];
  samples: number;
  seed: number;
  /** The folder the haystacks come from, and its documents (commands/eval.ts documentFiles). */
  docsDir: string;
  documents: string[];
}

export interface RulerCaseSummary {
  id: string;
  task: string;
  length: number;
  /** Tokens of the document (instruction and haystack, rendered): what is compressed. */
  document_tokens: number;
  question_tokens: number[];
  answers: string[][];
}

export interface RulerReport {
  suite: 'ruler';
  model: { path: string; name: string; chat_template: boolean };
  settings: {
    tasks: RulerTask[];
    lengths: number[];
    samples: number;
    seed: number;
    mode: RulerMode;
    methods: CompressionMethod[];
    budgets: number[];
    alpha: number;
    window: number;
    kernel: number;
    kv_type: string;
    n_ctx: number;
    docs: string;
    /** How each document was read (docs/compression.md, "Reading a long document"): 0 in one pass. */
    chunk: 'auto' | number;
    rebase: boolean;
  };
  cases: RulerCaseSummary[];
  rows: RulerRow[];
  /** Mean accuracy over the tasks, per method and budget (RULER's average). */
  average: { method: CompressionMethod; budget: number; accuracy: number }[];
  results: RulerResult[];
  seconds: number;
}

/** The default length buckets: powers of two from 512 up to the context (the context itself when smaller). */
export function defaultLengths(nCtx: number): number[] {
  const out: number[] = [];
  for (let l = 512; l <= nCtx; l *= 2) out.push(l);
  return out.length ? out : [nCtx];
}

export async function runRulerSuite(model: Model, modelPath: string, o: RulerSuiteOptions): Promise<RulerReport> {
  const t0 = performance.now();
  const probe = model.createSession(o.sessionOpts);
  const nCtx = probe.nCtx;
  probe.dispose();
  const lengths = o.lengths.length ? o.lengths : defaultLengths(nCtx);
  const over = lengths.filter((l) => l > nCtx);
  if (over.length)
    throw new UsageError(`--lengths: ${over.join(', ')} is longer than the context (${nCtx} tokens): a larger --ctx`);
  const tok = modelTokenizer(model);
  const cases = generateCases(tok, readCorpus(o.documents), { ...o, lengths });
  o.progress?.(
    `${cases.length} cases (${o.tasks.length} tasks × ${lengths.length} lengths × ${o.samples}), seed ${o.seed}`,
  );
  const { rows, results } = await runRuler(model, tok, cases, o);
  const average = o.methods.flatMap((method) =>
    o.budgets.map((budget) => {
      const mine = rows.filter((r) => r.method === method && r.budget === budget);
      return { method, budget, accuracy: mine.reduce((a, r) => a + r.accuracy, 0) / mine.length };
    }),
  );
  const info = model.info();
  return {
    suite: 'ruler',
    model: { path: modelPath, name: info.name, chat_template: tok.format.template },
    settings: {
      tasks: o.tasks,
      lengths,
      samples: o.samples,
      seed: o.seed,
      mode: o.mode,
      methods: o.methods,
      budgets: o.budgets,
      alpha: o.alpha,
      window: o.window,
      kernel: o.kernel,
      kv_type: kvFormatName(kvFormat(o.sessionOpts)),
      n_ctx: nCtx,
      docs: o.docsDir,
      chunk: o.read?.chunk ?? 0,
      rebase: o.read?.rebase ?? false,
    },
    cases: cases.map((c) => ({
      id: c.id,
      task: c.task,
      length: c.length,
      document_tokens: c.prefixTokens.length,
      question_tokens: c.questions.map((q) => q.tokens.length),
      answers: c.questions.map((q) => q.answers),
    })),
    rows,
    average,
    results,
    seconds: (performance.now() - t0) / 1000,
  };
}

const MODE_TEXT: Record<RulerMode, string> = {
  'question-agnostic': 'question-agnostic: the document is compressed before the question is seen',
  'question-aware': 'question-aware: the document and the question are compressed together',
  'multi-question': "multi-question: the document is compressed once, its questions asked as one chat's turns",
};

/** The report as a table for people. */
export function rulerTable(r: RulerReport): string {
  const s = r.settings;
  const lengths = s.lengths.map(String);
  const mw = methodWidth(s.methods);
  const out = [
    `RULER on ${r.model.name || basename(r.model.path)}${r.model.chat_template ? ' (chat template)' : ' (plain prompts)'}: ` +
      `${r.cases.length} cases (${s.samples} per task and length), seed ${s.seed}, haystacks from ${s.docs}`,
    MODE_TEXT[s.mode],
    '',
    `task             ${'method'.padEnd(mw)}  budget   questions  accuracy  correct` +
      (lengths.length > 1 ? lengths.map((l) => `len ${l}`.padStart(9)).join('') : '') +
      '   KV kept   seconds',
  ];
  for (const row of r.rows) {
    out.push(
      `${row.task.padEnd(16)} ${row.method.padEnd(mw)}  ${fmtBudget(row.budget).padStart(6)}  ${String(row.questions).padStart(10)}  ` +
        `${row.accuracy.toFixed(3).padStart(8)}  ${String(row.correct).padStart(7)}` +
        (lengths.length > 1 ? lengths.map((l) => (row.by_length[l] ?? NaN).toFixed(2).padStart(9)).join('') : '') +
        `  ${(100 * row.kept_ratio).toFixed(1).padStart(7)}%  ${row.seconds.toFixed(2).padStart(8)}`,
    );
  }
  out.push('', 'mean over the tasks');
  for (const a of r.average)
    out.push(
      `${'all'.padEnd(16)} ${a.method.padEnd(mw)}  ${fmtBudget(a.budget).padStart(6)}  ${a.accuracy.toFixed(3).padStart(20)}`,
    );
  out.push(`(${r.seconds.toFixed(1)} s)`);
  return out.join('\n') + '\n';
}
