// folio bench-kv: what compression costs and saves, measured (a benchmark, never a test).
//   - prefill of a document with and without compression: full, snapkv, ada-snapkv (Ada's overhead over
//     SnapKV is the cost of its global top-k; the goal is within 2%);
//   - peak resident memory of a full and of a compressed prefill (each in a child process of its own, so
//     each peak is that prefill's);
//   - decode tokens/s over a full and over a compressed cache at growing context lengths;
//   - with --long 4096,16384,...: long documents read in one pass (up to --one-pass-max tokens) and in chunks
//     (docs/compression.md, "Reading a long document"), each read in a child process of its own: time,
//     tokens/s, peak resident memory, the cache's peak and kept bytes, and decode speed after;
//   - with --precision-contexts 4096,16384,32768: decode speed and cache bytes over a `--budget` cache of each
//     context in each cache precision (--precisions f16,q8_0,q4_0), side by side, interleaved. The cache is made
//     by reading budget × context tokens whole: as many entries per head as a compressed read of the context
//     keeps (a decode step reads every kept entry once, whatever chose them), without reading 32K tokens first.
// Without --model it uses the 1B Q4_K_M file of `folio bench` (bench-models/, made if missing).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { loadAddon, type CompressionMethod, type Model } from '../../engine/binding.ts';
import { type Command, type Values, budgetValue, common, int, mib, print, str, UsageError } from '../args.ts';
import { KV_TYPES, type KvType } from '../../shared/kv/precision.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor((a.length - 1) / 2)];

/** A document of n tokens: BOS, then fixed pseudo-random ids from the ordinary part of the vocabulary. */
export function document(model: Model, n: number): Int32Array {
  const info = model.info();
  const t = new Int32Array(n);
  const span = Math.min(info.nVocab, info.tokenizer.nTokens) - 300;
  t[0] = Math.max(info.tokenizer.bos, 0);
  for (let i = 1; i < n; i++) t[i] = 256 + ((i * 7919 + 104729) % span);
  return t;
}

function budgetFor(method: CompressionMethod, budget: number) {
  return method === 'full' ? { method } : { method, budget };
}

/** One prefill in this process (the child of a peak-memory measurement, or a timing). */
async function prefillOnce(
  model: Model,
  tokens: Int32Array,
  method: CompressionMethod,
  budget: number,
  threads: number,
  onProgress?: (d: number, t: number) => void,
) {
  const s = model.createSession({ nCtx: tokens.length + 64, nThreads: threads });
  const t0 = performance.now();
  let kvBytes: number;
  if (method === 'full') {
    await s.prefill(tokens, { onProgress });
    kvBytes = s.memory().bytesUsed;
  } else {
    const r = await s.compress(tokens, { ...budgetFor(method, budget), onProgress });
    kvBytes = r.stats.kvBytesKept;
  }
  const ms = performance.now() - t0;
  return { s, ms, kvBytes };
}

async function decodeRate(
  model: Model,
  tokens: Int32Array,
  method: CompressionMethod,
  budget: number,
  threads: number,
  n: number,
) {
  const { s, kvBytes } = await prefillOnce(model, tokens, method, budget, threads);
  const g = await s.generate({ n, temperature: 0 });
  s.dispose();
  return { tokensPerSecond: g.tokensPerSecond, kvBytes };
}

interface PrecisionDecode {
  context: number;
  /** Entries per head: budget × context. */
  entries: number;
  precision: KvType;
  tokens_per_s: number;
  runs_tokens_per_s: number[];
  /** The cache's keys and values, and what it holds with positions and spare room. */
  kv_bytes: number;
  kv_bytes_reserved: number;
}

/**
 * Decode over a cache of budget × context entries per head in each precision, side by side: for each context, one
 * cache per precision, then `repeats` rounds of genTokens decoded over each in turn, so that the machine's noise
 * hits all alike (each round adds genTokens entries: a few against thousands).
 */
