// folio chat: questions over one compressed document, on the app's own path. The engine runs in its own
// process behind EngineManager, as in the app; the document is imported and read as the app reads it (its
// parser's pages, the app's system prompt, room and compression settings unless flags say otherwise) and is
// compressed once; the conversation is the app's chat driver (conversation.ts), in the chat style the app
// would take for the model (a base model continues text), in a fork of that untouched session, so /reset is
// a new fork, never a new prefill. Questions come line by line from stdin (a terminal or a pipe), answers
// stream token by token, and a status line after every turn says where the cache stands.
import { basename } from 'node:path';
import { createInterface } from 'node:readline';

import { ChatStyle, type CompressionSettings } from '../../api/contract.ts';
import { importDocument } from '../../documents/index.ts';
import { answerEnds, ChatFormatError } from '../../services/chat-format.ts';
import { ContextFullError, ConversationSession } from '../../services/conversation.ts';
import type { EngineManager } from '../../services/engine-manager.ts';
import { conversationFor } from '../../services/prefix.ts';
import { chatStyleFor } from '../../shared/chat-style.ts';
import { readDocument } from '../../services/read-document.ts';
import { DEFAULT_SETTINGS } from '../../storage/settings.ts';
import {
  type Command,
  common,
  compressFlags,
  compressionSettings,
  int,
  mib,
  need,
  samplingFlags,
  samplingOptions,
  sessionOptions,
  str,
  UsageError,
} from '../args.ts';
import { withEngine } from '../engine.ts';
import { table as statsTable } from './compress.ts';

export const chat: Command = {
  summary: 'ask questions about one compressed document, line by line from stdin',
  usage:
    'folio chat --model M --doc FILE [--method ada-snapkv-global] [--budget 0.2] [--alpha 0.2] [--window 32] [--kernel 7] [--beta 20]\n' +
    '           [--positions auto|own|packed] [--style chat|completion] [--room N] [--system "..."] [--n 512] [--temp 0.8] [--top-k 40] [--top-p 0.95] [--min-p 0.05] [--repeat-penalty 1] [--repeat-last-n 64]\n' +
    '           [--seed S] [--ctx N] [--threads N] [--kv-type f16|f32]\n' +
    '      then type questions; /reset drops the conversation (the document stays compressed), /stats, /quit',
  options: {
    model: common.model,
    threads: common.threads,
    ctx: common.ctx,
    'kv-type': common['kv-type'],
    help: common.help,
    doc: compressFlags.doc,
    method: compressFlags.method,
    budget: compressFlags.budget,
    alpha: compressFlags.alpha,
    window: compressFlags.window,
    kernel: compressFlags.kernel,
    beta: compressFlags.beta,
    positions: compressFlags.positions,
    style: { type: 'string' },
    room: { type: 'string' },
    system: { type: 'string' },
    n: { type: 'string' },
    ...samplingFlags,
  },
  async run(v) {
    // Every flag is checked before the engine starts.
    const compression = compressionSettings(v);
    const nMax = int(v, 'n', DEFAULT_SETTINGS.sampling.maxTokens, 1);
    const sampling = samplingOptions(v);
    const flags = sessionOptions(v);
    const { nCtx: ctx, kvType } = flags;
    const docPath = need(v, 'doc');
    const system = str(v, 'system') ?? DEFAULT_SETTINGS.systemPrompt;
    const room = v.room === undefined ? null : int(v, 'room', 0, 1);
    const styleFlag = str(v, 'style');
    if (styleFlag !== undefined && !ChatStyle.safeParse(styleFlag).success)
      throw new UsageError(`--style must be ${ChatStyle.options.join(' or ')}, not '${styleFlag}'`);
    const modelPath = need(v, 'model');
    // The pages as the app imports them (every kind through its parser).
    const pages = (await importDocument({ path: docPath })).pages.map((p) => ({ page: p.page, text: p.text }));

    await withEngine(flags, (engine) =>
      converse(engine, {
        ctx,
        kvType,
        modelPath,
        docPath,
        pages,
        system,
        room,
        style: styleFlag as ChatStyle | undefined,
        compression,
        nMax,
        sampling,
      }),
    );
  },
};

interface ChatRun {
  ctx: number;
  kvType: 'f16' | 'f32';
  modelPath: string;
  docPath: string;
  pages: { page: number; text: string }[];
  system: string;
  /** The room for the conversation (null: the app's default). */
  room: number | null;
  /** Absent: the app's choice for the model (ChatStyle). */
  style?: ChatStyle;
  compression: CompressionSettings;
  nMax: number;
  sampling: ReturnType<typeof samplingOptions>;
}

