// Reading documents into the model and keeping their compressed sessions: a read (read-document.ts, recorded
// in the library as it starts, saved as a cache when it ends), a read again with other settings or of a range
// of pages, the reads a quit cut short resumed at start, a failure recorded with what can help, and a
// document's pristine session: in the engine, loaded from its saved cache (no prefill), or rebuilt.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { ApiError, type ChatStyle, type Params, type Result } from '../../api/contract.ts';
import { failureRemedy } from '../../documents/errors.ts';
import { conversationRoom, fittingPages, lastFittingPage, pagesRead } from '../../shared/room.ts';
import type { DocumentRecord } from '../../storage/index.ts';
import type { Conversation } from '../chat-format.ts';
import { assembleSet, setPages, type AssembledSet, type SetDocument } from '../chat-set.ts';
import type { SetBudgetChoice } from '../../shared/kv/budget.ts';
import { kvFormat } from '../../shared/kv/precision.ts';
import type { LoadedModel } from '../engine-manager.ts';
import { conversationFor, documentPrefix, type ChatFormat, type DocumentPrefix } from '../prefix.ts';
import { readDocument } from '../read-document.ts';
import type { ReadPlan } from '../read-plan.ts';
import { SessionKey } from '../session-key.ts';
import type { Task } from '../tasks.ts';
import {
  cacheMatches,
  chatModel,
  checkpointPath,
  documentSessionOptions,
  type DocumentsContext,
  prefixKey,
} from './context.ts';

/** The code a failure is stored with: what failureRemedy (documents/errors.ts) judges by. */
function failureCode(e: unknown, cancelled: boolean): string | null {
  const code = (e as { code?: unknown }).code;
  if (cancelled || code === 'ABORTED') return 'CANCELLED';
  return typeof code === 'string' ? code : null;
}

/** How a set's conversation is written; assembled, its one budget where it has one. */
interface SetOptions {
  format: ChatFormat;
  systemPrompt: string;
  style: ChatStyle;
  budget?: SetBudgetChoice;
  signal?: AbortSignal;
}

/** What a set's saved read (readTogether) was made of and how to load it, beside it as JSON. */
interface SavedSetMeta {
  /** The documents' pages, the model and the settings it was read with, hashed. */
  key: string;
  nCtx: number;
  /** Saved at its own positions, packed when loaded. */
  pack: boolean;
  bytes: { kvBytesKept: number; kvBytesFull: number };
}

/** Where a chat's set read together is saved (its documents' caches are theirs). */
function setCachePath(cacheDir: string, chatId: string): string {
  return join(cacheDir, `set-${chatId}.folio-kv`);
}
const setMetaPath = (kvPath: string) => `${kvPath}.json`;

export class DocumentReader {
  private building = new Map<string, Promise<string>>();

  constructor(private readonly ctx: DocumentsContext) {}

  /**
   * Reads cut short by a quit or a crash of the app go on from their last checkpoint (once at startup; the
   * engine starts over instead when the settings have changed since).
   */
  resumeInterrupted(): string[] {
    if (!this.ctx.storage.settings.get().modelId) return [];
    const resumed: string[] = [];
    for (const d of this.ctx.storage.documents.list()) {
      // failed: cut short with no cache yet (or cancelled by a quit); stale: an earlier cache was being replaced
      if ((d.status !== 'failed' && d.status !== 'stale') || !existsSync(checkpointPath(this.ctx.cacheDir, d.id)))
        continue;
      this.ctx.storage.documents.update(d.id, { status: 'compressing', error: null });
      this.ctx.changed(d.id);
      // The read goes on over the pages it was taking in (recorded when it started; checked then).
      this.startBuild(d.id, d.readPages ?? undefined);
      resumed.push(d.id);
    }
    return resumed;
  }

