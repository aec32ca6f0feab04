// folio chat: questions over one compressed document, or a set of them side by side (--doc more than once: each
// read and saved at its own positions, then assembled as a chat over a set is, chat-set.ts), on the app's own path. The engine runs in its own
// process behind EngineManager, as in the app; the document is imported and read as the app reads it (its
// parser's pages, the app's system prompt, room and compression settings unless flags say otherwise) and is
// compressed once; the conversation is the app's chat driver (conversation.ts), in the chat style the app
// would take for the model (a base model continues text), in a fork of that untouched session, so /reset is
// a new fork, never a new prefill. Questions come line by line from stdin (a terminal or a pipe), answers
// stream token by token, and a status line after every turn says where the cache stands.
import { type KvFormat, kvFormat } from '../../shared/kv/precision.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { createInterface } from 'node:readline';

import { ChatStyle, type CompressionSettings } from '../../api/contract.ts';
import { importDocument } from '../../documents/index.ts';
import { answerEnds, ChatFormatError } from '../../services/chat-format.ts';
import { ContextFullError, ConversationSession } from '../../services/conversation.ts';
import { assembleSet, type SetDocument } from '../../services/chat-set.ts';
import type { EngineManager, LoadedModel } from '../../services/engine-manager.ts';
import { conversationFor, type ChatFormat } from '../../services/prefix.ts';
import type { CompressionStats } from '../../engine/protocol.ts';
import { MAX_CHAT_DOCUMENTS } from '../../shared/limits.ts';
import { conversationRoom } from '../../shared/room.ts';
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
  PRECISION_USAGE,
  precisionFlags,
} from '../args.ts';
import { withEngine } from '../engine.ts';
import { table as statsTable } from './compress.ts';

