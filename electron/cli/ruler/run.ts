// Runs RULER cases through compressed caches, as the niah suite does (eval-niah.ts runNiah): compress with
// the method and budget, append the question, greedy-decode, score. Three ways to meet the question:
//   question-agnostic (default, the app's case): the document alone is compressed, once per case; each
//     question is asked on a fork of it;
//   question-aware: document and question are compressed together, once per question;
//   multi-question: the document is compressed once and its questions are asked one after the other as
//     the turns of one chat on a fork of it (answers stay in the cache), as the app's chat does and as
//     SCBench's shared-context mode does.
import type { CompressionMethod, CompressionStats, Model, Session } from '../../engine/binding.ts';
import { ChatFormatError, Conversation, formatTokens, systemContent } from '../../services/chat-format.ts';
import type { PrecisionFlags } from '../args.ts';
import { evalCompressOptions, type ReadChoice } from '../eval-niah.ts';
import { answerText, type CaseQuestion, type RulerCase, type Tokenizer } from './generate.ts';
import { score } from './score.ts';

export const RULER_MODES = ['question-agnostic', 'question-aware', 'multi-question'] as const;
export type RulerMode = (typeof RULER_MODES)[number];

export interface RulerRunOptions {
  methods: CompressionMethod[];
  budgets: number[];
  alpha: number;
  window: number;
  kernel: number;
  mode: RulerMode;
  sessionOpts: { nThreads: number; nCtx: number } & PrecisionFlags;
  read?: ReadChoice;
  progress?: (line: string) => void;
}

/** One question under one method and budget. */
export interface RulerResult {
  case: string;
  task: string;
  length: number;
  question: number;
  method: CompressionMethod;
  budget: number;
  score: number;
  output: string;
}

/** Accuracy of one task under one method and budget. */
export interface RulerRow {
  task: string;
  method: CompressionMethod;
  budget: number;
  questions: number;
  /** Questions answered in full (score 1). */
  correct: number;
  /** Mean score: for several expected values, the fraction found. */
  accuracy: number;
  by_length: Record<string, number>;
  /** Key/value bytes of the compressed documents, summed: the full cache and what the method kept. */
  kv_bytes_full: number;
  kv_bytes_kept: number;
  kept_ratio: number;
  /** Seconds of compression, prefill and generation. */
  seconds: number;
}

const greedy = (q: CaseQuestion) => ({ n: q.maxTokens, temperature: 0, stopAtEog: true });

/** The answers of one case under one method and budget, with what its compressions kept. */
interface CaseRun {
  outputs: string[];
  stats: CompressionStats[];
  seconds: number;
}

async function runCase(
  model: Model,
  tok: Tokenizer,
  c: RulerCase,
  method: CompressionMethod,
  budget: number,
  o: RulerRunOptions,
): Promise<CaseRun> {
  const t0 = performance.now();
  const compressOpts = (after: number) => evalCompressOptions(method, budget, o, after);
  const outputs: string[] = [];
  const stats: CompressionStats[] = [];
  const after = (qs: CaseQuestion[]) => qs.reduce((a, q) => a + q.tokens.length + q.maxTokens, 0);
  if (o.mode === 'question-aware') {
    for (const q of c.questions) {
      const session = model.createSession(o.sessionOpts);
      const tokens = new Int32Array(c.prefixTokens.length + q.tokens.length);
      tokens.set(c.prefixTokens);
      tokens.set(q.tokens, c.prefixTokens.length);
      stats.push((await session.compress(tokens, compressOpts(q.maxTokens))).stats);
      outputs.push((await session.generate(greedy(q))).text);
      session.dispose();
    }
  } else {
    const document = model.createSession(o.sessionOpts);
    const room = o.mode === 'multi-question' ? after(c.questions) : Math.max(...c.questions.map((q) => after([q])));
    stats.push((await document.compress(c.prefixTokens, compressOpts(room))).stats);
    if (o.mode === 'question-agnostic') {
      for (const q of c.questions) {
        const chat = document.fork();
        await chat.prefill(q.tokens);
        outputs.push((await chat.generate(greedy(q))).text);
        chat.dispose();
      }
    } else {
      const chat = document.fork();
      outputs.push(...(await askInTurn(model, tok, c, chat)));
      chat.dispose();
    }
    document.dispose();
  }
  return { outputs, stats, seconds: (performance.now() - t0) / 1000 };
}