  /** Compresses the document again (other settings, a range of pages, or a damaged cache): without a range,
   * the whole document, every page however much of it the last read took in. */
  recompress(params: Params<'documents.recompress'>): Result<'documents.recompress'> {
    const doc = this.ctx.storage.documents.require(params.documentId);
    if (params.pages) this.checkRange(doc, params.pages);
    if (params.compression) this.ctx.storage.settings.update({ compression: params.compression });
    return this.startBuild(doc.id, params.pages);
  }

  private startBuild(documentId: string, range: [number, number] | undefined): { taskId: string } {
    return this.ctx.tasks.start('compress', documentId, async (task) => {
      try {
        await this.read(documentId, task, range);
      } catch (e) {
        this.fail(documentId, e, task);
        throw e;
      }
    });
  }

  /**
   * A range must hold pages of the document and fit its context with room for the conversation, measured by
   * the document's last read (room.ts, the rule the UI offers ranges by): a longer one would be read with
   * re-based positions again, and a page that read left out was not measured. Refused before anything
   * starts, so the document stays as it is.
   */
  private checkRange(doc: DocumentRecord, [a, b]: [number, number]): void {
    const pages = this.ctx.storage.documents.pages(doc.id);
    const inRange = pages.filter((p) => p.page >= a && p.page <= b);
    if (inRange.length === 0) throw new ApiError('BAD_REQUEST', `the document has no pages ${a} to ${b}`);
    if (!doc.contextTokens) return; // never measured: the read plan decides
    // What the last read took in, read again (other settings, a failed read): checked when it was chosen,
    // and rebuilt as it was, as a chat's rebuild of a stale cache does.
    if (doc.readPages && doc.readPages[0] === a && doc.readPages[1] === b) return;
    const room = this.ctx.storage.settings.get().conversationRoom;
    const read = { pages, prefixTokens: doc.tokens, contextTokens: doc.contextTokens };
    const last = lastFittingPage(read, a, room);
    if (last !== null && last >= inRange[inRange.length - 1].page) return;
    const count = (n: number) => n.toLocaleString('en-US');
    const first = inRange[0];
    // Pages the last read left out were not measured (room.ts): the message says so rather than 'too long'.
    const taken = doc.readPages;
    const unread = (p: number) => !!taken && (p < taken[0] || p > taken[1]);
    throw new ApiError(
      'PAGES_DO_NOT_FIT',
      (taken && (unread(a) || unread(b))
        ? `pages ${a} to ${b} reach beyond the pages the last read took in (${taken[0]} to ${taken[1]}): ` +
          'what the others take is unknown until the whole document is compressed again'
        : `pages ${a} to ${b} do not fit the context of ${count(doc.contextTokens)} positions with ` +
          `${count(conversationRoom(doc.contextTokens, room))} kept for the conversation`) +
        (last !== null
          ? `: from page ${first.page}, compress up to page ${last}`
          : unread(first.page)
            ? ''
            : `: not even page ${first.page} fits`),
      { pages: [a, b], fit: last === null ? null : [first.page, last] },
    );
  }

  fail(documentId: string, e: unknown, task: Task) {
    if (!this.ctx.storage.documents.get(documentId)) return; // deleted meanwhile
    const cancelled = task.signal.aborted || (e as { code?: string }).code === 'CANCELLED';
    const resumable = existsSync(checkpointPath(this.ctx.cacheDir, documentId))
      ? ': trying again continues the read from where it stopped'
      : '';
    const errorCode = failureCode(e, cancelled);
    const d = this.ctx.storage.documents.update(documentId, {
      status: 'failed',
      error: (cancelled ? 'cancelled' : (e as Error).message) + resumable,
      errorCode,
    });
    // A file whose own fault stopped the import cannot be helped by reading it again: let it go.
    if (!failureRemedy(errorCode, d.pages > 0 ? 'compress' : 'import', true)) this.ctx.held.delete(documentId);
    this.ctx.changed(documentId);
  }

