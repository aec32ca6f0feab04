// The GGUF metadata fuzzer's parent: runs mutants in child processes (gguf-fuzz-worker.ts), each with its
// data segment capped (ulimit -d, Linux) and V8's heap capped, and watches them: a child that dies is a
// crash, one whose current mutant does not change for `stallMs` is a hang (killed); either way the mutant is
// kept and the run goes on from the next one. A worker's own findings (uncoded errors, OUT_OF_MEMORY, a
// disagreement between the engine and the TS check, a mutant slower than `perFileMs`) come back in its summary.
// test/gguf-fuzz.test.ts runs a bounded number in `npm test`; `npm run fuzz` runs long ones:
//   npm run fuzz -- --iterations 1000000 --seed 1 [--chunk 50000] [--out DIR]
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { fuzzCorpus, type FuzzSummary } from './gguf-fuzz-worker.ts';
import { makeMutant } from './gguf-mutator.ts';
import { repoRoot } from './shared.ts';

export interface FuzzOptions {
  iterations: number;
  seed: number;
  /** Mutants per child process (a fresh one also starts after each crash or hang). */
  chunk?: number;
  /** A mutant slower than this is a failure; default 2000 ms (they take about 3 ms). */
  perFileMs?: number;
  /** No new mutant for this long is a hang; default 15 s. */
  stallMs?: number;
  /** The child's data segment cap (native and JS allocations together); default 1 GiB. */
  dataLimitBytes?: number;
  /** Where failing mutants are kept; default a fresh temporary folder. */
  keepDir?: string;
  /** After each child: how far the run is, and its figures so far. */
  onProgress?: (done: number, total: number, soFar: FuzzReport) => void;
}

export interface FuzzReport extends Omit<FuzzSummary, 'from' | 'to'> {
  mutants: number;
  seed: number;
  corpus: string[];
  /** Children that died or hung, by the mutant they were on. */
  crashes: number;
  hangs: number;
  keepDir: string;
}

const WORKER = fileURLToPath(new URL('./gguf-fuzz-worker.ts', import.meta.url));

/** Where mutants are written: memory-backed when the system has it (a mutant is written per probe). */
function scratchDir(): string {
  return mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'folio-gguf-fuzz-'));
}

interface ChildEnd {
  summary: FuzzSummary | null;
  /** The mutant the child was on when it died or stalled. */
  at: number;
  how: string;
}

function runChild(
  seed: number,
  from: number,
  to: number,
  dir: string,
  o: Required<Omit<FuzzOptions, 'keepDir' | 'onProgress'>>,
): Promise<ChildEnd> {
  const nodeArgs = [
    '--max-old-space-size=512',
    '--import',
    'tsx',
    WORKER,
    String(seed),
    String(from),
    String(to),
    dir,
    String(o.perFileMs),
  ];
  // ulimit -d caps what the child can allocate (malloc and V8 alike) without counting the mapped model file
  const [cmd, args] =
    process.platform === 'linux'
      ? [
          '/bin/sh',
          ['-c', `ulimit -d ${Math.floor(o.dataLimitBytes / 1024)} && exec "$0" "$@"`, process.execPath, ...nodeArgs],
        ]
      : [process.execPath, nodeArgs];
  const child = spawn(cmd, args as string[], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    err = (err + d).slice(-4000);
  });
  const current = () => {
    try {
      return Number(readFileSync(join(dir, 'current'), 'utf8').trim() || from);
    } catch {
      return from;
    }
  };
  let last = -1;
  let lastChange = Date.now();
  let hung = false;
  const watch = setInterval(() => {
    const c = current();
    if (c !== last) {
      last = c;
      lastChange = Date.now();
    } else if (Date.now() - lastChange > o.stallMs) {
      hung = true;
      child.kill('SIGKILL');
    }
  }, 250);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearInterval(watch);
      const line = out.trim().split('\n').pop() ?? '';
      if (!hung && code === 0 && line.startsWith('{'))
        return resolve({ summary: JSON.parse(line) as FuzzSummary, at: to, how: 'done' });
      const how = hung
        ? `hung: no progress for ${o.stallMs} ms`
        : `died: ${signal ? `signal ${signal}` : `exit code ${code}`}: ${err.trim().slice(-1500)}`;
      resolve({ summary: null, at: current(), how });
    });
  });
}

export async function runGgufFuzz(opts: FuzzOptions): Promise<FuzzReport> {
  const o = { chunk: 50_000, perFileMs: 2000, stallMs: 15_000, dataLimitBytes: 1 << 30, ...opts };
  const keepDir = opts.keepDir ?? scratchDir();
  mkdirSync(keepDir, { recursive: true });
  const dir = scratchDir();
  const corpus = fuzzCorpus();
  const report: FuzzReport = {
    mutants: 0,
    seed: o.seed,
    corpus: corpus.map((c) => c.name),
    seconds: 0,
    classes: {},
    failures: [],
    peakRssBytes: 0,
    slowestMs: 0,
    crashes: 0,
    hangs: 0,
    keepDir,
  };
  const t0 = performance.now();
  try {
    let from = 0;
    while (from < o.iterations) {
      const to = Math.min(o.iterations, from + o.chunk);
      const end = await runChild(o.seed, from, to, dir, o);
      if (end.summary) {
        const s = end.summary;
        for (const [k, n] of Object.entries(s.classes)) report.classes[k] = (report.classes[k] ?? 0) + n;
        for (const f of s.failures) {
          const kept = join(keepDir, `failure-${f.index}.gguf`);
          copyFileSync(f.kept, kept);
          report.failures.push({ ...f, kept });
        }
        report.peakRssBytes = Math.max(report.peakRssBytes, s.peakRssBytes);
        report.slowestMs = Math.max(report.slowestMs, s.slowestMs);
        from = to;
      } else {
        // the mutant the child was on is still on disk; the ones before it passed but their classes are lost
        const kept = join(keepDir, `failure-${end.at}.gguf`);
        if (existsSync(join(dir, 'mutant.gguf'))) copyFileSync(join(dir, 'mutant.gguf'), kept);
        let ops: string[];
        try {
          ops = makeMutant(
            corpus.map((c) => c.layout),
            o.seed,
            end.at,
          ).ops;
        } catch (e) {
          ops = [`the mutator itself failed: ${(e as Error).message}`];
        }
        report.failures.push({ index: end.at, ops, failures: [end.how], kept });
        if (end.how.startsWith('hung')) report.hangs++;
        else report.crashes++;
        from = end.at + 1;
      }
      report.mutants = from;
      report.seconds = (performance.now() - t0) / 1000;
      o.onProgress?.(from, o.iterations, report);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  report.seconds = (performance.now() - t0) / 1000;
  return report;
}

function flag(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const iterations = flag('iterations', 1_000_000);
  const seed = flag('seed', 1);
  const outAt = process.argv.indexOf('--out');
  const started = Date.now();
  const report = await runGgufFuzz({
    iterations,
    seed,
    chunk: flag('chunk', 50_000),
    perFileMs: flag('per-file-ms', 2000),
    keepDir: outAt > 0 ? process.argv[outAt + 1] : undefined,
    // one line per child with the figures so far, so that a long run stopped early still has them
    onProgress: (done, total, soFar) =>
      process.stderr.write(
        `gguf fuzz: ${done}/${total} mutants, ${((Date.now() - started) / 1000).toFixed(0)} s: ${JSON.stringify(soFar)}\n`,
      ),
  });
  process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  process.exit(report.failures.length ? 1 : 0);
}
