// folio compress: read a document into the model, compress its KV cache, print what the compression did.
import {
  type Command,
  common,
  compressFlags,
  compressOptions,
  documentTokens,
  checkFits,
  int,
  mib,
  need,
  openModel,
  print,
  readText,
  sessionOptions,
  str,
  UsageError,
} from '../args.ts';
import { importDocument } from '../../documents/index.ts';
import type { CompressionStats } from '../../engine/binding.ts';
import { shapeFromInfo } from '../../models/estimate.ts';
import { PAGE_SEPARATOR } from '../../services/prefix.ts';
import { COMPRESS_DEFAULTS } from '../../kv/options.ts';
import { planRead } from '../../services/read-plan.ts';

/** The statistics as a plain JSON value (the retention map as an array). */
export function statsJson(stats: CompressionStats) {
  return { ...stats, tokenRetention: Array.from(stats.tokenRetention) };
}

/** The statistics as a table for people (also `/stats` in folio chat). */
export function table(stats: CompressionStats): string {
  const lines = [
    `${stats.method}: ${stats.prefixTokens} prefix tokens, ` +
      (stats.compressed
        ? `budget ${stats.budget} tokens per head (window ${stats.window}${stats.budgetClamped ? ', raised to exceed the window' : ''})`
        : `nothing compressed (${stats.reason})`),
    `KV cache ${mib(stats.kvBytesFull)} -> ${mib(stats.kvBytesKept)} ` +
      `(${(100 * (1 - stats.kvBytesKept / stats.kvBytesFull)).toFixed(1)}% saved), ` +
      `prefill ${(stats.msPrefill / 1000).toFixed(2)} s, compression ${(stats.msCompress / 1000).toFixed(3)} s`,
    stats.chunks > 1
      ? `read in ${stats.chunks} chunks of ${stats.chunkTokens} tokens; the cache peaked at ${mib(stats.kvBytesPeak)} ` +
        `(bound ${mib(stats.kvBytesBound)})` +
        (stats.rebased
          ? `; positions re-based: ${stats.positions} for ${stats.prefixTokens} tokens (lower quality)`
          : '')
      : `read in one pass; the cache peaked at ${mib(stats.kvBytesPeak)}`,
    '',
    'layer  budget  kept per KV head                     retained mass per head               eps/C' +
      (stats.layers.some((l) => l.attnL1 !== null) ? '   L1 loss' : ''),
  ];
  stats.layers.forEach((l, i) => {
    const kept = l.heads.map((h) => String(h.kept).padStart(5)).join('');
    const mass = l.heads.map((h) => h.retainedMass.toFixed(3).padStart(6)).join('');
    lines.push(
      `${String(i).padStart(5)}  ${String(l.budget).padStart(6)}  ${kept.padEnd(36)} ${mass.padEnd(36)} ${l.epsOverC.toFixed(3).padStart(6)}` +
        (l.attnL1 !== null ? `  ${l.attnL1.toFixed(4).padStart(8)}` : ''),
    );
  });
  return lines.join('\n') + '\n';
}

/** A document's text: plain text and Markdown as they are, PDF and Word through the app's parser (as pages). */
async function documentText(path: string): Promise<string> {
  if (/\.(txt|md|markdown)$/i.test(path) || !/\.(pdf|docx)$/i.test(path)) return readText(path);
  const doc = await importDocument({ path });
  return doc.pages.map((p) => p.text).join(PAGE_SEPARATOR);
}

/** Progress on stderr with the time left, from the rate so far. */
function progressLine(started: number) {
  return (done: number, total: number) => {
    const s = (performance.now() - started) / 1000;
    const left = done > 0 ? ((total - done) * s) / done : NaN;
    const eta = Number.isFinite(left) && s > 1 ? `, ${duration(left)} left` : '';
    process.stderr.write(`\rreading ${done}/${total} tokens${eta}\x1b[K`);
  };
}

function duration(s: number): string {
  if (s < 60) return `${Math.ceil(s)} s`;
  return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

export const compress: Command = {
  summary: 'read a document (text, Markdown, PDF, Word) and compress its KV cache; print the statistics',
  usage:
    'folio compress --model M --doc FILE --method ada-snapkv --budget 0.2 [--alpha 0.2] [--window 32] [--kernel 7] [--beta 20]\n' +
    '               [--question Q] [--measure-loss] [--chunk auto|N|0] [--rebase] [--room N] [--ctx N] [--kv-type f16|f32] [--json]\n' +
    '  A document is read as the app reads it (docs/compression.md, "Reading a long document"): in one pass when it fits,\n' +
    '  else in chunks, with re-based positions when it is longer than the context; --chunk and --rebase choose by hand.',
  options: {
    ...common,
    ...compressFlags,
    'measure-loss': { type: 'boolean' },
    chunk: { type: 'string' },
    rebase: { type: 'boolean' },
    room: { type: 'string' },
  },
  async run(v) {
    const opts = { ...compressOptions(v), measureLoss: !!v['measure-loss'] };
    const sessionOpts = sessionOptions(v);
    const chunkFlag = str(v, 'chunk');
    if (chunkFlag !== undefined && chunkFlag !== 'auto' && !/^\d+$/.test(chunkFlag))
      throw new UsageError(`--chunk must be auto, 0 (one pass) or a number of tokens, not '${chunkFlag}'`);
    const docPath = need(v, 'doc');
    const text = await documentText(docPath);
    const model = await openModel(v);
    const { tokens, questionTokens } = documentTokens(model, text, docPath, str(v, 'question'));
    // How the app would read it: into a context sized to it, one pass or chunks, re-based beyond the model's.
    const info = model.info();
    const plan = planRead({
      prefixTokens: tokens.length,
      shape: shapeFromInfo(info),
      compression: { ...COMPRESS_DEFAULTS, ...opts, budget: opts.budget ?? 1 },
      kvType: sessionOpts.kvType,
      contextCap: sessionOpts.nCtx || null,
      conversationRoom: v.room === undefined ? null : int(v, 'room', 0, 1),
    });
    const chunk = chunkFlag === undefined ? plan.chunk : chunkFlag === 'auto' ? 'auto' : Number(chunkFlag);
    const rebase = plan.rebase || !!v.rebase;
    const session = model.createSession({ ...sessionOpts, nCtx: plan.nCtx });
    if (!rebase) checkFits(tokens.length, session.nCtx, 0);
    const { stats } = await session.compress(tokens, {
      ...opts,
      budget: plan.budget ?? opts.budget,
      chunk,
      rebase,
      room: plan.room,
      onProgress: v.json || !process.stderr.isTTY ? undefined : progressLine(performance.now()),
    });
    if (!v.json && process.stderr.isTTY) process.stderr.write('\n');
    const memory = session.memory();
    session.dispose();
    print(
      v,
      {
        ...statsJson(stats),
        question_tokens: questionTokens,
        cache_bytes_reserved: memory.bytesReserved,
        context_tokens: plan.nCtx,
      },
      table(stats),
    );
  },
};