async function precisionDecode(
  model: Model,
  contexts: number[],
  precisions: KvType[],
  o: { budget: number; threads: number; genTokens: number; repeats: number },
  log: (s: string) => void,
): Promise<PrecisionDecode[]> {
  const out: PrecisionDecode[] = [];
  for (const L of contexts) {
    const entries = o.budget > 1 ? Math.min(L, Math.round(o.budget)) : Math.max(1, Math.round(o.budget * L));
    const doc = document(model, entries);
    const runs = new Map<KvType, { tps: number[]; bytes: number; reserved: number }>();
    const sessions = [];
    for (const t of precisions) {
      const nCtx = entries + o.genTokens * o.repeats + 64;
      const s = model.createSession({ nCtx, nThreads: o.threads, kvType: t, kvRotate: true }); // as the app stores them
      await s.prefill(doc);
      const m = s.memory();
      runs.set(t, { tps: [], bytes: m.bytesUsed, reserved: m.bytesReserved });
      sessions.push({ t, s });
    }
    for (let r = 0; r < o.repeats; r++)
      for (const { t, s } of sessions)
        runs.get(t)!.tps.push((await s.generate({ n: o.genTokens, temperature: 0 })).tokensPerSecond);
    for (const { s } of sessions) s.dispose();
    for (const t of precisions) {
      const row = runs.get(t)!;
      out.push({
        context: L,
        entries,
        precision: t,
        tokens_per_s: median(row.tps),
        runs_tokens_per_s: row.tps,
        kv_bytes: row.bytes,
        kv_bytes_reserved: row.reserved,
      });
      log(`  ${precisionLine(out.at(-1)!, out.find((p) => p.context === L)!).trim()}`);
    }
  }
  return out;
}

function precisionLine(p: PrecisionDecode, base: PrecisionDecode): string {
  return (
    `decode over a ${p.entries}-entry cache (${p.context} tokens kept at the budget) in ${p.precision}: ${p.tokens_per_s.toFixed(1)} t/s ` +
    `(${(p.tokens_per_s / base.tokens_per_s).toFixed(2)}x ${base.precision}), cache ${mib(p.kv_bytes)} ` +
    `(${((100 * p.kv_bytes_reserved) / base.kv_bytes_reserved).toFixed(0)}% of ${base.precision}'s with positions)\n`
  );
}

interface LongRead {
  tokens: number;
  chunks: number;
  chunk_tokens: number;
  seconds: number;
  tokens_per_s: number;
  peak_rss_bytes: number;
  kv_bytes_peak: number;
  kv_bytes_kept: number;
  decode_tokens_per_s: number;
}

/** One long document read (in this process: the child of a measurement), then 16 tokens decoded after it. */
async function longRead(
  model: Model,
  L: number,
  chunk: number | 'auto', // 0: one pass
  budget: number,
  threads: number,
): Promise<LongRead> {
  const chunked = chunk !== 0;
  const doc = document(model, L);
  const s = model.createSession({ nCtx: Math.min(model.info().contextLength, L + 64), nThreads: threads });
  let last = performance.now();
  const t0 = performance.now();
  const r = await s.compress(doc, {
    method: 'ada-snapkv',
    budget,
    chunk,
    rebase: L + 64 > model.info().contextLength,
    room: 64,
    onProgress: (d, t) => {
      if (performance.now() - last > 10_000) {
        last = performance.now();
        process.stderr.write(`  reading ${L} tokens${chunked ? ' in chunks' : ''}: ${d} / ${t}\n`);
      }
    },
  });
  const ms = performance.now() - t0;
  const g = await s.generate({ n: 16, temperature: 0 });
  s.dispose();
  return {
    tokens: L,
    chunks: r.stats.chunks,
    chunk_tokens: r.stats.chunkTokens,
    seconds: ms / 1000,
    tokens_per_s: L / (ms / 1000),
    peak_rss_bytes: process.resourceUsage().maxRSS * 1024,
    kv_bytes_peak: r.stats.kvBytesPeak,
    kv_bytes_kept: r.stats.kvBytesKept,
    decode_tokens_per_s: g.tokensPerSecond,
  };
}

