// Shared pieces of the CLI commands: option parsing helpers, output, model and prompt handling.
import { readFileSync } from 'node:fs';
import type { ParseArgsConfig } from 'node:util';

import { loadAddon, type Model } from '../engine/binding.ts';

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
  help: { type: 'boolean', short: 'h' },
} as const;

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
  const kvType = str(v, 'kv-type') ?? 'f16';
  if (kvType !== 'f16' && kvType !== 'f32') throw new UsageError(`--kv-type must be f16 or f32, not '${kvType}'`);
  return { nThreads: int(v, 'threads', 0), nCtx: int(v, 'ctx', 0), kvType: kvType as 'f16' | 'f32' };
}

export function print(v: Values, json: unknown, text: string) {
  process.stdout.write(v.json ? JSON.stringify(json) + '\n' : text);
}

export function promptTokens(model: Model, text: string): Int32Array {
  // BOS as the model's metadata says; special-token text in the prompt stays plain text.
  const tokens = model.tokenize(text, { addSpecial: true, parseSpecial: false });
  if (tokens.length === 0) throw new UsageError('the prompt is empty and the model adds no BOS token: give a --prompt');
  return tokens;
}

