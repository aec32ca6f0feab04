// Shared pieces of the CLI commands: option parsing helpers, output, model and prompt handling.
import { readFileSync } from 'node:fs';
import type { ParseArgsConfig } from 'node:util';

import { loadAddon, type CompressOptions, type Model } from '../engine/binding.ts';
import { BACKEND_CHOICES, type BackendChoice } from '../shared/compute-backends.ts';
import { BudgetValue } from '../shared/kv/budget.ts';
import { isCompressionMethod, METHOD_NAMES, RECOMMENDED_METHOD, type CompressionMethod } from '../shared/kv/methods.ts';
import { compressRow, describeOption, type OptionRow, optionSchema, samplingRow } from '../shared/kv/options.ts';
import { KV_TYPES, type KvType } from '../shared/kv/precision.ts';
import { type CompressionSettings, DocumentPositions } from '../api/contract.ts';
import { DEFAULT_SETTINGS } from '../storage/settings.ts';

export type Values = Record<string, string | boolean | undefined>;
export interface Command {
  summary: string;
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  run(v: Values): Promise<void>;
}

export class UsageError extends Error {}

export const common = {
  model: { type: 'string' },
  json: { type: 'boolean' },
  threads: { type: 'string' },
  ctx: { type: 'string' },
  'kv-type': { type: 'string' },
  'kv-type-k': { type: 'string' },
  'kv-type-v': { type: 'string' },
  'kv-rotate': { type: 'string' },
  backend: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The cache's precision flags (sessionOptions reads them), for a command's options and its usage. */
export const precisionFlags = {
  'kv-type': common['kv-type'],
  'kv-type-k': common['kv-type-k'],
  'kv-type-v': common['kv-type-v'],
  'kv-rotate': common['kv-rotate'],
} as const;
export const PRECISION_USAGE = `[--kv-type ${KV_TYPES.join('|')}] [--kv-type-k T] [--kv-type-v T] [--kv-rotate on|off]`;

export function int(v: Values, name: string, def: number, min = 0): number {
  const s = v[name];
  if (s === undefined) return def;
  const n = Number(s);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`--${name} must be an integer >= ${min}, not '${s}'`);
  return n;
}

export function float(v: Values, name: string, def: number): number {
  const s = v[name];
  if (s === undefined) return def;
  const n = Number(s);
  if (!Number.isFinite(n)) throw new UsageError(`--${name} must be a number, not '${s}'`);
  return n;
}

export function str(v: Values, name: string): string | undefined {
  const s = v[name];
  return typeof s === 'string' ? s : undefined;
}

export function need(v: Values, name: string): string {
  const s = str(v, name);
  if (s === undefined) throw new UsageError(`--${name} is required`);
  return s;
}

/** The prompt text from --prompt or --prompt-file (exact bytes, no trailing newline added or removed). */
export function promptText(v: Values): string {
  const file = str(v, 'prompt-file');
  if (file !== undefined) return readFileSync(file, 'utf8');
  return str(v, 'prompt') ?? '';
}

export async function openModel(v: Values): Promise<Model> {
  return loadAddon().loadModel(need(v, 'model'));
}

export function sessionOptions(v: Values) {
  const kvTypeFlag = (flag: string): KvType | undefined => {
    const t = str(v, flag);
    if (t !== undefined && !(KV_TYPES as readonly string[]).includes(t))
      throw new UsageError(`--${flag} must be ${KV_TYPES.join(', ')}, not '${t}'`);
    return t as KvType | undefined;
  };
  const kvType = kvTypeFlag('kv-type') ?? 'f16';
  const kvTypeK = kvTypeFlag('kv-type-k');
  const kvTypeV = kvTypeFlag('kv-type-v');
  // On by default, as in the app's settings (it helped every quantized type measured: docs/quality.md).
  const rotate = str(v, 'kv-rotate') ?? 'on';
  if (rotate !== 'on' && rotate !== 'off') throw new UsageError(`--kv-rotate must be on or off, not '${rotate}'`);
  const backend = str(v, 'backend') ?? 'auto';
  if (!(BACKEND_CHOICES as readonly string[]).includes(backend))
    throw new UsageError(`--backend must be ${BACKEND_CHOICES.join(', ')}, not '${backend}'`);
  return {
    nThreads: int(v, 'threads', 0),
    nCtx: int(v, 'ctx', 0),
    // --kv-type-k sets the keys' type; --kv-type both, where the other flags do not say
    kvType: kvTypeK ?? kvType,
    kvTypeV: kvTypeV ?? kvType,
    kvRotate: rotate === 'on',
    backend: backend as BackendChoice,
  };
}