/** Compresses the document, then answers the questions of stdin until it ends or /quit. */
async function converse(engine: EngineManager, o: ChatRun) {
  const model = await engine.ensureModel(o.modelPath, o.modelPath);
  const format = await engine.chatFormat(model);
  // Read as the app reads a document (read-document.ts): a context sized to it, one pass or chunks, re-based
  // beyond the model's context.
  const read = await readDocument(engine, {
    model,
    pages: o.pages,
    systemPrompt: o.system,
    compression: o.compression,
    kvType: o.kvType,
    contextCap: o.ctx || null,
    conversationRoom: o.room,
    onProgress: process.stderr.isTTY ? (d, t) => process.stderr.write(`\rreading ${d}/${t} tokens`) : undefined,
  });
  const { plan, stats, nPast: L, nCtx } = read;
  const style = chatStyleFor(o.style, format.template);
  const ends = answerEnds({ template: format.template, style });
  const base = { sessionId: read.sessionId };
  if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');
  const saved = 100 * (1 - stats.kvBytesKept / stats.kvBytesFull);
  process.stdout.write(
    `[document ${basename(o.docPath)}: ${stats.prefixTokens} tokens${format.template ? ' (with the chat template)' : ''}, ${stats.method}` +
      (stats.compressed
        ? ` at budget ${o.compression.budget} (${stats.budget} tokens per head)`
        : ` (nothing compressed: ${stats.reason})`) +
      `, KV cache ${mib(stats.kvBytesFull)} -> ${mib(stats.kvBytesKept)} (${saved.toFixed(1)}% saved); ` +
      `${nCtx - L} of ${nCtx} context tokens free for the conversation; ${
        style === 'completion'
          ? 'completion: each line continues the document'
          : format.template
            ? 'chat template'
            : 'plain question/answer format'
      }]\n` +
      (plan.chunk || plan.rebase || plan.pack ? `[${plan.note}]\n` : ''),
  );
  // Each token after the compressed prefix adds one entry per (layer, KV head): a full-cache token's bytes.
  const cacheBytes = (position: number) => stats.kvBytesKept + (position - L) * (stats.kvBytesFull / L);

  // The conversation lives in a fork; `base` stays untouched for /reset.
  const conversation = conversationFor(format, o.system, o.pages, style).conversation;
  const chat = await ConversationSession.fork(engine, model, format, conversation, base.sessionId);
  /** Stops the answer being written (Ctrl-C in a terminal); null between answers. */
  let answering: AbortController | null = null;
  const interactive = !!process.stdin.isTTY;
  const rl = createInterface({
    input: process.stdin,
    output: interactive ? process.stdout : undefined,
    terminal: interactive,
  });
  rl.on('SIGINT', () => {
    if (answering) answering.abort();
    else rl.close();
  });
  if (interactive) {
    process.stdout.write('Ask about the document. /reset starts over, /stats shows the compression, /quit leaves.\n');
    rl.setPrompt('> ');
    rl.prompt();
  }
  const status = (s: string) => process.stdout.write(`[${s}]\n`);

  async function turn(question: string) {
    let promptTokens: number, compressed: number, setAside: number;
    try {
      ({ promptTokens, compressedTurns: compressed, forgottenTurns: setAside } = await chat.ask(question));
    } catch (e) {
      if (e instanceof ChatFormatError) {
        process.stderr.write(`error: ${e.message}\n`);
        return;
      }
      if (e instanceof ContextFullError) {
        process.stderr.write(
          `this question does not fit: its prompt is ${e.promptTokens} tokens and ${e.free} of the ${nCtx} context tokens are free ` +
            `(an answer needs at least one more); /reset drops the conversation and keeps the document\n`,
        );
        status(`position ${chat.status().position} of ${nCtx}`);
        return;
      }
      throw e;
    }
    answering = new AbortController();
    let a;
    try {
      a = await chat.answer({
        ...o.sampling,
        maxTokens: Math.min(o.nMax, ends.maxTokens),
        stops: ends.stops,
        signal: answering.signal,
        onText: (t) => void process.stdout.write(t),
      });
    } finally {
      answering = null;
    }
    process.stdout.write('\n');
    const st = chat.status();
    const turns = (n: number) => (n === 1 ? 'turn was' : `${n} turns were`);
    status(
      `turn ${st.turns}: ${promptTokens} prompt tokens, ${a.cacheTokens} answer tokens (stop: ${a.stopReason}); position ${st.position} of ${nCtx}` +
        (compressed > 0 ? `; the older ${turns(compressed)} compressed to make room` : '') +
        (setAside > 0 ? `; the oldest ${turns(setAside)} set aside to make room` : ''),
    );
    if (st.free <= 0)
      process.stderr.write(
        'the context is full: the next question compresses the older turns, or sets the oldest aside (the document stays); /reset drops the conversation\n',
      );
  }

  try {
    for await (const raw of rl) {
      const line = raw.trim();
      // Text to continue is given as typed (a trailing space asks for the next word); a question trimmed.
      const said = style === 'completion' ? raw : line;
      if (line === '') {
        if (interactive) rl.prompt();
        continue;
      }
      if (line === '/quit' || line === '/exit') break;
      if (line === '/reset') {
        await chat.reset();
        status(
          `reset: conversation dropped, the compressed document kept; position ${chat.status().position} of ${nCtx}`,
        );
      } else if (line === '/stats') {
        process.stdout.write(statsTable(stats));
        const { position } = chat.status();
        status(`position ${position} of ${nCtx}, cache ${mib(cacheBytes(position))} in use`);
      } else if (line.startsWith('/')) {
        process.stderr.write(`unknown command ${line}: /reset, /stats or /quit (a question cannot start with '/')\n`);
      } else {
        await turn(said);
      }
      if (interactive) rl.prompt();
    }
  } finally {
    rl.close();
    await chat.dispose();
    await engine.disposeSession(base.sessionId);
  }
}