/** The case's questions as the turns of one conversation over its document (chat-format.ts Conversation). */
async function askInTurn(model: Model, tok: Tokenizer, c: RulerCase, chat: Session): Promise<string[]> {
  const conversation = new Conversation(tok.format.renderer, systemContent(c.haystack, c.instruction));
  const place = { template: tok.format.template, first: false, bos: tok.format.bos };
  const outputs: string[] = [];
  let answerStart = -1;
  for (const q of c.questions) {
    const plan = conversation.plan(q.text);
    // A template that renders the last answer otherwise than it was generated: back to where it began.
    if (plan.dropLastAnswer) chat.truncate(answerStart);
    const header = formatTokens(tok.tokenize, plan.text, place);
    const tokens = formatTokens(tok.tokenize, plan.text + answerText(tok.format, q.answerPrefix), place);
    if (!header.every((t, i) => t === tokens[i]))
      throw new ChatFormatError(`${c.id}: the answer prefix does not start at a token boundary after the turn`);
    if (chat.nPast + tokens.length + q.maxTokens > chat.nCtx)
      throw Object.assign(
        new Error(`${c.id}: the conversation needs more than the ${chat.nCtx} tokens of the context: a larger --ctx`),
        { code: 'CONTEXT_FULL' },
      );
    conversation.accept(plan);
    answerStart = chat.nPast + header.length;
    await chat.prefill(tokens);
    const start = chat.nPast;
    const g = await chat.generate(greedy(q));
    outputs.push(g.text);
    // The conversation holds what the cache holds: the prefix and the tokens fed back.
    const fed = model.detokenize(g.tokens.slice(0, g.nPast - start));
    conversation.answered(answerText(tok.format, q.answerPrefix) + fed);
  }
  return outputs;
}

/** Every case under every method and budget; 'full' keeps everything, so it runs once and stands for every budget. */
export async function runRuler(
  model: Model,
  tok: Tokenizer,
  cases: RulerCase[],
  o: RulerRunOptions,
): Promise<{ rows: RulerRow[]; results: RulerResult[] }> {
  const results: RulerResult[] = [];
  const cells = new Map<string, { stats: CompressionStats[]; seconds: number }>();
  const cell = (task: string, m: string, b: number) => `${task}|${m}|${b}`;
  for (const method of o.methods) {
    for (const c of cases) {
      let fullRun: CaseRun | undefined;
      for (const budget of o.budgets) {
        const run = fullRun ?? (await runCase(model, tok, c, method, budget, o));
        if (method === 'full') fullRun = run;
        run.outputs.forEach((output, i) => {
          const q = c.questions[i];
          const s = score(q.scoring, output, q.answers);
          results.push({ case: c.id, task: c.task, length: c.length, question: i, method, budget, score: s, output });
        });
        const k = cell(c.task, method, budget);
        const acc = cells.get(k) ?? { stats: [], seconds: 0 };
        cells.set(k, { stats: [...acc.stats, ...run.stats], seconds: acc.seconds + run.seconds });
      }
    }
    o.progress?.(`${method}: ${cases.length} cases`);
  }
  const tasks = [...new Set(cases.map((c) => c.task))];
  const rows: RulerRow[] = [];
  for (const task of tasks)
    for (const method of o.methods)
      for (const budget of o.budgets) {
        const mine = results.filter((r) => r.task === task && r.method === method && r.budget === budget);
        const byLength = new Map<number, number[]>();
        for (const r of mine) byLength.set(r.length, [...(byLength.get(r.length) ?? []), r.score]);
        const { stats, seconds } = cells.get(cell(task, method, budget))!;
        const full = stats.reduce((a, s) => a + s.kvBytesFull, 0);
        const kept = stats.reduce((a, s) => a + s.kvBytesKept, 0);
        rows.push({
          task,
          method,
          budget,
          questions: mine.length,
          correct: mine.filter((r) => r.score === 1).length,
          accuracy: mean(mine.map((r) => r.score)),
          by_length: Object.fromEntries([...byLength].map(([l, s]) => [String(l), mean(s)])),
          kv_bytes_full: full,
          kv_bytes_kept: kept,
          kept_ratio: kept / full,
          seconds,
        });
      }
  return { rows, results };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
