// folio bench: prefill and decode speed of a model, peak memory, and how close decoding comes to the
// machine's memory bandwidth. Without --model it runs the standard suite: random-weight models of a
// real shape (made on first use by native/tools/make-random-model.cc, into bench-models/), one child
// process per model so that each peak-memory figure is that model's own.
//
// Prefill: a fresh session evaluates --prompt-tokens tokens (BOS, then fixed pseudo-random ids) in one
// call. Decode: a fresh session evaluates BOS, then generates --gen-tokens tokens greedily, one forward
// step each (llama-bench's tg: the context grows from 1). Each is repeated --repeats times after an
// untimed warm-up that also brings the weights into memory; the medians are reported.
//
// The bandwidth bound of decoding: every step reads all the weights it multiplies with (every matrix;
// token_embd too when it is the output matrix, else one row of it) and the KV cache of the positions so
// far; bound = measured read bandwidth / those bytes per token. The read bandwidth is the engine's own
// multi-threaded probe (ops.readBandwidth, with the benchmark's thread count), run right before each
// decode run because on a shared machine it changes from minute to minute; the fraction of the bound is
// the median over runs of (decode tokens/s × bytes per token / the bandwidth probed next to it).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { addonPath, loadAddon, type ComputeBackend, type GpuStatus } from '../../engine/binding.ts';
import { type Command, type Values, common, int, print, sessionOptions, str, UsageError } from '../args.ts';
import { alignColumns } from '../text-table.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const SHAPES = ['1b', '8b', 'tiny'];
const TYPES = [
  'f32',
  'f16',
  'bf16',
  'q8_0',
  'q4_0',
  'q4_1',
  'q5_0',
  'q5_1',
  'q4_k',
  'q5_k',
  'q6_k',
  'q3_k',
  'iq4_nl',
  // llama.cpp's mixes (native/tools/make-random-model.cc)
  'q2_k',
  'q3_k_s',
  'q3_k_m',
  'q3_k_l',
  'q4_k_m',
  'q5_k_m',
  'iq4_xs',
];
const DEFAULT_TYPES = ['f16', 'q8_0', 'q4_k_m'];

export interface BenchResult {
  model: string;
  name: string;
  file_bytes: number;
  weight_bytes: number;
  tensor_types: Record<string, number>;
  isa: string;
  /** Where the forward pass ran; on a GPU the bandwidth is its device-to-device copy rate. */
  backend: ComputeBackend;
  /** The GPU it ran on (null on the CPU), and whether that is a software device (lavapipe: numbers that say
   * the backend runs, not how fast a GPU would). */
  device: string | null;
  software_device: boolean;
  threads: number;
  prompt_tokens: number;
  gen_tokens: number;
  repeats: number;
  prefill_tokens_per_s: number;
  decode_tokens_per_s: number;
  prefill_runs: number[];
  decode_runs: number[];
  peak_rss_bytes: number;
  /** Measured read bandwidth in bytes/s with `threads` threads (median of the probes before each decode
   * run); null when no probe measured a rate. */
  read_bandwidth: number | null;
  read_bandwidth_runs: number[];
  decode_bytes_per_token: { weights: number; kv: number; total: number };
  decode_bound_tokens_per_s: number | null;
  decode_fraction_of_bound: number | null;
}

const median = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function modelsDir(v: Values): string {
  return resolve(str(v, 'models-dir') ?? join(repoRoot, 'bench-models'));
}

function suiteTypes(v: Values): string[] {
  const types = (str(v, 'types') ?? DEFAULT_TYPES.join(','))
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .filter(Boolean);
  for (const t of types) if (!TYPES.includes(t)) throw new UsageError(`unknown type '${t}' (${TYPES.join(', ')})`);
  return types;
}

function suiteShape(v: Values): string {
  const shape = str(v, 'suite') ?? '1b';
  if (!SHAPES.includes(shape)) throw new UsageError(`--suite must be one of ${SHAPES.join(', ')}, not '${shape}'`);
  return shape;
}

