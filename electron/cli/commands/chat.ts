// folio chat: questions over one compressed document. The document is prefilled and compressed once; a fork
// of that untouched session holds the conversation, so /reset is a new fork, never a new prefill. Questions
// come line by line from stdin (a terminal or a pipe), answers stream token by token, and a status line after
// every turn says where the cache stands.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { createInterface } from 'node:readline';

import type { Model, Session } from '../../engine/binding.ts';
import {
  type Command, checkFits, common, compressFlags, compressOptions, int, mib, need, openModel, samplingFlags, samplingOptions, sessionOptions, str,
} from '../args.ts';
import {
  ChatFormatError, Conversation, formatTokens, plainRenderer, systemContent, templateRenderer, type TurnPlan,
} from '../../core/chat-format.ts';
import { table as statsTable } from './compress.ts';

/** Tokens the context must keep free after the document for a question and its answer. */
export const conversationReserve = 64;

const piece = (model: Model, id: number) => model.tokenToPiece(id, true);

/** The text of tokens the way generation streamed it (SentencePiece's leading space kept). */
function piecesText(model: Model, ids: number[]): string {
  return Buffer.concat(ids.map((id) => Buffer.from(model.tokenToPiece(id, false)))).toString('utf8');
}

export const chat: Command = {
  summary: 'ask questions about one compressed document, line by line from stdin',
  usage:
    'folio chat --model M --doc FILE --method ada-snapkv --budget 0.2 [--alpha 0.2] [--window 32] [--kernel 7] [--system "..."]\n' +
    '           [--n 256] [--temp 0.8] [--top-k 40] [--top-p 0.95] [--min-p 0.05] [--repeat-penalty 1] [--repeat-last-n 64]\n' +
    '           [--seed S] [--ctx N] [--threads N] [--kv-type f16|f32]\n' +
    '      then type questions; /reset drops the conversation (the document stays compressed), /stats, /quit',
  options: {
    model: common.model, threads: common.threads, ctx: common.ctx, 'kv-type': common['kv-type'], help: common.help,
    doc: compressFlags.doc, method: compressFlags.method, budget: compressFlags.budget, alpha: compressFlags.alpha,
    window: compressFlags.window, kernel: compressFlags.kernel,
    system: { type: 'string' }, n: { type: 'string' },
    ...samplingFlags,
  },
  async run(v) {
    // Every flag is checked before the model is loaded.
    const copts = compressOptions(v);
    const nMax = int(v, 'n', 256, 1);
    const sampling = {
      ...samplingOptions(v),
    };
    const sessionOpts = sessionOptions(v);
    const docPath = need(v, 'doc');
    let docText: string;
    try {
      docText = readFileSync(docPath, 'utf8');
    } catch (e) {
      throw Object.assign(new Error(`cannot read the document ${docPath}: ${(e as Error).message}`), { code: 'DOC_READ' });
    }
    if (docText.trim() === '') throw Object.assign(new Error(`the document ${docPath} is empty`), { code: 'DOC_EMPTY' });
    const system = str(v, 'system');

    const model = await openModel(v);
    const info = model.info();
    const vocab = info.tokenizer;
    const hasTemplate = info.chatTemplate.trim() !== '';
    const text = (id: number) => (id >= 0 && id < info.nVocab ? Buffer.from(piece(model, id)).toString('utf8') : '');
    const render = hasTemplate ? templateRenderer(info.chatTemplate, { bos: text(vocab.bos), eos: text(vocab.eos) }) : plainRenderer;
    const conv = new Conversation(render, systemContent(docText, system));
    const tokenize = (t: string, o: { addSpecial: boolean; parseSpecial: boolean }) => model.tokenize(t, o);
    const bos = { id: vocab.bos, add: vocab.addBos };
    const turnTokens = (t: string) => formatTokens(tokenize, t, { template: hasTemplate, first: false, bos });
    const prefix = formatTokens(tokenize, conv.prefixText, { template: hasTemplate, first: true, bos });

    const base = model.createSession(sessionOpts);
    const nCtx = base.nCtx;
    try {
      checkFits(prefix.length, nCtx, conversationReserve);
    } catch (e) {
      base.dispose();
      throw e;
    }
    const { stats } = await base.compress(prefix, {
      ...copts,
      onProgress: process.stderr.isTTY ? (d, t) => process.stderr.write(`\rprefill ${d}/${t} tokens`) : undefined,
    });
    if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');
    const L = base.nPast;
    const saved = 100 * (1 - stats.kv_bytes_kept / stats.kv_bytes_full);
    process.stdout.write(
      `[document ${basename(docPath)}: ${L} tokens${hasTemplate ? ' (with the chat template)' : ''}, ${stats.method}` +
        (stats.compressed ? ` at budget ${copts.budget} (${stats.budget} tokens per head)` : ` (nothing compressed: ${stats.reason})`) +
        `, KV cache ${mib(stats.kv_bytes_full)} -> ${mib(stats.kv_bytes_kept)} (${saved.toFixed(1)}% saved); ` +
        `${nCtx - L} of ${nCtx} context tokens free for the conversation; ${hasTemplate ? 'chat template' : 'plain question/answer format'}]\n`,
    );

    // The conversation lives in a fork; `base` stays untouched for /reset.
    let session: Session = base.fork();
    /** Cache position where the last answer began (after its prompt), -1 when there is none. */
    let answerAt = -1;
    let generating = false;
    const interactive = !!process.stdin.isTTY;
    const rl = createInterface({ input: process.stdin, output: interactive ? process.stdout : undefined, terminal: interactive });
    rl.on('SIGINT', () => {
      if (generating) session.cancel();
      else rl.close();
    });
    if (interactive) {
      process.stdout.write('Ask about the document. /reset starts over, /stats shows the compression, /quit leaves.\n');
      rl.setPrompt('> ');
      rl.prompt();
    }
    const status = (s: string) => process.stdout.write(`[${s}]\n`);

    try {
      for await (const raw of rl) {
        const line = raw.trim();
        if (line === '') {
          if (interactive) rl.prompt();
          continue;
        }
        if (line === '/quit' || line === '/exit') break;
        if (line === '/reset') {
          session.dispose();
          session = base.fork();
          conv.reset();
          answerAt = -1;
          status(`reset: conversation dropped, the compressed document kept; position ${session.nPast} of ${nCtx}`);
        } else if (line === '/stats') {
          process.stdout.write(statsTable(stats));
          status(`position ${session.nPast} of ${nCtx}, cache ${mib(session.memory().bytesUsed)} in use`);
        } else if (line.startsWith('/')) {
          process.stderr.write(`unknown command ${line}: /reset, /stats or /quit (a question cannot start with '/')\n`);
        } else {
          await turn(line);
        }
        if (interactive) rl.prompt();
      }
    } finally {
      rl.close();
      session.dispose();
      base.dispose();
    }

    async function turn(question: string) {
      let plan: TurnPlan;
      try {
        plan = conv.plan(question);
      } catch (e) {
        if (e instanceof ChatFormatError) {
          process.stderr.write(`error: ${e.message}\n`);
          return;
        }
        throw e;
      }
      const from = plan.dropLastAnswer ? answerAt : session.nPast;
      const tokens = turnTokens(plan.text);
      if (from + tokens.length + 1 > nCtx) {
        process.stderr.write(
          `this question does not fit: its prompt is ${tokens.length} tokens and ${nCtx - from} of the ${nCtx} context tokens are free ` +
            `(an answer needs at least one more); /reset drops the conversation and keeps the document\n`,
        );
        status(`position ${session.nPast} of ${nCtx}`);
        return;
      }
      if (plan.dropLastAnswer) session.truncate(answerAt);
      await session.prefill(tokens);
      conv.accept(plan);
      const start = session.nPast;
      generating = true;
      let gen;
      try {
        gen = await session.generate({
          ...sampling,
          n: Math.min(nMax, nCtx - start),
          stopAtEog: true,
          onToken: (t) => void process.stdout.write(t.text),
        });
      } finally {
        generating = false;
      }
      // The answer as the cache holds it: generation does not feed back the token it stopped at.
      const inCache = gen.tokens.slice(0, session.nPast - start);
      conv.answered(piecesText(model, inCache));
      answerAt = start;
      process.stdout.write('\n');
      status(
        `turn ${conv.turns}: ${tokens.length} prompt tokens, ${inCache.length} answer tokens (stop: ${gen.stopReason}); ` +
          `position ${session.nPast} of ${nCtx}`,
      );
      if (session.nPast >= nCtx) process.stderr.write('the context is full: /reset drops the conversation and keeps the document\n');
    }
  },
};