  /**
   * A conversation over the document as its cache holds it: the system prompt and the pages the last read
   * took in, the prefix text the cache was made from (chats and the OpenAI endpoint go on from there).
   */
  prefixConversation(documentId: string, format: ChatFormat, systemPrompt: string, style?: ChatStyle): Conversation {
    const doc = this.ctx.storage.documents.require(documentId);
    const pages = pagesRead(this.ctx.storage.documents.pages(doc.id), doc.readPages);
    return conversationFor(format, systemPrompt, pages, style).conversation;
  }

  /**
   * Tokenizes the system prompt and the document (or a range of its pages), checks that it fits the
   * context, compresses it in a new session, saves the cache and the statistics. The new session becomes
   * the document's pristine session; chats fork it.
   */
  async read(documentId: string, task: Task, range?: [number, number]): Promise<void> {
    const settings = this.ctx.storage.settings.get();
    const model = await chatModel(this.ctx);
    task.progress('prefill', 0, 1, 'reading the document into the model');
    const stored = this.ctx.storage.documents.pages(documentId).map((p) => ({ page: p.page, text: p.text }));
    // recompress checked that the range holds pages and fits
    const pages = range ? pagesRead(stored, range) : stored;
    // A range of every page is the whole document.
    const readPages = range && pages.length < stored.length ? range : null;
    const kvPath = join(this.ctx.cacheDir, `${documentId}.folio-kv`);
    let readNote = '';
    let tokens = 0;
    let chunked = false;
    const read = await readDocument(this.ctx.engine, {
      model,
      pages,
      systemPrompt: settings.systemPrompt,
      compression: settings.compression,
      kv: kvFormat(settings),
      contextCap: settings.nCtx,
      conversationRoom: settings.conversationRoom,
      checkpoint: { path: checkpointPath(this.ctx.cacheDir, documentId), seconds: this.ctx.checkpointSeconds },
      signal: task.signal,
      onPlanned: async ({ tokenized, map }, plan) => {
        tokens = tokenized.tokens.length;
        chunked = !!plan.chunk;
        readNote = plan.note;
        if (plan.rebase) {
          const fit = fittingPages(
            { pages: map.pages, prefixTokens: tokenized.tokens.length, contextTokens: plan.nCtx },
            settings.conversationRoom,
          );
          if (fit) readNote += ` Pages ${fit[0]} to ${fit[1]} fit.`;
        }
        this.ctx.storage.documents.update(documentId, { status: 'compressing', error: null });
        // Recorded before the read, so that a read cut short resumes over the same pages (resumeInterrupted).
        await this.ctx.storage.content.setRead(documentId, {
          pages: map.pages,
          tokens: tokenized.tokens,
          charMap: map.charMap,
          range: readPages,
        });
        this.ctx.changed(documentId);
      },
      // A scorer that re-reads the document (KVzip) counts both reads in its progress.
      onProgress: (d, t) =>
        task.progress(
          'prefill',
          d,
          t,
          `reading ${tokens} tokens into the model${chunked ? ' in chunks' : ''}` +
            (t > tokens ? ', each read twice to rank what to keep' : ''),
        ),
      // Saved at the document's own positions, packed or not: so it can be placed beside others (a chat over a
      // set of documents); a packed document is packed again when it is loaded (session()).
      onCompressed: async ({ sessionId }) => {
        task.progress('save', 0, 1, 'saving the compressed cache');
        await this.ctx.engine.call('save', {
          sessionId,
          path: kvPath,
          meta: JSON.stringify({ documentId, modelId: model.entryId }),
        });
      },
    });
    const compression = settings.compression;
    let kept = false;
    try {
      const { replacedKvPath } = this.ctx.storage.documents.saveCache(documentId, {
        kvPath,
        modelId: model.entryId,
        prefixKey: prefixKey(settings),
        compression,
        kvBytesFull: read.stats.kvBytesFull,
        kvBytesKept: read.stats.kvBytesKept,
        contextTokens: read.plan.nCtx,
        readNote,
        stats: read.stats,
        // Re-based because it had to be (longer than the context), or packed by choice.
        placement: !read.stats.rebased ? 'own' : read.plan.rebase ? 'rebased' : 'packed',
        status: 'ready',
      });
      if (replacedKvPath && replacedKvPath !== kvPath) rmSync(replacedKvPath, { force: true });
      task.progress('save', 1, 1, 'ready');
      // The new cache replaces the document's session; chats made from the old one are rebuilt on next use.
      await this.ctx.engine.dropDocumentSessions(documentId);
      this.ctx.engine.setSession(SessionKey.document(documentId), read.sessionId);
      kept = true;
      this.ctx.changed(documentId);
    } finally {
      if (!kept) await this.ctx.engine.disposeSession(read.sessionId);
    }
  }