/**
 * Long reads, one pass (up to onePassMax tokens) and chunked (in chunks of `chunk` tokens, 0: the engine's
 * choice), each in a child process of its own.
 */
function runLongReads(
  path: string,
  lengths: number[],
  o: { onePassMax: number; chunk: number; budget: number; threads: number },
  log: (s: string) => void,
): LongRead[] {
  const { onePassMax, budget, threads } = o;
  const long: LongRead[] = [];
  for (const L of lengths)
    for (const chunked of L <= onePassMax ? [false, true] : [true]) {
      const r = benchChild(
        path,
        [
          '--child-long',
          String(L),
          ...(chunked ? ['--child-chunked', String(o.chunk || 'auto')] : []),
          '--budget',
          String(budget),
        ],
        threads,
        'inherit',
      );
      if (r.status !== 0) throw new Error(`the long read of ${L} tokens failed`);
      const one = JSON.parse(r.stdout) as LongRead;
      long.push(one);
      log(`  ${longLine(one).trim()}`);
    }
  return long;
}

/** This command in a process of its own on `path` (a measurement that must not share this one's memory). */
function benchChild(path: string, args: string[], threads: number, stderr: 'pipe' | 'inherit' = 'pipe') {
  return spawnSync(
    process.execPath,
    [
      join(repoRoot, 'electron/cli/folio.mjs'),
      'bench-kv',
      '--model',
      path,
      ...args,
      ...(threads ? ['--threads', String(threads)] : []),
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', stderr] },
  );
}

function longLine(l: LongRead): string {
  return (
    `read ${l.tokens} tokens ${l.chunks > 1 ? `in ${l.chunks} chunks of ${l.chunk_tokens}` : 'in one pass'}: ${l.seconds.toFixed(1)} s ` +
    `(${l.tokens_per_s.toFixed(1)} t/s), peak ${mib(l.peak_rss_bytes)}, cache peak ${mib(l.kv_bytes_peak)}, kept ${mib(l.kv_bytes_kept)}, ` +
    `decode after ${l.decode_tokens_per_s.toFixed(1)} t/s\n`
  );
}

/** The chunk of a child's chunked read: `--child-chunked N` (auto: the engine's), or 0 for one pass. */
function childChunk(v: Values): number | 'auto' {
  const c = str(v, 'child-chunked');
  return c === undefined ? 0 : c === 'auto' ? 'auto' : int(v, 'child-chunked', 0, 1);
}

export function defaultModel(): string {
  const path = join(repoRoot, 'bench-models', 'llama-1b-q4_k_m.gguf');
  if (!existsSync(path)) {
    const r = spawnSync(
      process.execPath,
      [join(repoRoot, 'electron/cli/folio.mjs'), 'bench', '--make-models', '--types', 'q4_k_m'],
      { stdio: 'inherit' },
    );
    if (r.status !== 0)
      throw new UsageError('could not make the benchmark model: run `folio bench --make-models --types q4_k_m`');
  }
  return path;
}

/** The flags bench-kv and bench-set share: the model, the document, the budget and how a decode is timed. */
export const benchDocumentFlags = {
  model: common.model,
  json: common.json,
  threads: common.threads,
  help: common.help,
  'doc-tokens': { type: 'string' },
  budget: { type: 'string' },
  'gen-tokens': { type: 'string' },
  repeats: { type: 'string' },
} as const;

export const benchKv: Command = {
  summary:
    'what KV compression costs and saves: prefill time, peak memory, decode speed over full and compressed caches',
  usage:
    'folio bench-kv [--model M] [--doc-tokens 2048] [--contexts 512,1024,2048] [--budget 0.2] [--gen-tokens 32]\n' +
    '               [--repeats 3] [--threads N] [--long 4096,16384,65536] [--one-pass-max 16384] [--chunk N] [--long-only]\n' +
    '               [--precision-contexts 4096,16384,32768] [--precisions f16,q8_0,q4_0] [--precision-only] [--json]',
  options: {
    ...benchDocumentFlags,
    contexts: { type: 'string' },
    long: { type: 'string' },
    'one-pass-max': { type: 'string' },
    chunk: { type: 'string' },
    // internal: one measured prefill in a child process; one long read in a child process
    child: { type: 'string' },
    'child-long': { type: 'string' },
    'child-chunked': { type: 'string' },
    'long-only': { type: 'boolean' },
    'precision-contexts': { type: 'string' },
    precisions: { type: 'string' },
    'precision-only': { type: 'boolean' },
  },
  async run(v: Values) {
    const threads = int(v, 'threads', 0);
    const docTokens = int(v, 'doc-tokens', 2048, 64);
    const budget = budgetValue(str(v, 'budget') ?? '0.2');
    const genTokens = int(v, 'gen-tokens', 32, 1);
    const repeats = int(v, 'repeats', 3, 1);
    const contexts = (str(v, 'contexts') ?? '512,1024,2048').split(',').map((x) => {
      const n = Number(x);
      if (!Number.isInteger(n) || n < 64)
        throw new UsageError(`--contexts: '${x}' is not a context length of at least 64`);
      return n;
    });
    const path = str(v, 'model') ?? defaultModel();
    const model = await loadAddon().loadModel(path);

    if (v['child-long']) {
      process.stdout.write(
        JSON.stringify(await longRead(model, int(v, 'child-long', 0, 1), childChunk(v), budget, threads)) + '\n',
      );
      return;
    }
    if (v.child) {
      // A child: one prefill, then its peak resident memory.
      const { ms, kvBytes } = await prefillOnce(
        model,
        document(model, docTokens),
        v.child as CompressionMethod,
        budget,
        threads,
      );
      process.stdout.write(JSON.stringify({ ms, kvBytes, peak: process.resourceUsage().maxRSS * 1024 }) + '\n');
      return;
    }

    const log = (s: string) => {
      if (!v.json) process.stderr.write(s + '\n');
    };
    const longLengths = (str(v, 'long') ?? '')
      .split(',')
      .filter((x) => x !== '')
      .map((x) => {
        const n = Number(x);
        if (!Number.isInteger(n) || n < 64) throw new UsageError(`--long: '${x}' is not a length of at least 64`);
        return n;
      });
    const precisionContexts = (str(v, 'precision-contexts') ?? '')
      .split(',')
      .filter((x) => x !== '')
      .map((x) => {
        const n = Number(x);
        if (!Number.isInteger(n) || n < 64)
          throw new UsageError(`--precision-contexts: '${x}' is not a context length of at least 64`);
        return n;
      });
    const precisions = (str(v, 'precisions') ?? 'f16,q8_0,q4_0').split(',').map((x) => {
      if (!(KV_TYPES as readonly string[]).includes(x))
        throw new UsageError(`--precisions: '${x}' is not one of ${KV_TYPES.join(', ')}`);
      return x as KvType;
    });
    const precisionOptions = { budget, threads, genTokens, repeats };
    if (v['precision-only']) {
      const rows = await precisionDecode(model, precisionContexts, precisions, precisionOptions, log);
      model.dispose();
      print(
        v,
        { model: path, budget, threads, precision: rows },
        rows.map((p) => precisionLine(p, rows.find((b) => b.context === p.context)!)).join(''),
      );
      return;
    }
    const onePassMax = int(v, 'one-pass-max', 16384, 0);
    const longOptions = { onePassMax, chunk: int(v, 'chunk', 0, 0), budget, threads };
    if (v['long-only']) {
      const long = runLongReads(path, longLengths, longOptions, log);
      print(v, { model: path, budget, threads, long }, long.map(longLine).join(''));
      return;
    }
    const tokens = document(model, docTokens);
    log(`${path}: ${docTokens}-token document, budget ${budget}, ${repeats} repeats, backend ${model.info().backend}`);

    // Prefill time: full, snapkv, ada-snapkv, interleaved so that the machine's noise hits all alike.
    const methods: CompressionMethod[] = ['full', 'snapkv', 'ada-snapkv'];
    const times: Record<string, number[]> = { full: [], snapkv: [], 'ada-snapkv': [] };
    const compressMs: Record<string, number[]> = { snapkv: [], 'ada-snapkv': [] };
    await (await prefillOnce(model, tokens.subarray(0, 256), 'full', budget, threads)).s.dispose(); // warm-up
    for (let r = 0; r < repeats; r++)
      for (const m of methods) {
        const s = model.createSession({ nCtx: docTokens + 64, nThreads: threads });
        const t0 = performance.now();
        if (m === 'full') await s.prefill(tokens);
        else compressMs[m].push((await s.compress(tokens, budgetFor(m, budget))).stats.msCompress);
        times[m].push(performance.now() - t0);
        s.dispose();
        log(`  prefill ${m}: ${(times[m].at(-1)! / 1000).toFixed(2)} s`);
      }
    const prefill = Object.fromEntries(methods.map((m) => [m, { median_ms: median(times[m]), runs_ms: times[m] }]));
    const adaOverhead = median(times['ada-snapkv']) / median(times.snapkv) - 1;

    // Peak resident memory of a full and a compressed prefill, each in a fresh process.
    const child = (m: string) => {
      const r = benchChild(
        path,
        ['--child', m, '--doc-tokens', String(docTokens), '--budget', String(budget)],
        threads,
      );
      if (r.status !== 0) throw new Error(`the ${m} child failed: ${r.stderr}`);
      return JSON.parse(r.stdout) as { ms: number; kvBytes: number; peak: number };
    };
    const peakFull = child('full'),
      peakAda = child('ada-snapkv');
    log(`  peak memory: full ${mib(peakFull.peak)}, ada-snapkv ${mib(peakAda.peak)}`);

    // Decode over full and compressed caches at growing contexts.
    const decode = [];
    for (const L of contexts) {
      const doc = document(model, L);
      const full = await decodeRate(model, doc, 'full', budget, threads, genTokens);
      const ada = await decodeRate(model, doc, 'ada-snapkv', budget, threads, genTokens);
      decode.push({
        context: L,
        full_tokens_per_s: full.tokensPerSecond,
        compressed_tokens_per_s: ada.tokensPerSecond,
        full_kv_bytes: full.kvBytes,
        compressed_kv_bytes: ada.kvBytes,
      });
      log(
        `  decode at ${L}: full ${full.tokensPerSecond.toFixed(1)} t/s (${mib(full.kvBytes)} cache), ada-snapkv ${ada.tokensPerSecond.toFixed(1)} t/s (${mib(ada.kvBytes)})`,
      );
    }

    // How long a cancellation takes to land: a compressing prefill and a generation, each cancelled by a
    // timer at an arbitrary moment of its work (not from one of its own callbacks, where the engine is
    // waiting anyway); the time from cancel() to the promise settling.
    const cancelMs: { compress: number[]; generate: number[] } = { compress: [], generate: [] };
    const cancelLater = (s: { cancel(): void }, ms: number, at: { t: number }) =>
      setTimeout(() => {
        at.t = performance.now();
        s.cancel();
      }, ms);
    for (let r = 0; r < repeats; r++) {
      const s = model.createSession({ nCtx: docTokens + 64, nThreads: threads });
      const at = { t: 0 };
      const timer = cancelLater(s, 300 + (700 * r) / repeats, at);
      const code = await s.compress(tokens, budgetFor('ada-snapkv', budget)).then(
        () => 'finished',
        (e: { code?: string }) => e.code,
      );
      clearTimeout(timer);
      if (code === 'CANCELLED') cancelMs.compress.push(performance.now() - at.t);
      const g = model.createSession({ nCtx: docTokens + 64, nThreads: threads });
      await g.prefill(tokens.subarray(0, Math.min(docTokens, 1024)));
      const at2 = { t: 0 };
      const timer2 = cancelLater(g, 150 + (100 * r) / repeats, at2);
      const res = await g.generate({ n: 4096, temperature: 0 });
      clearTimeout(timer2);
      if (res.stopReason === 'cancelled') cancelMs.generate.push(performance.now() - at2.t);
      s.dispose();
      g.dispose();
    }
    if (!cancelMs.compress.length || !cancelMs.generate.length)
      throw new Error('the work finished before it could be cancelled: use a longer --doc-tokens');
    log(
      `  cancellation lands in: compress ${cancelMs.compress.map((x) => x.toFixed(0)).join(', ')} ms; generate ${cancelMs.generate.map((x) => x.toFixed(0)).join(', ')} ms`,
    );

    const long = runLongReads(path, longLengths, longOptions, log);
    const precision = await precisionDecode(model, precisionContexts, precisions, precisionOptions, log);

    const info = model.info();
    model.dispose();
    const result = {
      model: path,
      name: info.name,
      backend: info.backend,
      threads,
      document_tokens: docTokens,
      budget,
      prefill,
      ada_overhead_vs_snapkv: adaOverhead,
      compress_ms: { snapkv: median(compressMs.snapkv), 'ada-snapkv': median(compressMs['ada-snapkv']) },
      peak_rss: {
        full: peakFull.peak,
        'ada-snapkv': peakAda.peak,
        kv_bytes_full: peakFull.kvBytes,
        kv_bytes_kept: peakAda.kvBytes,
      },
      decode,
      long,
      precision,
      cancel_ms: {
        compress: { median: median(cancelMs.compress), max: Math.max(...cancelMs.compress), runs: cancelMs.compress },
        generate: { median: median(cancelMs.generate), max: Math.max(...cancelMs.generate), runs: cancelMs.generate },
      },
    };
    print(
      v,
      result,
      `prefill of ${docTokens} tokens (median of ${repeats}): full ${(prefill.full.median_ms / 1000).toFixed(2)} s, ` +
        `snapkv ${(prefill.snapkv.median_ms / 1000).toFixed(2)} s, ada-snapkv ${(prefill['ada-snapkv'].median_ms / 1000).toFixed(2)} s ` +
        `(Ada over SnapKV: ${(adaOverhead * 100).toFixed(1)}%; the selection itself: ${result.compress_ms['ada-snapkv'].toFixed(0)} vs ${result.compress_ms.snapkv.toFixed(0)} ms)\n` +
        `peak memory: full ${mib(peakFull.peak)} vs ada-snapkv ${mib(peakAda.peak)} (KV cache ${mib(peakFull.kvBytes)} -> ${mib(peakAda.kvBytes)})\n` +
        decode
          .map(
            (d) =>
              `decode at ${d.context} tokens: full ${d.full_tokens_per_s.toFixed(1)} t/s, compressed ${d.compressed_tokens_per_s.toFixed(1)} t/s`,
          )
          .join('\n') +
        '\n' +
        `cancellation lands in: compress median ${result.cancel_ms.compress.median.toFixed(0)} ms (max ${result.cancel_ms.compress.max.toFixed(0)}), ` +
        `generate median ${result.cancel_ms.generate.median.toFixed(0)} ms (max ${result.cancel_ms.generate.max.toFixed(0)})\n` +
        long.map(longLine).join('') +
        precision.map((p) => precisionLine(p, precision.find((b) => b.context === p.context)!)).join(''),
    );
  },
};
