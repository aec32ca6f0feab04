// folio bench-compare: Folio's CPU speed side by side with the reference engines, on the same GGUF files,
// in one run. Each round runs every engine once on every file, in an order that rotates from round to
// round, so that a shared, noisy machine slows them alike; the medians over rounds and Folio's ratio to
// each engine are printed (docs/benchmarks.md keeps the tables).
//
// The reference engines are built outside the repository (docs/benchmarks.md, "Against the fastest CPU
// engine"): llama.cpp's llama-bench runs with -fa 0 (its default for CPUs in Feb 2025), ik_llama.cpp's with
// -rtr 1 -fa 1 (its weights repacked at load, its flash attention): each at its best on a CPU. Both measure
// pp (a prompt of N tokens in one batch) and tg (N tokens generated one by one from an empty context), as
// `folio bench` does.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { type Command, type Values, int, print, str, UsageError } from '../args.ts';
import { alignColumns } from '../text-table.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** A reference engine: where its llama-bench is and the flags that make it run at its best on a CPU. */
interface Engine {
  name: string;
  option: string;
  flags: string[];
}
const ENGINES: Engine[] = [
  { name: 'llama.cpp', option: 'llama-cpp', flags: ['-fa', '0'] },
  { name: 'ik_llama.cpp', option: 'ik-llama-cpp', flags: ['-rtr', '1', '-fa', '1'] },
];
const FOLIO = 'Folio';

/** One engine's speeds on one file in one round, tokens per second. */
interface Speeds {
  pp: number;
  tg: number;
}

export interface CompareRow {
  model: string;
  engine: string;
  pp_runs: number[];
  tg_runs: number[];
  pp: number;
  tg: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/** The llama-bench binary in DIR (its build folder, or the bin/ folder inside it). */
function llamaBench(dir: string): string {
  for (const p of [join(dir, 'llama-bench'), join(dir, 'bin', 'llama-bench')]) if (existsSync(p)) return p;
  throw new UsageError(`no llama-bench in ${dir} (nor in ${join(dir, 'bin')}): build the engine first`);
}

/** llama-bench's JSON report: one object per test, pp ones with n_gen 0 and tg ones with n_prompt 0. */
export function parseLlamaBench(json: string): Speeds {
  const tests = JSON.parse(json) as { n_prompt: number; n_gen: number; avg_ts: number }[];
  const pp = tests.find((t) => t.n_prompt > 0 && t.n_gen === 0);
  const tg = tests.find((t) => t.n_gen > 0 && t.n_prompt === 0);
  if (!pp || !tg) throw new Error('llama-bench reported no pp or no tg test');
  return { pp: pp.avg_ts, tg: tg.avg_ts };
}

function run(cmd: string, args: string[], what: string): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0)
    throw new Error(`${what} failed (${r.signal ?? `status ${r.status}`}): ${(r.stderr || r.stdout).slice(-2000)}`);
  return r.stdout;
}

interface Plan {
  pp: number;
  tg: number;
  threads: number;
}

function runEngine(engine: string, bin: string, flags: string[], model: string, p: Plan): Speeds {
  if (engine === FOLIO) {
    const out = run(
      process.execPath,
      [
        join(repoRoot, 'electron/cli/folio.mjs'),
        'bench',
        '--model',
        model,
        '--prompt-tokens',
        String(p.pp),
        '--gen-tokens',
        String(p.tg),
        '--threads',
        String(p.threads),
        '--repeats',
        '1',
        '--json',
      ],
      `folio bench on ${basename(model)}`,
    );
    const r = JSON.parse(out) as { prefill_tokens_per_s: number; decode_tokens_per_s: number };
    return { pp: r.prefill_tokens_per_s, tg: r.decode_tokens_per_s };
  }
  const args = ['-m', model, '-p', String(p.pp), '-n', String(p.tg), '-t', String(p.threads), '-r', '1', '-o', 'json'];
  return parseLlamaBench(run(bin, [...args, ...flags], `${engine}'s llama-bench on ${basename(model)}`));
}

function defaultModels(): string[] {
  return ['f16', 'q8_0', 'q4_k_m'].map((t) => join(repoRoot, 'bench-models', `llama-1b-${t}.gguf`));
}