/** The session options of the command line. */
export type SessionFlags = ReturnType<typeof sessionOptions>;
/** The cache precision of the flags: what an evaluation's compressed runs use. */
export type PrecisionFlags = Pick<SessionFlags, 'kvType'> & Partial<Pick<SessionFlags, 'kvTypeV' | 'kvRotate'>>;

/** Whether any precision flag was given (an evaluation otherwise measures compression alone, in f32). */
export const precisionGiven = (v: Values) =>
  Object.keys(precisionFlags).some((f) => (v as Record<string, unknown>)[f] !== undefined);

/** Bytes in MiB for people. */
export const mib = (b: number) => (b / 2 ** 20).toFixed(2) + ' MiB';

export function print(v: Values, json: unknown, text: string) {
  process.stdout.write(v.json ? JSON.stringify(json) + '\n' : text);
}

export function promptTokens(model: Model, text: string): Int32Array {
  // BOS as the model's metadata says; special-token text in the prompt stays plain text.
  const tokens = model.tokenize(text, { addSpecial: true, parseSpecial: false });
  if (tokens.length === 0) throw new UsageError('the prompt is empty and the model adds no BOS token: give a --prompt');
  return tokens;
}

/** Flags of the commands that compress a document. */
export const compressFlags = {
  doc: { type: 'string' },
  method: { type: 'string' },
  budget: { type: 'string' },
  alpha: { type: 'string' },
  window: { type: 'string' },
  kernel: { type: 'string' },
  beta: { type: 'string' },
  positions: { type: 'string' },
  question: { type: 'string' },
} as const;

export function compressionMethod(name: string): CompressionMethod {
  if (!isCompressionMethod(name)) throw new UsageError(`unknown method '${name}': use ${METHOD_NAMES.join(', ')}`);
  return name;
}

/** A budget as given on the command line: a kept ratio (0.2) or tokens per head (512). */
export function budgetValue(s: string, flag = 'budget'): number {
  const n = s.trim() === '' ? NaN : Number(s);
  if (!BudgetValue.safeParse(n).success)
    throw new UsageError(`--${flag} must be a kept ratio in (0, 1] or a whole number of tokens per head, not '${s}'`);
  return n;
}

/** A numeric flag of an engine option (shared/kv/options.ts): checked against the engine's bounds, its default when absent. */
export function optionFlag(v: Values, flag: string, row: OptionRow): number {
  const s = v[flag];
  if (s === undefined) return row.default!;
  const n = typeof s === 'string' && s.trim() !== '' ? Number(s) : NaN;
  if (!optionSchema(row).safeParse(n).success)
    throw new UsageError(`--${flag} must be ${describeOption(row)}, not '${String(s)}'`);
  return n;
}

/** Compression options from --method, --budget, --alpha, --window, --kernel, --beta. */
export function compressOptions(v: Values): CompressOptions {
  const method = compressionMethod(str(v, 'method') ?? RECOMMENDED_METHOD);
  const budget = str(v, 'budget');
  if (budget === undefined && method !== 'full')
    throw new UsageError('--budget is required: a kept ratio such as 0.2 or tokens per head such as 512');
  return {
    method,
    budget: budget === undefined ? undefined : budgetValue(budget),
    alpha: optionFlag(v, 'alpha', compressRow('alpha')),
    window: optionFlag(v, 'window', compressRow('window')),
    kernel: optionFlag(v, 'kernel', compressRow('kernel')),
    beta: optionFlag(v, 'beta', compressRow('beta')),
  };
}

/**
 * The compression flags as the app's compression settings, which a read takes (read-document.ts): a flag left
 * out is the app's default setting (DEFAULT_SETTINGS), so that the command line reads a document exactly as
 * the app does.
 */
