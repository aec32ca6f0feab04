// folio compress: read a document into the model, compress its KV cache, print what the compression did. The
// document is read exactly as the app reads it (read-document.ts): its pages as the app imports them, the app's
// system prompt (--system another), the app's plan, the engine in a process of its own.
import { kvFormat } from '../../shared/kv/precision.ts';
import { importDocument, isImportError } from '../../documents/index.ts';
import { ocrSpeed } from '../../documents/ocr.ts';
import { OCR_ASK_OVER_SECONDS, parseOcrPages } from '../../shared/ocr.ts';
import type { CompressionStats } from '../../engine/binding.ts';
import { readDocument } from '../../services/read-document.ts';
import { DEFAULT_SYSTEM_PROMPT } from '../../storage/settings.ts';
import {
  type Command,
  common,
  compressFlags,
  compressionSettings,
  int,
  mib,
  need,
  print,
  sessionOptions,
  str,
  UsageError,
  PRECISION_USAGE,
} from '../args.ts';
import { withEngine } from '../engine.ts';

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
    (stats.chunks > 1
      ? `read in ${stats.chunks} chunks of ${stats.chunkTokens} tokens; the cache peaked at ${mib(stats.kvBytesPeak)} ` +
        `(bound ${mib(stats.kvBytesBound)})`
      : `read in one pass; the cache peaked at ${mib(stats.kvBytesPeak)}`) +
      (stats.rebased
        ? `; positions re-based: ${stats.positions} for ${stats.prefixTokens} tokens (lower quality)`
        : ''),
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
    `               [--system "..."] [--question Q] [--measure-loss] [--chunk auto|N|0] [--rebase] [--room N] [--ctx N] ${PRECISION_USAGE} [--json]\n` +
    '               [--ocr-pages all|A-B]\n' +
    '  A document is read as the app reads it (docs/compression.md, "Reading a long document"): in one pass when it fits,\n' +
    '  else in chunks, with re-based positions when it is longer than the context; --chunk and --rebase choose by hand.\n' +
    '  A scan whose OCR would take more than a minute is read only with --ocr-pages: all, or a range of pages (the\n' +
    '  pages with a text layer are read whatever the range).',
  options: {
    ...common,
    ...compressFlags,
    'measure-loss': { type: 'boolean' },
    system: { type: 'string' },
    chunk: { type: 'string' },
    rebase: { type: 'boolean' },
    room: { type: 'string' },
    'ocr-pages': { type: 'string' },
  },
  async run(v) {
    const compression = compressionSettings(v);
    const flags = sessionOptions(v);
    const { nCtx } = flags;
    const chunkFlag = str(v, 'chunk');
    if (chunkFlag !== undefined && chunkFlag !== 'auto' && !/^\d+$/.test(chunkFlag))
      throw new UsageError(`--chunk must be auto, 0 (one pass) or a number of tokens, not '${chunkFlag}'`);
    const docPath = need(v, 'doc');
    const modelPath = need(v, 'model');
    const question = str(v, 'question');
    const room = v.room === undefined ? null : int(v, 'room', 0, 1);
    // The pages as the app imports them (every kind through its parser); a question goes after the last page,
    // where the observation window reads it (question-aware compression).
    const pagesFlag = str(v, 'ocr-pages');
    const ocrPages = pagesFlag === undefined ? undefined : parseOcrPages(pagesFlag);
    if (ocrPages === null)
      throw new UsageError(`--ocr-pages must be all, a page or a range of pages (3-40), not '${pagesFlag}'`);
    const imported = await importDocument(
      { path: docPath },
      // Without --ocr-pages a long OCR is not started: the error says how long it would take and what to pass.
      { ocrPages, ocrAsk: { overSeconds: OCR_ASK_OVER_SECONDS, secondsPerPage: ocrSpeed(null).secondsPerPage } },
    ).catch((e: unknown) => {
      if (!isImportError(e, 'OCR_CHOICE')) throw e;
      throw new UsageError(
        `${e.message.replace(/: choose .*$/, '')}: pass --ocr-pages all, or a range (--ocr-pages 1-20)`,
      );
    });
    // What the reader could not read (pages left out of OCR, damaged pages) goes to stderr, --json or not.
    for (const w of imported.warnings) process.stderr.write(`${docPath}: ${w}\n`);
    const pages = imported.pages.map((p) => ({ page: p.page, text: p.text }));
    if (question !== undefined) pages[pages.length - 1].text += `\n\n${question}`;
    await withEngine(flags, async (engine) => {
      const model = await engine.ensureModel(modelPath, modelPath);
      const started = performance.now();
      const read = await readDocument(engine, {
        model,
        pages,
        systemPrompt: str(v, 'system') ?? DEFAULT_SYSTEM_PROMPT,
        compression,
        kv: kvFormat(flags),
        contextCap: nCtx || null,
        conversationRoom: room,
        chunk: chunkFlag === undefined ? undefined : chunkFlag === 'auto' ? 'auto' : Number(chunkFlag),
        rebase: !!v.rebase,
        measureLoss: !!v['measure-loss'],
        onProgress: v.json || !process.stderr.isTTY ? undefined : progressLine(started),
      });
      if (!v.json && process.stderr.isTTY) process.stderr.write('\n');
      const questionTokens =
        question === undefined
          ? 0
          : (await engine.call('tokenize', { modelId: model.engineId, text: `\n\n${question}`, addSpecial: false }))
              .tokens.length;
      await engine.disposeSession(read.sessionId);
      print(
        v,
        { ...statsJson(read.stats), question_tokens: questionTokens, context_tokens: read.plan.nCtx },
        table(read.stats),
      );
    });
  },
};
