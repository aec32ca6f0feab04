// folio compress: prefill a document, compress its KV cache, print what the compression did.
import {
  type Command, common, compressFlags, compressOptions, documentTokens, checkFits, mib, need, openModel, print,
  sessionOptions, str,
} from '../args.ts';
import type { CompressionStats } from '../../engine/binding.ts';

/** The statistics as a plain JSON value (the retention map as an array). */
export function statsJson(stats: CompressionStats) {
  return { ...stats, token_retention: Array.from(stats.token_retention) };
}

/** The statistics as a table for people (also `/stats` in folio chat). */
export function table(stats: CompressionStats): string {
  const lines = [
    `${stats.method}: ${stats.prefix_tokens} prefix tokens, ` +
      (stats.compressed
        ? `budget ${stats.budget} tokens per head (window ${stats.window}${stats.budget_clamped ? ', raised to exceed the window' : ''})`
        : `nothing compressed (${stats.reason})`),
    `KV cache ${mib(stats.kv_bytes_full)} -> ${mib(stats.kv_bytes_kept)} ` +
      `(${(100 * (1 - stats.kv_bytes_kept / stats.kv_bytes_full)).toFixed(1)}% saved), ` +
      `prefill ${(stats.ms_prefill / 1000).toFixed(2)} s, compression ${(stats.ms_compress / 1000).toFixed(3)} s`,
    '',
    'layer  budget  kept per KV head                     retained mass per head               eps/C' +
      (stats.layers.some((l) => l.attn_l1 !== null) ? '   L1 loss' : ''),
  ];
  stats.layers.forEach((l, i) => {
    const kept = l.heads.map((h) => String(h.kept).padStart(5)).join('');
    const mass = l.heads.map((h) => h.retained_mass.toFixed(3).padStart(6)).join('');
    lines.push(
      `${String(i).padStart(5)}  ${String(l.budget).padStart(6)}  ${kept.padEnd(36)} ${mass.padEnd(36)} ${l.eps_over_c.toFixed(3).padStart(6)}` +
        (l.attn_l1 !== null ? `  ${l.attn_l1.toFixed(4).padStart(8)}` : ''),
    );
  });
  return lines.join('\n') + '\n';
}

export const compress: Command = {
  summary: 'prefill a document and compress its KV cache; print the statistics',
  usage:
    'folio compress --model M --doc FILE --method ada-snapkv --budget 0.2 [--alpha 0.2] [--window 32] [--kernel 7]\n' +
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
    print(v, { ...statsJson(stats), question_tokens: questionTokens, cache_bytes_reserved: memory.bytesReserved }, table(stats));
  },
};