/** The generator next to the addon: cmake-js builds native/tools/*.cc into the same build folder. */
function generatorPath(): string {
  const exe = process.platform === 'win32' ? 'make-random-model.exe' : 'make-random-model';
  const candidates = [join(dirname(addonPath()), '..', exe), join(dirname(addonPath()), exe)];
  const found = candidates.find((p) => existsSync(p));
  if (!found) {
    throw new Error(
      `the model generator is not built (looked for ${candidates.join(', ')}): run \`npm run build:native\``,
    );
  }
  return found;
}

/** Makes the suite's model files that are missing (all of them with force); returns their paths. */
function makeModels(v: Values, force: boolean): string[] {
  const dir = modelsDir(v);
  mkdirSync(dir, { recursive: true });
  const shape = suiteShape(v);
  const paths: string[] = [];
  for (const type of suiteTypes(v)) {
    const path = join(dir, `llama-${shape}-${type}.gguf`);
    paths.push(path);
    if (existsSync(path) && !force) continue;
    process.stderr.write(`making ${path}\n`);
    const r = spawnSync(generatorPath(), ['--out', path, '--shape', shape, '--type', type, '--quiet'], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (r.status !== 0) throw new Error(`make-random-model failed for ${path}`);
  }
  return paths;
}

/** Deterministic prompt: BOS (when the model adds one), then pseudo-random ordinary token ids. */
function promptIds(n: number, nVocab: number, bos: number, addBos: boolean): Int32Array {
  const ids = new Int32Array(n);
  const range = nVocab > 1024 ? nVocab - 256 : nVocab; // skip Llama 3's trailing special tokens
  let s = 12345;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    ids[i] = s % range;
  }
  if (addBos && n > 0 && bos >= 0) ids[0] = bos;
  return ids;
}

/**
 * Peak resident memory of the benchmark's own runs. The bandwidth probe allocates a large buffer of its
 * own; on Linux the kernel's high-water mark (VmHWM) is reset after each probe (/proc/self/clear_refs),
 * elsewhere the probes run after everything else and getrusage's maxRSS is read before them.
 */
function peakMemory() {
  const linux = process.platform === 'linux';
  const hwm = () => {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) * 1024 : process.resourceUsage().maxRSS * 1024;
  };
  let canReset = false;
  if (linux) {
    try {
      writeFileSync('/proc/self/clear_refs', '5');
      canReset = true;
    } catch {
      canReset = false;
    }
  }
  let peak = 0;
  return {
    canReset,
    /** Folds the high-water mark since the last reset into the peak. */
    sample() {
      peak = Math.max(peak, canReset ? hwm() : process.resourceUsage().maxRSS * 1024);
    },
    reset() {
      if (canReset) writeFileSync('/proc/self/clear_refs', '5');
    },
    get peak() {
      return peak;
    },
  };
}

