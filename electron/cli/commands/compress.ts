// folio compress: prefill a document, compress its KV cache, print what the compression did.
import {
  type Command,
  common,
  compressFlags,
  compressOptions,
  documentTokens,
  checkFits,
  mib,
  need,
  openModel,
  print,
  sessionOptions,
  str,
} from '../args.ts';
import type { CompressionStats } from '../../engine/binding.ts';

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

export const compress: Command = {
  summary: 'prefill a document and compress its KV cache; print the statistics',
  usage:
    'folio compress --model M --doc FILE --method ada-snapkv --budget 0.2 [--alpha 0.2] [--window 32] [--kernel 7] [--beta 20]\n' +
    '               [--question Q] [--measure-loss] [--ctx N] [--kv-type f16|f32] [--json]',
  options: { ...common, ...compressFlags, 'measure-loss': { type: 'boolean' } },
  async run(v) {
    const opts = { ...compressOptions(v), measureLoss: !!v['measure-loss'] };
    const sessionOpts = sessionOptions(v);
    const docPath = need(v, 'doc');
    const model = await openModel(v);
    const { tokens, questionTokens } = documentTokens(model, docPath, str(v, 'question'));
    const session = model.createSession(sessionOpts);
    checkFits(tokens.length, session.nCtx, 0);
    const { stats } = await session.compress(tokens, {
      ...opts,
      onProgress: v.json ? undefined : (d, t) => process.stderr.write(`\rprefill ${d}/${t} tokens`),
    });
    if (!v.json) process.stderr.write('\n');
    const memory = session.memory();
    session.dispose();
    print(
      v,
      { ...statsJson(stats), question_tokens: questionTokens, cache_bytes_reserved: memory.bytesReserved },
      table(stats),
    );
  },
};