  /**
   * The document's pristine compressed session, ready to fork: in the engine already, or loaded from the
   * saved cache (no prefill), or rebuilt when there is no usable cache for the current model.
   */
  async session(documentId: string): Promise<string> {
    const pending = this.building.get(documentId);
    if (pending) return pending;
    const p = this.openSession(documentId).finally(() => this.building.delete(documentId));
    this.building.set(documentId, p);
    return p;
  }

  /** The settings' model, loaded if it is not (a rebuilt chat after a restart starts here). */
  model(): Promise<LoadedModel> {
    return chatModel(this.ctx);
  }

  /**
   * The document with a saved cache for the current model and settings, at its own positions (what a set
   * assembles): read first where there is none, as session() does.
   */
  async savedCache(documentId: string): Promise<DocumentRecord & { kvPath: string }> {
    const model = await chatModel(this.ctx);
    const usable = (d: DocumentRecord): d is DocumentRecord & { kvPath: string } =>
      !!d.kvPath && existsSync(d.kvPath) && cacheMatches(this.ctx.storage.settings.get(), d, model.entryId);
    const doc = this.ctx.storage.documents.require(documentId);
    if (usable(doc)) return doc;
    await this.session(documentId);
    const read = this.ctx.storage.documents.require(documentId);
    if (!usable(read))
      throw new ApiError('DOCUMENT_NOT_READY', read.error ?? `“${read.title}” could not be compressed`);
    return read;
  }

  /**
   * A session over a set of documents: their saved caches side by side (chat-set.ts), each read first where it
   * has none, in a context as large as the largest of their reads, packed as the settings' positions say.
   */
  async assemble(documentIds: readonly string[], o: SetOptions, again = true): Promise<AssembledSet> {
    try {
      return await this.assembleOnce(documentIds, o);
    } catch (e) {
      // A packed document's cache saved packed (by a version before caches were saved at their own positions)
      // cannot be placed: it is read again, once, as any stale cache is, and the set assembled again.
      const at = (e as { code?: string; details?: { document?: number } }).details?.document;
      const doc = at ? this.ctx.storage.documents.get(documentIds[at - 1]) : null;
      if (!again || (e as { code?: string }).code !== 'DOCUMENT_NOT_ASSEMBLABLE' || doc?.kept?.placement !== 'packed')
        throw e;
      await this.ctx.tasks.run('compress', doc.id, (task) => this.read(doc.id, task, doc.readPages ?? undefined));
      return this.assemble(documentIds, o, false);
    }
  }

  private async assembleOnce(documentIds: readonly string[], o: SetOptions): Promise<AssembledSet> {
    const documents: SetDocument[] = [];
    for (const id of documentIds) {
      const doc = await this.savedCache(id);
      documents.push({
        id,
        title: doc.title,
        kvPath: doc.kvPath,
        pages: pagesRead(this.ctx.storage.documents.pages(id), doc.readPages),
        charMap: this.ctx.storage.documents.charMap(id),
      });
    }
    const settings = this.ctx.storage.settings.get();
    const nCtx = Math.max(
      ...documentIds.map(
        (id) => this.ctx.storage.documents.require(id).contextTokens ?? this.ctx.engine.sessionOptions().nCtx,
      ),
    );
    return assembleSet(this.ctx.engine, {
      ...o,
      model: await chatModel(this.ctx),
      documents,
      nCtx,
      room: conversationRoom(nCtx, settings.conversationRoom),
      positions: settings.compression.positions ?? 'auto',
    });
  }