async function benchModel(path: string, v: Values): Promise<BenchResult> {
  const P = int(v, 'prompt-tokens', 512, 1);
  const G = int(v, 'gen-tokens', 128, 1);
  const R = int(v, 'repeats', 3, 1);
  const addon = loadAddon();
  // The memory the weights are read from: the machine's RAM, or the GPU's (a device-to-device copy of up to
  // 1 GiB twice, within a quarter of its memory).
  let backend: ComputeBackend = 'cpu';
  let gpu: GpuStatus['device'];
  const probe = (threads: number) =>
    backend !== 'cpu'
      ? addon.ops.gpuCopyBandwidth(
          Math.max(16, Math.min(1024, Math.floor((gpu?.totalBytes ?? 0) / 4 / 2 ** 20))),
          3,
          backend,
        ).bytesPerSecond
      : addon.ops.readBandwidth(threads, 256, 3).bytesPerSecond;
  const memory = peakMemory();
  const header = addon.readGguf(path);
  const model = await addon.loadModel(path);
  const info = model.info();
  const base = sessionOptions(v);
  const nCtx = Math.max(P, G + 1) + 1;
  if (nCtx > info.contextLength)
    throw new UsageError(`--prompt-tokens and --gen-tokens exceed the model's context of ${info.contextLength}`);
  const opts = { ...base, nCtx };
  const bos = info.tokenizer.bos;
  const prompt = promptIds(P, info.nVocab, bos, info.tokenizer.addBos);
  const first = Int32Array.of(Math.max(bos, 0));

  // Warm-up: brings the mapped weights into memory and the threads up.
  let threads = 0;
  {
    const s = model.createSession(opts);
    threads = s.nThreads;
    backend = s.backend;
    gpu = addon.backendInfo().gpus.find((g) => g.kind === backend)?.device;
    await s.prefill(prompt.subarray(0, Math.min(P, 32)));
    await s.generate({ n: 4, temperature: 0 });
    s.dispose();
  }

  const prefillRuns: number[] = [];
  const decodeRuns: number[] = [];
  const bandwidthRuns: number[] = [];
  for (let r = 0; r < R; r++) {
    const s = model.createSession(opts);
    prefillRuns.push((await s.prefill(prompt)).tokensPerSecond);
    s.dispose();
  }
  memory.sample();
  for (let r = 0; r < R; r++) {
    // The machine's bandwidth right before each decode run (it varies on a shared machine).
    if (memory.canReset) {
      const bw = probe(threads);
      if (bw) bandwidthRuns.push(bw);
      memory.reset();
    }
    const s = model.createSession(opts);
    await s.prefill(first);
    const g = await s.generate({ n: G, temperature: 0 });
    if (g.tokens.length !== G) throw new Error(`generation stopped after ${g.tokens.length} tokens (${g.stopReason})`);
    decodeRuns.push(g.tokensPerSecond);
    s.dispose();
    memory.sample();
  }
  model.dispose();
  if (!memory.canReset) {
    for (let r = 0; r < R; r++) {
      const bw = probe(threads);
      if (bw) bandwidthRuns.push(bw);
    }
  }

  // Bytes one decode step reads.
  const tied = !header.tensors.some((t) => t.name === 'output.weight');
  let weights = 0;
  for (const t of header.tensors) {
    if (t.name === 'token_embd.weight' && !tied)
      weights += t.bytes / (t.dims[1] ?? 1); // one row
    else weights += t.bytes;
  }
  const kvElem = base.kvType === 'f32' ? 4 : 2;
  const avgCtx = 1 + (G + 1) / 2;
  const kv = info.nLayer * avgCtx * info.nHeadKv * (info.headDim + info.headDimV) * kvElem;
  const total = weights + kv;
  const decode = median(decodeRuns);
  const bandwidth = bandwidthRuns.length ? median(bandwidthRuns) : null;
  // Each run against the bandwidth measured next to it, where there is one.
  const fractions =
    bandwidthRuns.length === decodeRuns.length
      ? decodeRuns.map((d, i) => (d * total) / bandwidthRuns[i])
      : bandwidth
        ? decodeRuns.map((d) => (d * total) / bandwidth)
        : [];
  return {
    model: path,
    name: info.name,
    file_bytes: info.fileBytes,
    weight_bytes: info.weightBytes,
    tensor_types: info.tensorTypes,
    isa: info.isa,
    backend,
    device: gpu?.name ?? null,
    software_device: gpu?.type === 'cpu',
    threads,
    prompt_tokens: P,
    gen_tokens: G,
    repeats: R,
    prefill_tokens_per_s: median(prefillRuns),
    decode_tokens_per_s: decode,
    prefill_runs: prefillRuns,
    decode_runs: decodeRuns,
    peak_rss_bytes: memory.peak,
    read_bandwidth: bandwidth,
    read_bandwidth_runs: bandwidthRuns,
    decode_bytes_per_token: { weights, kv, total },
    decode_bound_tokens_per_s: bandwidth ? bandwidth / total : null,
    decode_fraction_of_bound: fractions.length ? median(fractions) : null,
  };
}

const gib = (b: number) => `${(b / 2 ** 30).toFixed(2)} GiB`;