export const chat: Command = {
  summary: 'ask questions about a compressed document, or a set of them side by side, line by line from stdin',
  usage:
    'folio chat --model M --doc FILE [--doc FILE2 ...] [--method ada-snapkv-global] [--budget 0.2] [--alpha 0.2] [--window 32] [--kernel 7] [--beta 20]\n' +
    '           [--positions auto|own|packed] [--style chat|completion] [--room N] [--system "..."] [--n 512] [--temp 0.8] [--top-k 40] [--top-p 0.95] [--min-p 0.05] [--repeat-penalty 1] [--repeat-last-n 64]\n' +
    `           [--seed S] [--ctx N] [--threads N] ${PRECISION_USAGE}\n` +
    '      then type questions; /reset drops the conversation (the document stays compressed), /stats, /quit',
  options: {
    model: common.model,
    threads: common.threads,
    ctx: common.ctx,
    ...precisionFlags,
    help: common.help,
    doc: { ...compressFlags.doc, multiple: true },
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
    const { nCtx: ctx } = flags;
    const kv = kvFormat(flags);
    // --doc once, or more than once for a set of documents read side by side.
    const docPaths = (Array.isArray(v.doc) ? v.doc : [v.doc]).filter((d): d is string => typeof d === 'string');
    if (docPaths.length === 0) throw new UsageError('--doc is required');
    if (docPaths.length > MAX_CHAT_DOCUMENTS)
      throw new UsageError(`at most ${MAX_CHAT_DOCUMENTS} documents are read together, not ${docPaths.length}`);
    const system = str(v, 'system') ?? DEFAULT_SETTINGS.systemPrompt;
    const room = v.room === undefined ? null : int(v, 'room', 0, 1);
    const styleFlag = str(v, 'style');
    if (styleFlag !== undefined && !ChatStyle.safeParse(styleFlag).success)
      throw new UsageError(`--style must be ${ChatStyle.options.join(' or ')}, not '${styleFlag}'`);
    const modelPath = need(v, 'model');
    // The pages as the app imports them (every kind through its parser).
    const docs: ChatDoc[] = [];
    for (const path of docPaths)
      docs.push({ path, pages: (await importDocument({ path })).pages.map((p) => ({ page: p.page, text: p.text })) });

    await withEngine(flags, (engine) =>
      converse(engine, {
        ctx,
        kv,
        modelPath,
        docs,
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

/** A document given with --doc: its path and its pages as the app imports them. */
interface ChatDoc {
  path: string;
  pages: { page: number; text: string }[];
}

interface ChatRun {
  ctx: number;
  kv: KvFormat;
  modelPath: string;
  /** One document, or a set read side by side (--doc more than once). */
  docs: ChatDoc[];
  system: string;
  /** The room for the conversation (null: the app's default). */
  room: number | null;
  /** Absent: the app's choice for the model (ChatStyle). */
  style?: ChatStyle;
  compression: CompressionSettings;
  nMax: number;
  sampling: ReturnType<typeof samplingOptions>;
}

/** What the conversation goes on from: one compressed document, or a set of them side by side. */
interface Source {
  chat: ConversationSession;
  nCtx: number;
  style: ChatStyle;
  /** The compression of each document, for /stats. */
  stats: CompressionStats[];
  /** Bytes the cache holds at a position. */
  cacheBytes(position: number): number;
  /** A new conversation over the same documents (none read again). */
  reset(): Promise<void>;
  dispose(): Promise<void>;
}

/** Reads one document as the app reads it (read-document.ts: a context sized to it, one pass or chunks, re-based
 * beyond the model's context), saving its cache at its own positions to `saveTo` when a set needs it. */
async function readOne(
  engine: EngineManager,
  model: LoadedModel,
  template: boolean,
  o: ChatRun,
  doc: ChatDoc,
  saveTo?: string,
) {
  const read = await readDocument(engine, {
    model,
    pages: doc.pages,
    systemPrompt: o.system,
    compression: o.compression,
    kv: o.kv,
    contextCap: o.ctx || null,
    conversationRoom: o.room,
    onProgress: process.stderr.isTTY ? (d, t) => process.stderr.write(`\rreading ${d}/${t} tokens`) : undefined,
    onCompressed: saveTo
      ? async ({ sessionId }) => void (await engine.call('save', { sessionId, path: saveTo, meta: '' }))
      : undefined,
  });
  if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');
  const { stats, plan } = read;
  const saved = 100 * (1 - stats.kvBytesKept / stats.kvBytesFull);
  /** What the read did, and (then) how it was read when that is worth saying. */
  const banner = (more: string) =>
    process.stdout.write(
      `[document ${basename(doc.path)}: ${stats.prefixTokens} tokens${template ? ' (with the chat template)' : ''}, ${stats.method}` +
        (stats.compressed
          ? ` at budget ${o.compression.budget} (${stats.budget} tokens per head)`
          : ` (nothing compressed: ${stats.reason})`) +
        `, KV cache ${mib(stats.kvBytesFull)} -> ${mib(stats.kvBytesKept)} (${saved.toFixed(1)}% saved)${more}]\n` +
        (plan.chunk || plan.rebase || plan.pack ? `[${plan.note}]\n` : ''),
    );
  return { read, banner };
}

/** How the turns are written, as the banner says it. */
function styleText(style: ChatStyle, template: boolean): string {
  return style === 'completion'
    ? 'completion: each line continues the document'
    : template
      ? 'chat template'
      : 'plain question/answer format';
}

/** One document: compressed once; the conversation lives in a fork, the read session untouched for /reset. */
async function oneDocument(engine: EngineManager, model: LoadedModel, format: ChatFormat, o: ChatRun): Promise<Source> {
  const { read, banner } = await readOne(engine, model, format.template, o, o.docs[0]);
  const { stats, nPast: L, nCtx } = read;
  const style = chatStyleFor(o.style, format.template);
  banner(`; ${nCtx - L} of ${nCtx} context tokens free for the conversation; ${styleText(style, format.template)}`);
  const conversation = conversationFor(format, o.system, o.docs[0].pages, style).conversation;
  const chat = await ConversationSession.fork(engine, model, format, conversation, read.sessionId);
  return {
    chat,
    nCtx,
    style,
    stats: [stats],
    // Each token after the compressed prefix adds one entry per (layer, KV head): a full-cache token's bytes.
    cacheBytes: (position) => stats.kvBytesKept + (position - L) * (stats.kvBytesFull / L),
    reset: () => chat.reset(),
    dispose: async () => {
      await chat.dispose();
      await engine.disposeSession(read.sessionId);
    },
  };
}

/** A set: each document read and saved at its own positions, then their caches side by side (chat-set.ts), as a
 * chat over a set in the app is; /reset assembles them again. */
async function documentSet(engine: EngineManager, model: LoadedModel, format: ChatFormat, o: ChatRun): Promise<Source> {
  const dir = mkdtempSync(join(tmpdir(), 'folio-chat-'));
  const style = chatStyleFor(o.style, format.template);
  const documents: SetDocument[] = [];
  const stats: CompressionStats[] = [];
  let nCtx = 0;
  try {
    for (const [i, doc] of o.docs.entries()) {
      const kvPath = join(dir, `${i}.folio-kv`);
      const { read, banner } = await readOne(engine, model, format.template, o, doc, kvPath);
      banner('');
      await engine.disposeSession(read.sessionId);
      documents.push({ id: String(i), title: basename(doc.path), kvPath, ...read.prefix.map });
      stats.push(read.stats);
      nCtx = Math.max(nCtx, read.nCtx);
    }
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const assemble = async () => {
    const set = await assembleSet(engine, {
      model,
      format,
      systemPrompt: o.system,
      style,
      documents,
      nCtx,
      room: conversationRoom(nCtx, o.room),
      positions: o.compression.positions ?? 'auto',
    });
    process.stdout.write(
      `[${documents.length} documents side by side, ${set.packed ? 'packed to fit' : 'at their own positions'}: ` +
        `${set.nCtx - set.nPast} of ${set.nCtx} context tokens free for the conversation; ${styleText(style, format.template)}]\n`,
    );
    return { set, chat: ConversationSession.over(engine, model, format, set.conversation, set) };
  };
  let now = await assemble().catch((e: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  });
  const kept = stats.reduce((n, s) => n + s.kvBytesKept, 0);
  const perToken = stats[0].kvBytesFull / stats[0].prefixTokens;
  return {
    get chat() {
      return now.chat;
    },
    nCtx,
    style,
    stats,
    cacheBytes: (position) => kept + (position - now.set.nPast) * perToken,
    reset: async () => {
      await now.chat.dispose();
      now = await assemble();
    },
    dispose: async () => {
      await now.chat.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Compresses the document (or each of a set), then answers the questions of stdin until it ends or /quit. */
async function converse(engine: EngineManager, o: ChatRun) {
  const model = await engine.ensureModel(o.modelPath, o.modelPath);
  const format = await engine.chatFormat(model);
  const source =
    o.docs.length > 1 ? await documentSet(engine, model, format, o) : await oneDocument(engine, model, format, o);
  const { nCtx, style } = source;
  const ends = answerEnds({ template: format.template, style });
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
      ({ promptTokens, compressedTurns: compressed, forgottenTurns: setAside } = await source.chat.ask(question));
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
        status(`position ${source.chat.status().position} of ${nCtx}`);
        return;
      }
      throw e;
    }
    answering = new AbortController();
    let a;
    try {
      a = await source.chat.answer({
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
    const st = source.chat.status();
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
        await source.reset();
        status(
          `reset: conversation dropped, the compressed ${o.docs.length > 1 ? 'documents' : 'document'} kept; position ${source.chat.status().position} of ${nCtx}`,
        );
      } else if (line === '/stats') {
        for (const [i, st] of source.stats.entries()) {
          if (source.stats.length > 1) process.stdout.write(`${basename(o.docs[i].path)}:\n`);
          process.stdout.write(statsTable(st));
        }
        const { position } = source.chat.status();
        status(`position ${position} of ${nCtx}, cache ${mib(source.cacheBytes(position))} in use`);
      } else if (line.startsWith('/')) {
        process.stderr.write(`unknown command ${line}: /reset, /stats or /quit (a question cannot start with '/')\n`);
      } else {
        await turn(said);
      }
      if (interactive) rl.prompt();
    }
  } finally {
    rl.close();
    await source.dispose();
  }
}