  /**
   * A set read together as one document (later documents attend to earlier ones), for the chat `chatId`: read as
   * any document is (read-document.ts, its text the assembled set's), saved for the chat at its own positions
   * (setCachePath) and loaded next time while the documents, the model and the settings are the same; else read
   * again (a task of its own).
   */
  async readTogether(
    chatId: string,
    documentIds: readonly string[],
    o: Omit<SetOptions, 'budget'>,
  ): Promise<AssembledSet> {
    const model = await chatModel(this.ctx);
    const settings = this.ctx.storage.settings.get();
    const docs = documentIds.map((id) => this.ctx.storage.documents.require(id));
    const { pages, owner } = setPages(
      docs.map((d) => ({
        id: d.id,
        title: d.title,
        pages: pagesRead(this.ctx.storage.documents.pages(d.id), d.readPages),
      })),
    );
    const { compression, nCtx, conversationRoom: room } = settings;
    const kv = kvFormat(settings);
    const key = createHash('sha256')
      .update(JSON.stringify({ model: model.entryId, compression, kv, nCtx, room, system: o.systemPrompt, pages }))
      .digest('hex');
    const path = setCachePath(this.ctx.cacheDir, chatId);
    const documents: SetDocument[] = docs.map((d) => ({
      id: d.id,
      title: d.title,
      kvPath: path,
      pages: [],
      charMap: null,
    }));
    const conversation = conversationFor(o.format, o.systemPrompt, pages, o.style).conversation;
    const made = (
      read: { sessionId: string; nPast: number; nCtx: number; packed: boolean },
      prefix: DocumentPrefix,
      bytes: SavedSetMeta['bytes'],
    ): AssembledSet => {
      const first = prefix.map.pages[0];
      const last = prefix.map.pages[prefix.map.pages.length - 1];
      const around = prefix.tokenized.tokens.length - (last.tokenEnd - first.tokenStart);
      return {
        ...read,
        documents,
        conversation,
        parts: [],
        documentTokens: Math.max(0, read.nPast - around),
        together: { pages: prefix.map.pages, charMap: prefix.map.charMap, owner, ...bytes },
      };
    };
    // Saved for this chat, of this set and these settings: loaded (packed again where it was), not read again.
    if (existsSync(path)) {
      const saved = await this.loadTogether(model, path, key);
      if (saved) {
        const prefix = await documentPrefix(
          (text, t) => this.ctx.engine.call('tokenize', { modelId: model.engineId, text, ...t }, { signal: o.signal }),
          o.format,
          o.systemPrompt,
          pages,
        );
        return made(saved.session, prefix, saved.bytes);
      }
    }
    // A task of no one document (each stays as it is), shown with the running tasks.
    return this.ctx.tasks.run('prefill', null, async (task) => {
      let plan: ReadPlan | null = null;
      let bytes = { kvBytesKept: 0, kvBytesFull: 0 };
      const read = await readDocument(this.ctx.engine, {
        model,
        pages,
        systemPrompt: o.systemPrompt,
        compression,
        kv,
        contextCap: nCtx,
        conversationRoom: room,
        signal: task.signal,
        onProgress: (d, t) => task.progress('prefill', d, t, `reading the ${docs.length} documents together`),
        onPlanned: (_prefix, p) => {
          plan = p;
        },
        // Saved at its own positions before a packed read packs them, as a document's cache is; packed on load.
        onCompressed: async ({ sessionId, stats }) => {
          bytes = { kvBytesKept: stats.kvBytesKept, kvBytesFull: stats.kvBytesFull };
          const meta: SavedSetMeta = { key, nCtx: plan!.nCtx, pack: plan!.pack && !stats.rebased, bytes };
          await this.ctx.engine.call('save', { sessionId, path, meta: '' });
          writeFileSync(setMetaPath(path), JSON.stringify(meta));
        },
      });
      const { sessionId, nPast } = read;
      return made({ sessionId, nPast, nCtx: read.nCtx, packed: read.stats.rebased }, read.prefix, bytes);
    });
  }