function table(results: BenchResult[]): string {
  const rows = [
    ['model', 'weights', 'isa', 'thr', 'prefill t/s', 'decode t/s', 'read GB/s', 'bound t/s', 'of bound', 'peak RSS'],
  ];
  for (const r of results) {
    rows.push([
      basename(r.model),
      gib(r.weight_bytes),
      r.backend === 'cpu' ? r.isa : r.backend,
      String(r.threads),
      `${r.prefill_tokens_per_s.toFixed(1)} (pp${r.prompt_tokens})`,
      `${r.decode_tokens_per_s.toFixed(1)} (tg${r.gen_tokens})`,
      r.read_bandwidth ? (r.read_bandwidth / 1e9).toFixed(1) : '-',
      r.decode_bound_tokens_per_s ? r.decode_bound_tokens_per_s.toFixed(1) : '-',
      r.decode_fraction_of_bound ? `${(100 * r.decode_fraction_of_bound).toFixed(0)}%` : '-',
      gib(r.peak_rss_bytes),
    ]);
  }
  const R = results[0]?.repeats ?? 0;
  const gpus = [...new Set(results.filter((r) => r.device).map((r) => `${r.backend} on ${r.device}`))];
  const software = results.some((r) => r.software_device);
  return (
    alignColumns(rows) +
    `\nmedians of ${R} runs; read GB/s: the machine's read bandwidth (a GPU's: a device-to-device copy), probed ` +
    'before each decode run; bound = read bandwidth / (weight + KV bytes read per decoded token)\n' +
    (gpus.length ? `GPU: ${gpus.join(', ')}\n` : '') +
    (software
      ? 'a software device (on the CPU): these numbers say the backend runs, not how fast a GPU would run it\n'
      : '')
  );
}

// Flags a suite passes on to each model's run.
const PASS_ON = ['prompt-tokens', 'gen-tokens', 'threads', 'repeats', 'kv-type', 'backend'];

export const bench: Command = {
  summary: 'prefill and decode tokens/s, peak memory, fraction of the memory-bandwidth bound',
  usage:
    'folio bench --model M [--prompt-tokens 512] [--gen-tokens 128] [--threads N] [--repeats 3] [--json]\n' +
    '      folio bench [--suite 1b|8b] [--types f16,q8_0,q4_k_m] [--models-dir DIR] [...]   (random-weight models, made if missing)\n' +
    '      folio bench --make-models [--suite 1b|8b] [--types ...] [--models-dir DIR] [--force]',
  options: {
    ...common,
    'prompt-tokens': { type: 'string' },
    'gen-tokens': { type: 'string' },
    repeats: { type: 'string' },
    suite: { type: 'string' },
    types: { type: 'string' },
    'models-dir': { type: 'string' },
    'make-models': { type: 'boolean' },
    force: { type: 'boolean' },
  },
  async run(v) {
    for (const k of ['prompt-tokens', 'gen-tokens', 'repeats']) int(v, k, 1, 1); // checked before any work
    if (v['make-models']) {
      const paths = makeModels(v, !!v.force);
      print(v, { models: paths }, paths.join('\n') + '\n');
      return;
    }
    const path = str(v, 'model');
    if (path !== undefined) {
      const r = await benchModel(path, v);
      print(v, r, table([r]));
      return;
    }
    // The suite: each model in a child process of its own.
    const results: BenchResult[] = [];
    for (const file of makeModels(v, false)) {
      const args = [join(repoRoot, 'electron/cli/folio.mjs'), 'bench', '--model', file, '--json'];
      for (const k of PASS_ON) if (str(v, k) !== undefined) args.push(`--${k}`, str(v, k)!);
      if (!v.json) process.stderr.write(`${basename(file)} ...\n`);
      const r = spawnSync(process.execPath, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
      const out = r.stdout.trim().split('\n').pop() ?? '';
      const j = out ? (JSON.parse(out) as BenchResult | { error: { code: string; message: string } }) : null;
      if (r.status !== 0 || !j || 'error' in j) {
        throw new Error(`bench of ${file} failed: ${j && 'error' in j ? j.error.message : `exit status ${r.status}`}`);
      }
      results.push(j);
    }
    print(v, { results }, table(results));
  },
};