export function compressionSettings(v: Values): CompressionSettings {
  const d = DEFAULT_SETTINGS.compression;
  const budget = str(v, 'budget');
  const positions = str(v, 'positions') ?? d.positions ?? 'auto';
  if (!DocumentPositions.safeParse(positions).success)
    throw new UsageError(`--positions must be ${DocumentPositions.options.join(', ')}, not '${positions}'`);
  return {
    method: compressionMethod(str(v, 'method') ?? d.method),
    budget: budget === undefined ? d.budget : budgetValue(budget),
    alpha: optionFlag(v, 'alpha', compressRow('alpha')),
    window: optionFlag(v, 'window', compressRow('window')),
    kernel: optionFlag(v, 'kernel', compressRow('kernel')),
    beta: v.beta === undefined ? undefined : optionFlag(v, 'beta', compressRow('beta')),
    positions: positions as DocumentPositions,
  };
}

/** A text file's contents; DOC_READ / DOC_EMPTY errors say what is wrong. */
export function readText(docPath: string): string {
  let text: string;
  try {
    text = readFileSync(docPath, 'utf8');
  } catch (e) {
    throw Object.assign(new Error(`cannot read the document ${docPath}: ${(e as Error).message}`), {
      code: 'DOC_READ',
    });
  }
  if (text.trim() === '') throw Object.assign(new Error(`the document ${docPath} is empty`), { code: 'DOC_EMPTY' });
  return text;
}

/**
 * The tokens of a document's text to compress: BOS as the model says, the text, and with a question
 * (question-aware compression) the question after a blank line, so the observation window holds it.
 */
export function documentTokens(
  model: Model,
  text: string,
  docPath: string,
  question?: string,
): { tokens: Int32Array; questionTokens: number } {
  if (text.trim() === '') throw Object.assign(new Error(`the document ${docPath} is empty`), { code: 'DOC_EMPTY' });
  const doc = model.tokenize(text, { addSpecial: true, parseSpecial: false });
  if (question === undefined) return { tokens: doc, questionTokens: 0 };
  const q = model.tokenize('\n\n' + question, { addSpecial: false, parseSpecial: false });
  const tokens = new Int32Array(doc.length + q.length);
  tokens.set(doc);
  tokens.set(q, doc.length);
  return { tokens, questionTokens: q.length };
}

/** Refuses a document longer than the context, saying so plainly. */
export function checkFits(tokens: number, nCtx: number, reserve: number) {
  if (tokens + reserve > nCtx)
    throw Object.assign(
      new Error(
        `the document is ${tokens} tokens long, but the context holds ${nCtx}` +
          (reserve ? ` (${reserve} kept free for questions and answers)` : '') +
          ': use a shorter document or a larger --ctx if the model allows it',
      ),
      { code: 'DOC_TOO_LONG' },
    );
}

/** Flags of the commands that sample text. */
export const samplingFlags = {
  temp: { type: 'string' },
  'top-k': { type: 'string' },
  'top-p': { type: 'string' },
  'min-p': { type: 'string' },
  'repeat-penalty': { type: 'string' },
  'repeat-last-n': { type: 'string' },
  seed: { type: 'string' },
} as const;

/** Sampling options from --temp, --top-k, --top-p, --min-p, --repeat-penalty, --repeat-last-n, --seed (a random seed when none). */
export function samplingOptions(v: Values) {
  return {
    temperature: optionFlag(v, 'temp', samplingRow('temperature')),
    topK: optionFlag(v, 'top-k', samplingRow('topK')),
    topP: optionFlag(v, 'top-p', samplingRow('topP')),
    minP: optionFlag(v, 'min-p', samplingRow('minP')),
    repeatPenalty: optionFlag(v, 'repeat-penalty', samplingRow('repeatPenalty')),
    repeatLastN: optionFlag(v, 'repeat-last-n', samplingRow('repeatLastN')),
    seed: v.seed !== undefined ? optionFlag(v, 'seed', samplingRow('seed')) : Math.floor(Math.random() * 2 ** 32),
  };
}
