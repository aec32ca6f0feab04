// folio eval --suite fidelity: how far each compression method moves the model's predictions from the
// full cache (docs/compression.md, "Quality measures"). For every document: compress its first part question-
// agnostically, teacher-force the rest through the compressed cache and through the full cache, and compare
// the next-token distributions position by position (KL, top-1 agreement, perplexity of the true tokens),
// next to the engine's own measure of the window queries' attention-output change per layer.
import { writeFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import type { CompressionMethod, CompressionStats, Model } from '../../engine/binding.ts';
import {
  type Command,
  UsageError,
  budgetValue,
  checkFits,
  common,
  compressionMethod,
  documentTokens,
  readText,
  float,
  int,
  openModel,
  optionFlag,
  print,
  sessionOptions,
  str,
  precisionFlags,
  type PrecisionFlags,
  PRECISION_USAGE,
  precisionGiven,
} from '../args.ts';
import { compressOptionsFor } from '../../shared/kv/budget.ts';
import { METHOD_NAMES } from '../../shared/kv/methods.ts';
import { compressRow } from '../../shared/kv/options.ts';
import { fidelitySvg, rulerSvg } from '../eval-plot.ts';
import { citeTable, runCite } from '../eval-cite.ts';
import { type NeedleRunOptions, niahTable, type ReadChoice, readNiahCases, runNiah } from '../eval-niah.ts';
import { niahSetTable, runNiahSets } from '../eval-niah-set.ts';
import { citationLayers } from '../../services/citations.ts';
import { RULER_TASKS, isRulerTask } from '../ruler/tasks.ts';
import { rulerTable, runRulerSuite } from '../ruler/suite.ts';
import { runSetFidelity, setFidelityTable } from '../eval-fidelity-set.ts';
import {
  argmax,
  compare,
  continuationRows,
  documentFiles,
  logSoftmaxRows,
  type PositionSums,
  type Reference,
} from '../predictions.ts';
import { fmtBudget, methodWidth } from '../text-table.ts';

const defaultMethods: CompressionMethod[] = [...METHOD_NAMES];
const defaultBudgets = [0.2, 0.4, 0.6, 0.8];
/** The project's own documents: test/docs/ (short stories written for the project). */
export const defaultDocsDir = fileURLToPath(new URL('../../../test/docs/', import.meta.url));

export interface FidelityDocRow {
  document: string;
  method: CompressionMethod;
  budget: number;
  /** Per-head budget in tokens (window included), as the engine resolved it; the prefix length when nothing was compressed. */
  budget_tokens: number;
  compressed: boolean;
  positions: number;
  kl: number;
  top1: number;
  perplexity: number;
  attn_l1_layers: (number | null)[];
  attn_l1_mean: number | null;
  kv_bytes_full: number;
  kv_bytes_kept: number;
}

export interface FidelityRow {
  method: CompressionMethod;
  budget: number;
  documents: number;
  positions: number;
  /** Mean KL(full ‖ method) in nats over every continuation position of every document. */
  kl: number;
  /** Fraction of positions where the method's most likely next token is the full cache's. */
  top1: number;
  /** exp(mean negative log-likelihood of the true next tokens). */
  perplexity: number;
  /** Per layer: the L1 change of the window queries' attention output, mean over documents. */
  attn_l1_layers: (number | null)[];
  /** Mean of attn_l1_layers. */
  attn_l1_mean: number | null;
  /** Key/value bytes of the prefixes, summed over documents: the full cache and what the method kept. */
  kv_bytes_full: number;
  kv_bytes_kept: number;
  /** kv_bytes_kept / kv_bytes_full. */
  kept_ratio: number;
}

export interface FidelityDoc {
  document: string;
  path: string;
  tokens: number;
  prefix_tokens: number;
  continuation_tokens: number;
  /** Perplexity of the continuation under the full cache. */
  full_perplexity: number;
}

export interface FidelityReport {
  suite: 'fidelity';
  model: {
    path: string;
    name: string;
    architecture: string;
    layers: number;
    heads: number;
    kv_heads: number;
    context: number;
  };
  settings: {
    methods: CompressionMethod[];
    budgets: number[];
    split: number;
    alpha: number;
    window: number;
    kernel: number;
    kv_type: 'f32';
    n_ctx: number;
    threads: number;
    docs: string;
    note: string;
  };
  documents: FidelityDoc[];
  rows: FidelityRow[];
  per_document: FidelityDocRow[];
  seconds: number;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

function layerLosses(stats: CompressionStats): (number | null)[] {
  return stats.layers.map((l) => (l.attnL1 === null || !Number.isFinite(l.attnL1) ? null : l.attnL1));
}

function meanOrNull(xs: (number | null)[]): number | null {
  const v = xs.filter((x): x is number => x !== null);
  return v.length === xs.length && v.length > 0 ? mean(v) : null;
}

export interface FidelityOptions {
  methods: CompressionMethod[];
  budgets: number[];
  split: number;
  alpha: number;
  window: number;
  kernel: number;
  docsDir: string;
  sessionOpts: { nThreads: number; nCtx: number };
  /** The compressed runs' cache precision; default f32 (the reference is f32 always). */
  precision?: PrecisionFlags;
  /** How each document's prefix is read: one pass (default) or chunks. */
  read?: ReadChoice;
  progress?: (line: string) => void;
}

/** Runs the fidelity suite over every document of a folder. */
export async function runFidelity(model: Model, modelPath: string, o: FidelityOptions): Promise<FidelityReport> {
  const t0 = performance.now();
  const info = model.info();
  const nVocab = info.nVocab;
  const files = documentFiles(o.docsDir);
  const sessionOpts = { ...o.sessionOpts, kvType: 'f32' as const };
  const compressedOpts = { ...o.sessionOpts, ...(o.precision ?? { kvType: 'f32' as const }) };
  const documents: FidelityDoc[] = [];
  const perDoc: FidelityDocRow[] = [];
  const sums = new Map<string, PositionSums>();
  const key = (m: string, b: number) => `${m}@${b}`;
  let nCtx = 0,
    threads = 0;

  // Every document is tokenized and checked first: a document that does not fit stops the run before any work.
  const docs = files.map((path) => ({
    path,
    name: basename(path),
    tokens: documentTokens(model, readText(path), path).tokens,
  }));
  {
    const probe = model.createSession(sessionOpts);
    nCtx = probe.nCtx;
    threads = probe.nThreads;
    probe.dispose();
  }
  for (const d of docs) {
    try {
      checkFits(d.tokens.length, nCtx, 0);
    } catch (e) {
      throw Object.assign(new Error(`${d.path}: ${(e as Error).message}`), { code: (e as { code?: string }).code });
    }
    const P = Math.round(o.split * d.tokens.length);
    if (P < 1 || d.tokens.length - P < 1)
      throw Object.assign(
        new Error(
          `${d.path}: ${d.tokens.length} tokens is too short to split at ${o.split} into a prefix and a continuation`,
        ),
        { code: 'DOC_TOO_SHORT' },
      );
  }

  for (const d of docs) {
    const P = Math.round(o.split * d.tokens.length);
    const prefix = d.tokens.subarray(0, P);
    const rest = d.tokens.subarray(P);
    o.progress?.(`${d.name}: ${d.tokens.length} tokens, ${P} compressed, ${rest.length} teacher-forced`);

    // The full-cache reference, computed once per document.
    const refSession = model.createSession(sessionOpts);
    const pre = await refSession.prefill(prefix);
    const refRows = await continuationRows(refSession, pre.logits, rest, nVocab);
    const ref: Reference = { logp: logSoftmaxRows(refRows, nVocab), top: refRows.map((r) => argmax(r, 0, nVocab)) };
    refSession.dispose();
    let fullNll = 0;
    for (let r = 0; r < rest.length; r++) fullNll -= ref.logp[r * nVocab + rest[r]];
    documents.push({
      document: d.name,
      path: d.path,
      tokens: d.tokens.length,
      prefix_tokens: P,
      continuation_tokens: rest.length,
      full_perplexity: Math.exp(fullNll / rest.length),
    });

    for (const method of o.methods) {
      // 'full' keeps everything whatever the budget: run it once and report it under every budget.
      let fullRun: { stats: CompressionStats; s: PositionSums } | undefined;
      for (const budget of o.budgets) {
        let run = fullRun;
        if (!run) {
          const session = model.createSession(compressedOpts);
          const c = await session.compress(prefix, {
            ...compressOptionsFor(method, budget, o),
            measureLoss: true,
            ...o.read,
          });
          const rows = await continuationRows(session, c.logits, rest, nVocab);
          run = { stats: c.stats, s: compare(ref, rows, rest, nVocab) };
          session.dispose();
          if (method === 'full') fullRun = run;
        }
        const { stats, s } = run;
        const l1 = layerLosses(stats);
        perDoc.push({
          document: d.name,
          method,
          budget,
          budget_tokens: stats.compressed ? stats.budget : stats.prefixTokens,
          compressed: stats.compressed,
          positions: s.positions,
          kl: s.kl / s.positions,
          top1: s.agree / s.positions,
          perplexity: Math.exp(s.nll / s.positions),
          attn_l1_layers: l1,
          attn_l1_mean: meanOrNull(l1),
          kv_bytes_full: stats.kvBytesFull,
          kv_bytes_kept: stats.kvBytesKept,
        });
        const k = key(method, budget);
        const acc = sums.get(k) ?? { positions: 0, kl: 0, agree: 0, nll: 0 };
        sums.set(k, {
          positions: acc.positions + s.positions,
          kl: acc.kl + s.kl,
          agree: acc.agree + s.agree,
          nll: acc.nll + s.nll,
        });
      }
    }
  }

  const rows: FidelityRow[] = [];
  for (const method of o.methods) {
    for (const budget of o.budgets) {
      const s = sums.get(key(method, budget))!;
      const mine = perDoc.filter((r) => r.method === method && r.budget === budget);
      const layers = info.nLayer;
      const l1: (number | null)[] = [];
      for (let l = 0; l < layers; l++) l1.push(meanOrNull(mine.map((r) => r.attn_l1_layers[l] ?? null)));
      const full = mine.reduce((a, r) => a + r.kv_bytes_full, 0);
      const kept = mine.reduce((a, r) => a + r.kv_bytes_kept, 0);
      rows.push({
        method,
        budget,
        documents: mine.length,
        positions: s.positions,
        kl: s.kl / s.positions,
        top1: s.agree / s.positions,
        perplexity: Math.exp(s.nll / s.positions),
        attn_l1_layers: l1,
        attn_l1_mean: meanOrNull(l1),
        kv_bytes_full: full,
        kv_bytes_kept: kept,
        kept_ratio: kept / full,
      });
    }
  }

  return {
    suite: 'fidelity',
    model: {
      path: modelPath,
      name: info.name,
      architecture: info.architecture,
      layers: info.nLayer,
      heads: info.nHead,
      kv_heads: info.nHeadKv,
      context: info.contextLength,
    },
    settings: {
      methods: o.methods,
      budgets: o.budgets,
      split: o.split,
      alpha: o.alpha,
      window: o.window,
      kernel: o.kernel,
      kv_type: 'f32',
      n_ctx: nCtx,
      threads,
      docs: o.docsDir,
      note: 'F32 key/value caches for every run, so the differences come from compression and not from F16 rounding',
    },
    documents,
    rows,
    per_document: perDoc,
    seconds: (performance.now() - t0) / 1000,
  };
}

const fmtNum = (x: number | null, d = 4) => (x === null ? '-' : x.toFixed(d));
const fmtKl = (x: number) => (x === 0 ? '0' : x < 1e-3 ? x.toExponential(2) : x.toFixed(4));

/** The report as a table for people. */
export function fidelityTable(r: FidelityReport): string {
  const out: string[] = [];
  const mw = methodWidth(r.settings.methods);
  out.push(
    `fidelity of compressed caches: ${r.model.name || basename(r.model.path)} (${r.model.layers} layers, ${r.model.heads} query heads, ${r.model.kv_heads} KV heads)`,
    `${r.documents.length} documents from ${r.settings.docs}; the first ${Math.round(r.settings.split * 100)}% of each compressed question-agnostically ` +
      `(window ${r.settings.window}, kernel ${r.settings.kernel}, alpha ${r.settings.alpha}), the rest teacher-forced`,
    `F32 KV caches throughout, so the differences come from compression, not from F16 rounding`,
    '',
    `${'method'.padEnd(mw)}  budget   KL(full||m)   top-1   perplexity   attn L1 (mean)   KV kept`,
  );
  // 'full' keeps everything whatever the budget: one row says so.
  const rows = r.rows.filter((row) => row.method !== 'full' || row.budget === r.settings.budgets[0]);
  for (const row of rows) {
    out.push(
      `${row.method.padEnd(mw)}  ${(row.method === 'full' ? 'all' : fmtBudget(row.budget)).padStart(6)}  ${fmtKl(row.kl).padStart(12)}  ${row.top1.toFixed(3).padStart(6)}  ` +
        `${row.perplexity.toFixed(3).padStart(11)}  ${fmtNum(row.attn_l1_mean).padStart(15)}  ${(100 * row.kept_ratio).toFixed(1).padStart(6)}%`,
    );
  }
  const smallest = r.settings.budgets[0];
  out.push('', `attention L1 loss per layer at budget ${fmtBudget(smallest)} (mean over documents)`);
  out.push('method'.padEnd(mw) + ' ' + r.rows[0].attn_l1_layers.map((_, l) => `   layer ${l}`.padStart(10)).join(''));
  for (const row of r.rows.filter((x) => x.budget === smallest)) {
    out.push(row.method.padEnd(mw) + ' ' + row.attn_l1_layers.map((x) => fmtNum(x).padStart(10)).join(''));
  }
  out.push('', 'documents');
  for (const d of r.documents) {
    out.push(
      `  ${d.document.padEnd(40)} ${String(d.tokens).padStart(4)} tokens: ${d.prefix_tokens} compressed, ${d.continuation_tokens} teacher-forced, ` +
        `full-cache perplexity ${d.full_perplexity.toFixed(3)}`,
    );
  }
  out.push(`(${r.seconds.toFixed(1)} s)`);
  return out.join('\n') + '\n';
}

function list<T>(s: string | undefined, def: T[], parse: (x: string) => T, flag: string): T[] {
  if (s === undefined) return def;
  const items = s
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
  if (items.length === 0) throw new UsageError(`--${flag} is empty`);
  return items.map(parse);
}

export const evalCommand: Command = {
  summary:
    'measure what compression does to the model: its predictions (fidelity), its retrieval (niah) or RULER tasks (ruler); whether citations find the needle (cite)',
  usage:
    `folio eval --model M --suite fidelity [--methods ${METHOD_NAMES.join(',')}]\n` +
    '           [--budgets 0.2,0.4,0.6,0.8] [--docs DIR] [--split 0.75] [--alpha 0.2] [--window 32] [--kernel 7]\n' +
    '           [--svg FILE] [--threads N] [--ctx N] [--json]\n' +
    '      documents: every .txt/.md in DIR but README.md (default test/docs); the full-cache reference is F32,\n' +
    `      the compressed runs too unless a precision is given (${PRECISION_USAGE});\n` +
    '      [--set N]: N documents in a row read apart and assembled, or together, against together with the full cache\n' +
    'folio eval --model M --suite niah --cases FILE.jsonl [--tasks passkey] [--lengths 256,512] [--question-aware]\n' +
    '           [--methods ...] [--budgets ...] [--alpha 0.2] [--window 32] [--kernel 7] [--json]\n' +
    '      cases in the needle-eval format (../shared/models/needle-eval); budgets as ratios or tokens per head;\n' +
    '      [--set N]: each case in a set of N documents, read together or compressed alone and assembled;\n' +
    '      [--pair]: with --set, the needle split into two facts in two documents, the answer needing both\n' +
    'folio eval --model M --suite cite --cases FILE.jsonl [--tasks passkey] [--lengths 256,512]\n' +
    '           [--methods full] [--budgets ...] [--alpha 0.2] [--window 32] [--kernel 7] [--json]\n' +
    "      the same cases: does the answer's attention (or the lexical fallback) cite the needle's sentence first?\n" +
    `folio eval --model M --suite ruler [--tasks ${RULER_TASKS.join(',')}]\n` +
    '           [--lengths 512,1024] [--samples 5] [--seed 0] [--docs DIR] [--question-aware | --multi-question]\n' +
    '           [--methods ...] [--budgets ...] [--alpha 0.2] [--window 32] [--kernel 7] [--svg FILE] [--json]\n' +
    "      RULER cases generated from the documents of DIR with the model's tokenizer; lengths in its tokens\n" +
    '      (default: powers of two from 512 up to the context)\n' +
    'all suites: [--chunk auto|N] reads each document in chunks (default 0: one pass); [--rebase] with re-based\n' +
    '      positions where it is longer than --ctx; [--pack] with packed positions (the kept entries contiguous) after it',
  options: {
    model: common.model,
    json: common.json,
    threads: common.threads,
    ctx: common.ctx,
    help: common.help,
    suite: { type: 'string' },
    methods: { type: 'string' },
    budgets: { type: 'string' },
    docs: { type: 'string' },
    split: { type: 'string' },
    alpha: { type: 'string' },
    window: { type: 'string' },
    kernel: { type: 'string' },
    svg: { type: 'string' },
    cases: { type: 'string' },
    tasks: { type: 'string' },
    lengths: { type: 'string' },
    'question-aware': { type: 'boolean' },
    'multi-question': { type: 'boolean' },
    samples: { type: 'string' },
    seed: { type: 'string' },
    ...precisionFlags,
    chunk: { type: 'string' },
    rebase: { type: 'boolean' },
    pack: { type: 'boolean' },
    set: { type: 'string' },
    pair: { type: 'boolean' },
  },
  async run(v) {
    const suite = str(v, 'suite') ?? 'fidelity';
    if (suite !== 'fidelity' && suite !== 'niah' && suite !== 'ruler' && suite !== 'cite')
      throw new UsageError(`unknown suite '${suite}': use fidelity, niah, ruler or cite`);
    // The citation suite asks about the answers, not the compression: the full cache unless told otherwise.
    const methods = [
      ...new Set(
        list(str(v, 'methods'), suite === 'cite' ? ['full' as const] : defaultMethods, compressionMethod, 'methods'),
      ),
    ];
    const budgets = [
      ...new Set(list(str(v, 'budgets'), defaultBudgets, (x) => budgetValue(x, 'budgets'), 'budgets')),
    ].sort((a, b) => a - b);
    const split = float(v, 'split', 0.75);
    if (!(split > 0 && split < 1)) throw new UsageError(`--split must be between 0 and 1, not '${v.split}'`);
    const alpha = optionFlag(v, 'alpha', compressRow('alpha'));
    const window = optionFlag(v, 'window', compressRow('window'));
    const kernel = optionFlag(v, 'kernel', compressRow('kernel'));
    const chunkFlag = str(v, 'chunk') ?? '0';
    if (chunkFlag !== 'auto' && !/^\d+$/.test(chunkFlag))
      throw new UsageError(`--chunk must be auto, 0 (one pass) or a number of tokens, not '${chunkFlag}'`);
    const read: ReadChoice = {
      chunk: chunkFlag === 'auto' ? 'auto' : Number(chunkFlag),
      rebase: !!v.rebase,
      packPositions: !!v.pack,
    };
    const docsDir = resolve(str(v, 'docs') ?? defaultDocsDir);
    const { nThreads, nCtx } = sessionOptions(v);
    const svg = str(v, 'svg');
    const modelPath = str(v, 'model');
    const lengths = list(
      str(v, 'lengths'),
      [] as number[],
      (x) => {
        const n = Number(x);
        if (!Number.isInteger(n) || n < 1) throw new UsageError(`--lengths: '${x}' is not a length`);
        return n;
      },
      'lengths',
    );
    const questionAware = !!v['question-aware'];
    // What the needle suites (niah, its sets, cite) all take.
    const needleRun: NeedleRunOptions = { methods, budgets, alpha, window, kernel, sessionOpts: sessionOptions(v) };
    if (suite === 'ruler') {
      const tasks = list(
        str(v, 'tasks'),
        [...RULER_TASKS],
        (x) => {
          if (!isRulerTask(x)) throw new UsageError(`unknown task '${x}': use ${RULER_TASKS.join(', ')}`);
          return x;
        },
        'tasks',
      );
      if (questionAware && v['multi-question'])
        throw new UsageError('--question-aware and --multi-question do not go together: choose one');
      const samples = int(v, 'samples', 5, 1);
      const seed = int(v, 'seed', 0);
      const model = await openModel(v);
      const report = await runRulerSuite(model, modelPath!, {
        tasks: [...new Set(tasks)],
        lengths: [...new Set(lengths)].sort((a, b) => a - b),
        samples,
        seed,
        docsDir,
        documents: documentFiles(docsDir),
        methods,
        budgets,
        alpha,
        window,
        kernel,
        mode: questionAware ? 'question-aware' : v['multi-question'] ? 'multi-question' : 'question-agnostic',
        sessionOpts: sessionOptions(v),
        read,
        progress: v.json ? undefined : (line) => process.stderr.write(line + '\n'),
      });
      model.dispose();
      if (svg !== undefined) writeFileSync(svg, rulerSvg(report));
      print(
        v,
        { ...report, ...(svg !== undefined ? { svg } : {}) },
        rulerTable(report) + (svg !== undefined ? `plot: ${svg}\n` : ''),
      );
      return;
    }
    if (suite === 'cite') {
      const casesPath = str(v, 'cases');
      if (casesPath === undefined) throw new UsageError('--cases is required for the cite suite');
      const tasks = str(v, 'tasks')?.split(',') ?? ['passkey'];
      const model = await openModel(v);
      const cases = readNiahCases(casesPath, tasks, lengths.length ? lengths : undefined);
      if (cases.length === 0) throw new UsageError(`--cases: no case of ${casesPath} matches --tasks and --lengths`);
      const rows = await runCite(model, cases, needleRun);
      const nLayer = model.info().nLayer;
      model.dispose();
      const layers = citationLayers(nLayer);
      print(
        v,
        {
          suite: 'cite',
          model: modelPath,
          cases: casesPath,
          settings: { methods, budgets, alpha, window, kernel, tasks, lengths, layers, n_layer: nLayer },
          rows,
        },
        citeTable(rows, layers, nLayer),
      );
      return;
    }
    if (suite === 'niah') {
      const casesPath = str(v, 'cases');
      if (casesPath === undefined) throw new UsageError('--cases is required for the niah suite');
      const tasks = str(v, 'tasks')?.split(',');
      const model = await openModel(v);
      const cases = readNiahCases(casesPath, tasks, lengths.length ? lengths : undefined);
      if (cases.length === 0) throw new UsageError(`--cases: no case of ${casesPath} matches --tasks and --lengths`);
      if (v.pair && v.set === undefined)
        throw new UsageError('--pair needs --set N: its two facts are said in two documents of a set');
      if (v.set !== undefined) {
        const size = int(v, 'set', 3, 2);
        const pair = !!v.pair;
        const rows = await runNiahSets(model, cases, { ...needleRun, size, pair });
        model.dispose();
        print(
          v,
          {
            suite: 'niah',
            model: modelPath,
            cases: casesPath,
            settings: { set: size, pair, methods, budgets, alpha, window, kernel, tasks, lengths },
            rows,
          },
          niahSetTable(rows, size, pair),
        );
        return;
      }
      const rows = await runNiah(model, cases, { ...needleRun, questionAware, read });
      model.dispose();
      print(
        v,
        {
          suite: 'niah',
          model: modelPath,
          cases: casesPath,
          settings: { methods, budgets, alpha, window, kernel, question_aware: questionAware, tasks, lengths, ...read },
          rows,
        },
        niahTable(rows, questionAware),
      );
      return;
    }
    const model = await openModel(v);
    if (v.set !== undefined) {
      const size = int(v, 'set', 3, 2);
      const rows = await runSetFidelity(model, docsDir, { ...needleRun, size });
      model.dispose();
      print(
        v,
        {
          suite: 'fidelity',
          model: modelPath,
          docs: docsDir,
          settings: { set: size, methods, budgets, alpha, window, kernel },
          rows,
        },
        setFidelityTable(rows, size),
      );
      return;
    }
    const report = await runFidelity(model, modelPath!, {
      methods,
      budgets,
      split,
      alpha,
      window,
      kernel,
      docsDir,
      sessionOpts: { nThreads, nCtx },
      precision: precisionGiven(v) ? sessionOptions(v) : undefined,
      read,
      progress: v.json ? undefined : (line) => process.stderr.write(line + '\n'),
    });
    model.dispose();
    if (svg !== undefined) writeFileSync(svg, fidelitySvg(report));
    print(
      v,
      { ...report, ...(svg !== undefined ? { svg } : {}) },
      fidelityTable(report) + (svg !== undefined ? `plot: ${svg}\n` : ''),
    );
  },
};