  /** A set's saved read (readTogether) when it is of `key`: loaded, packed again where it was; else null. */
  private async loadTogether(model: LoadedModel, path: string, key: string) {
    let meta: SavedSetMeta;
    try {
      meta = JSON.parse(readFileSync(setMetaPath(path), 'utf8')) as SavedSetMeta;
    } catch {
      return null; // none, or damaged: read again
    }
    if (meta.key !== key) return null;
    try {
      const h = await this.ctx.engine.loadSession(model, path, {
        ...this.ctx.engine.sessionOptions(),
        nCtx: meta.nCtx,
      });
      const nPast = meta.pack
        ? (await this.ctx.engine.call('packSpan', { sessionId: h.sessionId, from: 0, to: h.nPast })).nPast
        : h.nPast;
      return { session: { sessionId: h.sessionId, nPast, nCtx: h.nCtx, packed: meta.pack }, bytes: meta.bytes };
    } catch (e) {
      if (((e as { code?: string }).code ?? '').startsWith('SESSION_FILE')) return null; // damaged: read again
      throw e;
    }
  }

  /** Removes the saved reads of sets whose chats are gone (`chatIds`: those that remain), or of one chat. */
  forgetTogether(chatIds: ReadonlySet<string> | string): void {
    const keep = typeof chatIds === 'string' ? null : chatIds;
    for (const f of readdirSync(this.ctx.cacheDir)) {
      const m = /^set-(.+)\.folio-kv(\.json)?$/.exec(f);
      if (m && (keep ? !keep.has(m[1]) : m[1] === chatIds)) rmSync(join(this.ctx.cacheDir, f), { force: true });
    }
  }

  private async openSession(documentId: string): Promise<string> {
    const model = await chatModel(this.ctx);
    const doc = this.ctx.storage.documents.require(documentId);
    const existing = this.ctx.engine.session(SessionKey.document(documentId));
    if (existing && cacheMatches(this.ctx.storage.settings.get(), doc, model.entryId)) return existing;
    if (existing) {
      // Made with other settings or another system prompt: new chats get a rebuilt document.
      await this.ctx.engine.dropSession(SessionKey.document(documentId));
    }
    const usable =
      doc.kvPath && existsSync(doc.kvPath) && cacheMatches(this.ctx.storage.settings.get(), doc, model.entryId);
    if (usable) {
      try {
        const h = await this.ctx.engine.loadSession(model, doc.kvPath!, documentSessionOptions(this.ctx.engine, doc));
        // Saved at its own positions: a packed document is packed again as it was read (readDocument).
        if (doc.kept?.placement === 'packed')
          await this.ctx.engine.call('packSpan', { sessionId: h.sessionId, from: 0, to: h.nPast });
        this.ctx.engine.setSession(SessionKey.document(documentId), h.sessionId);
        return h.sessionId;
      } catch (e) {
        const code = (e as { code?: string }).code ?? '';
        if (!code.startsWith('SESSION_FILE')) throw e;
        // A damaged cache, or one of another model file: rebuild it (the message says why).
        this.ctx.storage.documents.update(documentId, {
          status: 'stale',
          error: `the saved cache was refused (${(e as Error).message}); it is being rebuilt`,
        });
        this.ctx.changed(documentId);
      }
    }
    // The build's own error (a document that no longer fits, say) is the answer's. The pages the cache held
    // are read again, a range or the whole document.
    await this.ctx.tasks.run('compress', documentId, (task) => this.read(documentId, task, doc.readPages ?? undefined));
    const id = this.ctx.engine.session(SessionKey.document(documentId));
    if (!id)
      throw new ApiError(
        'DOCUMENT_NOT_READY',
        this.ctx.storage.documents.get(documentId)?.error ?? 'the document could not be compressed',
      );
    return id;
  }
}