/** The table: per file, each engine's medians and Folio's ratio to each reference engine. */
export function compareTable(rows: CompareRow[], engines: string[]): string {
  const refs = engines.filter((e) => e !== FOLIO);
  const header = ['model'];
  for (const what of ['pp', 'tg']) {
    for (const e of engines) header.push(`${what} ${e}`);
    for (const e of refs) header.push(`${what} ${FOLIO}/${e}`);
  }
  const body: string[][] = [];
  for (const model of [...new Set(rows.map((r) => r.model))]) {
    const of = (e: string) => rows.find((r) => r.model === model && r.engine === e);
    const line = [model];
    for (const what of ['pp', 'tg'] as const) {
      for (const e of engines) line.push(of(e)?.[what].toFixed(1) ?? '-');
      const f = of(FOLIO)?.[what];
      for (const e of refs) {
        const x = of(e)?.[what];
        line.push(f && x ? (f / x).toFixed(2) : '-');
      }
    }
    body.push(line);
  }
  return alignColumns([header, ...body]);
}

export const benchCompare: Command = {
  summary: "Folio's prefill and decode speed side by side with llama.cpp's and ik_llama.cpp's llama-bench",
  usage:
    'folio bench-compare [--llama-cpp DIR] [--ik-llama-cpp DIR] [--models a.gguf,b.gguf] [--rounds 3]\n' +
    '      [--threads N] [--prompt-tokens 512] [--gen-tokens 128] [--json]   (DIR: an engine build holding llama-bench)',
  options: {
    'llama-cpp': { type: 'string' },
    'ik-llama-cpp': { type: 'string' },
    models: { type: 'string' },
    rounds: { type: 'string' },
    threads: { type: 'string' },
    'prompt-tokens': { type: 'string' },
    'gen-tokens': { type: 'string' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  },
  async run(v: Values) {
    const refs = ENGINES.flatMap((e) => {
      const dir = str(v, e.option);
      return dir ? [{ ...e, bin: llamaBench(resolve(dir)) }] : [];
    });
    if (!refs.length) throw new UsageError('name at least one engine: --llama-cpp DIR and/or --ik-llama-cpp DIR');
    const models = (str(v, 'models')?.split(',') ?? defaultModels()).map((m) => resolve(m));
    for (const m of models) if (!existsSync(m)) throw new UsageError(`no such model file: ${m}`);
    const plan: Plan = {
      pp: int(v, 'prompt-tokens', 512, 1),
      tg: int(v, 'gen-tokens', 128, 1),
      threads: int(v, 'threads', 2, 1),
    };
    const rounds = int(v, 'rounds', 3, 1);
    const engines = [...refs.map((r) => r.name), FOLIO];
    const runs = new Map<string, Speeds[]>(); // `${model}\n${engine}` -> one entry per round
    for (let round = 0; round < rounds; round++)
      for (const model of models)
        for (let i = 0; i < engines.length; i++) {
          const engine = engines[(i + round) % engines.length]; // who goes first rotates
          const ref = refs.find((r) => r.name === engine);
          if (!v.json) process.stderr.write(`round ${round + 1}/${rounds}: ${engine} on ${basename(model)} ...\n`);
          const s = runEngine(engine, ref?.bin ?? '', ref?.flags ?? [], model, plan);
          const key = `${model}\n${engine}`;
          runs.set(key, [...(runs.get(key) ?? []), s]);
        }
    const rows: CompareRow[] = [];
    for (const model of models)
      for (const engine of engines) {
        const r = runs.get(`${model}\n${engine}`) ?? [];
        const pp_runs = r.map((s) => s.pp);
        const tg_runs = r.map((s) => s.tg);
        rows.push({ model: basename(model), engine, pp_runs, tg_runs, pp: median(pp_runs), tg: median(tg_runs) });
      }
    print(
      v,
      { threads: plan.threads, prompt_tokens: plan.pp, gen_tokens: plan.tg, rounds, rows },
      `${compareTable(rows, engines)}\n` +
        `medians of ${rounds} rounds, tokens/s: pp${plan.pp} (prefill), tg${plan.tg} (decode), ${plan.threads} threads; ` +
        `llama-bench flags: ${refs.map((r) => `${r.name} ${r.flags.join(' ')}`).join('; ')}\n`,
    );
  },
};
