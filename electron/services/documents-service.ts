// Documents: import a file, compress it into a document session (prefill + Ada-KV, cancellable, with
// progress), save the compressed cache so reopening needs no prefill, rebuild it when the model or the
// compression settings change or the file is damaged; the document view with the retention map.
import { createHash } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';

import {
  ApiError,
  compareCounterpart,
  type CompressionMethod,
  type CompressionSettings,
  type CompressionStats,
  DOCUMENT_FILE_TYPES,
  type DocumentDetail,
  type DocumentFilePart,
  type DocumentPage,
  type DocumentSummary,
  type Params,
  type Result,
} from '../api/contract.ts';
import type { EventBus } from '../api/dispatcher.ts';
import {
  MAX_DOCUMENT_BYTES,
  importDocument,
  detectKind,
  readDocumentFile,
  passages as splitPassages,
} from '../documents/index.ts';
import { baseName } from '../documents/detect.ts';
import { failureRemedy } from '../documents/errors.ts';
import { copyOwned, tooLarge } from '../documents/read-file.ts';
import { DEFAULT_BETA } from '../shared/kv/budget.ts';
import { methodLabel, methodRow } from '../shared/kv/methods.ts';
import { toSummary, type DocumentRecord, type Storage } from '../storage/index.ts';
import { privateDir } from '../storage/private-files.ts';
import { sha256Hex, type DocumentFiles } from './document-files.ts';
import type { EngineManager, LoadedModel } from './engine-manager.ts';
import type { Conversation } from './chat-format.ts';
import { readKeptPositions } from '../engine/session-file.ts';
import { foldKeptPositions } from './kept-positions.ts';
import { conversationFor, type ChatFormat } from './prefix.ts';
import { readDocument } from './read-document.ts';
import { conversationRoom, fittingPages, lastFittingPage, pagesRead } from '../shared/room.ts';
import { SessionKey } from './session-key.ts';
import type { ModelsService } from './models-service.ts';
import type { Task, Tasks } from './tasks.ts';

/** Files of failed imports held in memory so that trying again (or a password) can read them: at most this many. */
const MAX_HELD_FILES = 4;

/** The code a failure is stored with: what failureRemedy (documents/errors.ts) judges by. */
function failureCode(e: unknown, cancelled: boolean): string | null {
  const code = (e as { code?: unknown }).code;
  if (cancelled || code === 'ABORTED') return 'CANCELLED';
  return typeof code === 'string' ? code : null;
}

/** A document's stored file, for the routes that serve it (web host, app protocol). */
export interface DocumentFile {
  path: string;
  /** The media type it is served with. */
  type: string;
}

export class DocumentsService {
  private building = new Map<string, Promise<string>>();
  /**
   * The files of imports that failed while reading them, by document, for as long as trying again can
   * help (a cancel, a password): in memory only, never written anywhere, the oldest let go past
   * MAX_HELD_FILES. A password is never held.
   */
  private held = new Map<string, { fileName: string; bytes: Uint8Array }>();

  constructor(
    private readonly storage: Storage,
    private readonly engine: EngineManager,
    private readonly models: ModelsService,
    private readonly tasks: Tasks,
    private readonly bus: EventBus,
    private readonly cacheDir: string,
    /** How often a chunked read saves where it stands (seconds). */
    private readonly checkpointSeconds = 30,
    /** The imported originals, which the document view shows. */
    private readonly files?: DocumentFiles,
  ) {
    privateDir(cacheDir);
    files?.sweep(storage.documents.sha256s());
  }

  /** Where a document's read saves where it stands, so that a crash or a quit does not lose it. */
  private checkpointPath(documentId: string): string {
    return join(this.cacheDir, `${documentId}.reading`);
  }

  /**
   * Reads cut short by a quit or a crash of the app go on from their last checkpoint (once at startup; the
   * engine starts over instead when the settings have changed since).
   */
  resumeInterrupted(): string[] {
    if (!this.storage.settings.get().modelId) return [];
    const resumed: string[] = [];
    for (const d of this.storage.documents.list()) {
      // failed: cut short with no cache yet (or cancelled by a quit); stale: an earlier cache was being replaced
      if ((d.status !== 'failed' && d.status !== 'stale') || !existsSync(this.checkpointPath(d.id))) continue;
      this.storage.documents.update(d.id, { status: 'compressing', error: null });
      this.changed(d.id);
      // The read goes on over the pages it was taking in (recorded when it started; checked then).
      this.startBuild(d.id, d.readPages ?? undefined);
      resumed.push(d.id);
    }
    return resumed;
  }

  list(): DocumentSummary[] {
    return this.storage.documents.list().map((d) => this.summary(this.storage.documents.require(d.id)));
  }

  /** What the UI sees of a document: stale when its cache no longer matches, and what can help a failure. */
  private summary(d: DocumentRecord): DocumentSummary {
    return toSummary(this.withStaleness(d), this.held.has(d.id));
  }

  /** Renames a document (the title the library shows; the file name stays). */
  rename(params: Params<'documents.rename'>): DocumentSummary {
    this.storage.documents.require(params.documentId);
    this.storage.documents.update(params.documentId, { title: params.title.replace(/\s+/g, ' ').trim() });
    this.changed(params.documentId);
    return this.summary(this.storage.documents.require(params.documentId));
  }

  /** A document whose cache was made with another model, other settings or another system prompt shows as stale. */
  private withStaleness(d: DocumentRecord): DocumentRecord {
    if (d.status !== 'ready') return d;
    return this.cacheMatches(d, this.storage.settings.get().modelId) ? d : { ...d, status: 'stale' };
  }

  /** The saved cache was made with this model and the current compression settings and system prompt. */
  private cacheMatches(d: DocumentRecord, modelId: string | null): boolean {
    const s = this.storage.settings.get();
    return (
      d.modelId === modelId &&
      sameCompression(d.compression, s.compression) &&
      (d.prefixKey === null || d.prefixKey === prefixKey(s.systemPrompt))
    );
  }

  get(documentId: string): DocumentDetail {
    const doc = this.storage.documents.require(documentId);
    const pages = this.storage.documents.pages(documentId);
    const stats = this.storage.stats.get(documentId);
    return {
      ...this.summary(doc),
      pageList: pages,
      stats,
      ...this.retentionMap(documentId, pagesRead(pages, doc.readPages), stats),
      hasFile: this.files?.path(doc.sha256) != null,
      hasHtml: this.files?.htmlPath(doc.sha256) != null,
    };
  }

  /**
   * The positions one KV head kept, read from the saved cache (not the engine's copy in memory, so nothing is
   * loaded), folded onto the pages read. Refused when there is no saved cache, when the read re-based the
   * positions (the cache no longer says which token an entry came from), or when the file does not match
   * the document's read.
   */
  async keptPositions(params: Params<'documents.keptPositions'>): Promise<Result<'documents.keptPositions'>> {
    const doc = this.storage.documents.require(params.documentId);
    const stats = this.storage.stats.get(doc.id);
    const charMap = this.storage.documents.charMap(doc.id);
    const tokens = this.storage.documents.tokens(doc.id);
    if (!doc.kvPath || !existsSync(doc.kvPath) || !stats || !charMap || !tokens)
      throw new ApiError('DOCUMENT_NOT_READY', 'the document has no saved cache yet: compress it first');
    const { layer, head } = params;
    if (layer >= stats.layers.length || head >= (stats.layers[layer]?.heads.length ?? 0))
      throw new ApiError(
        'BAD_REQUEST',
        `the cache has ${stats.layers.length} layers of ${stats.layers[0]?.heads.length ?? 0} KV heads: there is no layer ${layer}, head ${head}`,
      );
    if (stats.rebased)
      throw new ApiError(
        'NOT_AVAILABLE',
        'this document was read with re-based positions, so its cache no longer says which token each entry came from: compress a range of pages that fits the context to see them',
      );
    const { header, positions } = await readKeptPositions(doc.kvPath, layer, head);
    if (header.tokens !== tokens.length || header.layers !== stats.layers.length)
      throw new ApiError(
        'SESSION_FILE_CORRUPT',
        'the saved cache does not match the document as it was read: compress it again to rebuild it',
      );
    return foldKeptPositions({
      layer,
      head,
      positions,
      charMap,
      pages: pagesRead(this.storage.documents.pages(doc.id), doc.readPages),
      prefixTokens: stats.prefixTokens,
      window: stats.compressed ? stats.window : 0,
    });
  }

  /**
   * The retention map folded onto sentences of each page read. The observation window (the read's last
   * `window` tokens, kept by every head whatever the scores) is left out of the passages' means and
   * reported apart: otherwise the ending reads as the part the model found most important.
   */
  private retentionMap(
    documentId: string,
    pages: DocumentPage[],
    stats: CompressionStats | null,
  ): Pick<DocumentDetail, 'passages' | 'keptWindow'> {
    const map = this.storage.documents.charMap(documentId);
    if (!stats || !map) return { passages: [], keptWindow: null };
    const slots = stats.layers.length * (stats.layers[0]?.heads.length ?? 1);
    const retention = stats.tokenRetention;
    const windowStart = stats.compressed ? Math.max(0, retention.length - stats.window) : retention.length;
    let keptWindow: DocumentDetail['keptWindow'] = null;
    for (let t = windowStart; t < retention.length && t * 3 < map.length && !keptWindow; t++)
      if (map[t * 3] > 0)
        keptWindow = { page: map[t * 3], start: map[t * 3 + 1], tokens: retention.length - windowStart };
    const passages: DocumentDetail['passages'] = [];
    for (const p of pages) {
      const ps = splitPassages(p.text, 'sentences');
      const sum = new Float64Array(ps.length),
        count = new Int32Array(ps.length);
      let k = 0;
      for (let t = p.tokenStart; t < p.tokenEnd && t < windowStart; t++) {
        if (map[t * 3] !== p.page) continue;
        const c = map[t * 3 + 1];
        while (k + 1 < ps.length && c >= ps[k].end) k++;
        sum[k] += retention[t] / slots;
        count[k]++;
      }
      ps.forEach((x, i) => {
        if (count[i] === 0) return;
        // A sentence the window begins in ends, for the map, where the window begins.
        const end =
          keptWindow?.page === p.page && keptWindow.start < x.end ? Math.max(x.start, keptWindow.start) : x.end;
        if (end > x.start)
          passages.push({ page: p.page, start: x.start, end, retention: Math.min(1, sum[i] / count[i]) });
      });
    }
    return { passages, keptWindow };
  }

  /**
   * Imports a file and compresses it; returns, once the file is read and its kind known, with the task that
   * does the work. A path must be a regular file of at most MAX_DOCUMENT_BYTES; bytes come base64-encoded.
   */
  async import(params: Params<'documents.import'>): Promise<Result<'documents.import'>> {
    this.requireModel();
    if ('documentId' in params) return this.importAgain(params.documentId, params.password);
    const how = { password: params.password, keepDuplicate: params.keepDuplicate };
    if ('path' in params) {
      const hash = createHash('sha256');
      const bytes = await readDocumentFile(params.path, { hash });
      return this.start(baseName(params.path), bytes, hash.digest('hex'), how);
    }
    const fileName = baseName(params.fileName);
    // Refused before decoding: base64 takes 4 characters for 3 bytes.
    const size = Math.floor((params.dataBase64.length * 3) / 4);
    if (size > MAX_DOCUMENT_BYTES + 2) throw tooLarge(fileName, size, MAX_DOCUMENT_BYTES);
    // At most a JSON body's worth (MAX_INLINE_BASE64_CHARS): hashed at once in a few milliseconds.
    const bytes = ownedBytes(Buffer.from(params.dataBase64, 'base64'));
    return this.start(fileName, bytes, sha256Hex(bytes), how);
  }

  /** Reads again the held file of a failed import (trying again, or with the PDF's password). */
  private importAgain(documentId: string, password: string | undefined): Result<'documents.import'> {
    const doc = this.storage.documents.require(documentId);
    const file = this.held.get(documentId);
    if (doc.status !== 'failed' || !file)
      throw new ApiError(
        'FILE_NOT_HELD',
        doc.status === 'failed'
          ? `Folio no longer holds ${doc.fileName}: import the file again`
          : `${doc.fileName} did not fail to import: there is nothing to read again`,
      );
    return { documentId, taskId: this.startImport(documentId, file.fileName, file.bytes, password) };
  }

  /**
   * Imports an upload that the web host streamed to `tempPath`. The file becomes this service's: hashed as it
   * is read, then kept as the document's original (moved, not written again) or removed, whether the import
   * then goes on, fails or is cancelled (its bytes are in memory).
   */
  async importUpload(params: {
    fileName: string;
    tempPath: string;
    keepDuplicate?: boolean;
  }): Promise<Result<'documents.import'>> {
    try {
      this.requireModel();
      const hash = createHash('sha256');
      const bytes = await readDocumentFile(params.tempPath, { hash });
      return await this.start(baseName(params.fileName), bytes, hash.digest('hex'), {
        keepDuplicate: params.keepDuplicate,
        original: params.tempPath,
      });
    } finally {
      await rm(params.tempPath, { force: true }).catch(() => {});
    }
  }

  private requireModel(): void {
    if (!this.storage.settings.get().modelId)
      throw new ApiError('NO_MODEL', 'choose a model first: documents are compressed for the model they are read with');
  }

  /**
   * Checks the kind (a bad file fails here, before any record) and whether the library has the file
   * already (by its content), then parses and compresses in a task. A file already there is refused with
   * DUPLICATE unless kept; one whose import failed before is read again into that document.
   */
  private async start(
    fileName: string,
    bytes: Uint8Array,
    sha256: string,
    o: { password?: string; keepDuplicate?: boolean; original?: string } = {},
  ): Promise<Result<'documents.import'>> {
    const kind = detectKind(bytes, fileName);
    const same = this.storage.documents.findBySha256(sha256);
    const failed = same.find((d) => d.status === 'failed');
    const present = same.find((d) => d.status !== 'failed');
    if (present && !o.keepDuplicate)
      throw new ApiError(
        'DUPLICATE',
        `${fileName} is already in the library as “${present.title}”: open that one, or import it again to keep both`,
        { documentId: present.id, title: present.title },
      );
    // The original is kept by its content before the parser takes the bytes (document-files.ts): an upload's
    // file is moved into place; other bytes are written, off the event loop.
    if (this.files && o.original) await this.files.adopt(o.original, sha256);
    else await this.files?.put(bytes, sha256);
    const doc =
      failed ?? this.storage.documents.create({ title: fileName, kind, fileName, sha256, status: 'importing' });
    return { documentId: doc.id, taskId: this.startImport(doc.id, fileName, bytes, o.password) };
  }

  /** The import task: parse (the file held meanwhile, for trying again), store the pages, compress. */
  private startImport(documentId: string, fileName: string, bytes: Uint8Array, password?: string): string {
    this.hold(documentId, fileName, bytes);
    const { sha256 } = this.storage.documents.require(documentId);
    this.storage.documents.update(documentId, { status: 'importing', error: null });
    this.changed(documentId);
    const { taskId } = this.tasks.start('import', documentId, async (task) => {
      try {
        const imported = await importDocument(
          // A copy goes to the parser thread: the file stays held until it is read.
          { fileName, bytes: await copyOwned(bytes) },
          {
            signal: task.signal,
            transferBytes: true,
            password,
            onProgress: (d, t) => task.progress('import', d, t, `reading ${fileName}`),
          },
        );
        this.held.delete(documentId);
        this.storage.documents.update(documentId, { title: imported.title || fileName });
        if (sha256 && imported.html !== undefined) this.files?.putHtml(sha256, imported.html);
        await this.storage.content.setContent(documentId, {
          pages: imported.pages.map((p) => ({ ...p, tokenStart: 0, tokenEnd: 0 })),
          tokens: [],
        });
        await this.build(documentId, task, undefined);
      } catch (e) {
        this.fail(documentId, e, task);
        throw e;
      }
    });
    return taskId;
  }

  /** Holds a file being imported; past MAX_HELD_FILES the oldest is let go (its document says so). */
  private hold(documentId: string, fileName: string, bytes: Uint8Array): void {
    this.held.delete(documentId);
    this.held.set(documentId, { fileName, bytes });
    for (const id of this.held.keys()) {
      if (this.held.size <= MAX_HELD_FILES) break;
      this.held.delete(id);
      this.changed(id);
    }
  }

  /** Compresses the document again (other settings, a range of pages, or a damaged cache): without a range,
   * the whole document, every page however much of it the last read took in. */
  recompress(params: Params<'documents.recompress'>): Result<'documents.recompress'> {
    const doc = this.storage.documents.require(params.documentId);
    if (params.pages) this.checkRange(doc, params.pages);
    if (params.compression) this.storage.settings.update({ compression: params.compression });
    return this.startBuild(doc.id, params.pages);
  }

  private startBuild(documentId: string, range: [number, number] | undefined): { taskId: string } {
    return this.tasks.start('compress', documentId, async (task) => {
      try {
        await this.build(documentId, task, range);
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
    const pages = this.storage.documents.pages(doc.id);
    const inRange = pages.filter((p) => p.page >= a && p.page <= b);
    if (inRange.length === 0) throw new ApiError('BAD_REQUEST', `the document has no pages ${a} to ${b}`);
    if (!doc.contextTokens) return; // never measured: the read plan decides
    // What the last read took in, read again (other settings, a failed read): checked when it was chosen,
    // and rebuilt as it was, as a chat's rebuild of a stale cache does.
    if (doc.readPages && doc.readPages[0] === a && doc.readPages[1] === b) return;
    const room = this.storage.settings.get().conversationRoom;
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

  private fail(documentId: string, e: unknown, task: Task) {
    if (!this.storage.documents.get(documentId)) return; // deleted meanwhile
    const cancelled = task.signal.aborted || (e as { code?: string }).code === 'CANCELLED';
    const resumable = existsSync(this.checkpointPath(documentId))
      ? ': trying again continues the read from where it stopped'
      : '';
    const errorCode = failureCode(e, cancelled);
    const d = this.storage.documents.update(documentId, {
      status: 'failed',
      error: (cancelled ? 'cancelled' : (e as Error).message) + resumable,
      errorCode,
    });
    // A file whose own fault stopped the import cannot be helped by reading it again: let it go.
    if (!failureRemedy(errorCode, d.pages > 0 ? 'compress' : 'import', true)) this.held.delete(documentId);
    this.changed(documentId);
  }

  /**
   * A conversation over the document as its cache holds it: the system prompt and the pages the last read
   * took in, the prefix text the cache was made from (chats and the OpenAI endpoint go on from there).
   */
  prefixConversation(documentId: string, format: ChatFormat, systemPrompt: string): Conversation {
    const doc = this.storage.documents.require(documentId);
    return conversationFor(format, systemPrompt, pagesRead(this.storage.documents.pages(doc.id), doc.readPages))
      .conversation;
  }

  /** The model the documents are compressed for, loaded. */
  private async model(): Promise<LoadedModel> {
    const s = this.storage.settings.get();
    if (!s.modelId) throw new ApiError('NO_MODEL', 'choose a model first');
    const entry = await this.models.get(s.modelId);
    return this.engine.ensureModel(entry.id, entry.path);
  }

  /**
   * Tokenizes the system prompt and the document (or a range of its pages), checks that it fits the
   * context, compresses it in a new session, saves the cache and the statistics. The new session becomes
   * the document's pristine session; chats fork it.
   */
  private async build(documentId: string, task: Task, range?: [number, number]): Promise<void> {
    const settings = this.storage.settings.get();
    const model = await this.model();
    task.progress('prefill', 0, 1, 'reading the document into the model');
    const stored = this.storage.documents.pages(documentId).map((p) => ({ page: p.page, text: p.text }));
    // recompress checked that the range holds pages and fits
    const pages = range ? pagesRead(stored, range) : stored;
    // A range of every page is the whole document.
    const readPages = range && pages.length < stored.length ? range : null;
    let readNote = '';
    let tokens = 0;
    let chunked = false;
    const read = await readDocument(this.engine, {
      model,
      pages,
      systemPrompt: settings.systemPrompt,
      compression: settings.compression,
      kvType: settings.kvType,
      contextCap: settings.nCtx,
      conversationRoom: settings.conversationRoom,
      checkpoint: { path: this.checkpointPath(documentId), seconds: this.checkpointSeconds },
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
        this.storage.documents.update(documentId, { status: 'compressing', error: null });
        // Recorded before the read, so that a read cut short resumes over the same pages (resumeInterrupted).
        await this.storage.content.setRead(documentId, {
          pages: map.pages,
          tokens: tokenized.tokens,
          charMap: map.charMap,
          range: readPages,
        });
        this.changed(documentId);
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
    });
    const compression = settings.compression;
    let kept = false;
    try {
      task.progress('save', 0, 1, 'saving the compressed cache');
      const kvPath = join(this.cacheDir, `${documentId}.folio-kv`);
      await this.engine.call('save', {
        sessionId: read.sessionId,
        path: kvPath,
        meta: JSON.stringify({ documentId, modelId: model.entryId }),
      });
      const { replacedKvPath } = this.storage.documents.saveCache(documentId, {
        kvPath,
        modelId: model.entryId,
        prefixKey: prefixKey(settings.systemPrompt),
        compression,
        kvBytesFull: read.stats.kvBytesFull,
        kvBytesKept: read.stats.kvBytesKept,
        contextTokens: read.plan.nCtx,
        readNote,
        stats: read.stats,
        status: 'ready',
      });
      if (replacedKvPath && replacedKvPath !== kvPath) rmSync(replacedKvPath, { force: true });
      task.progress('save', 1, 1, 'ready');
      // The new cache replaces the document's session; chats made from the old one are rebuilt on next use.
      await this.engine.dropDocumentSessions(documentId);
      this.engine.setSession(SessionKey.document(documentId), read.sessionId);
      kept = true;
      this.changed(documentId);
    } finally {
      if (!kept) await this.engine.disposeSession(read.sessionId);
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

  private async openSession(documentId: string): Promise<string> {
    const model = await this.model();
    const doc = this.storage.documents.require(documentId);
    const existing = this.engine.session(SessionKey.document(documentId));
    if (existing && this.cacheMatches(doc, model.entryId)) return existing;
    if (existing) {
      // Made with other settings or another system prompt: new chats get a rebuilt document.
      await this.engine.dropSession(SessionKey.document(documentId));
    }
    const usable = doc.kvPath && existsSync(doc.kvPath) && this.cacheMatches(doc, model.entryId);
    if (usable) {
      try {
        const h = await this.engine.loadSession(model, doc.kvPath!, this.documentSessionOptions(doc));
        this.engine.setSession(SessionKey.document(documentId), h.sessionId);
        return h.sessionId;
      } catch (e) {
        const code = (e as { code?: string }).code ?? '';
        if (!code.startsWith('SESSION_FILE')) throw e;
        // A damaged cache, or one of another model file: rebuild it (the message says why).
        this.storage.documents.update(documentId, {
          status: 'stale',
          error: `the saved cache was refused (${(e as Error).message}); it is being rebuilt`,
        });
        this.changed(documentId);
      }
    }
    // The build's own error (a document that no longer fits, say) is the answer's. The pages the cache held
    // are read again, a range or the whole document.
    await this.tasks.run('compress', documentId, (task) => this.build(documentId, task, doc.readPages ?? undefined));
    const id = this.engine.session(SessionKey.document(documentId));
    if (!id)
      throw new ApiError(
        'DOCUMENT_NOT_READY',
        this.storage.documents.get(documentId)?.error ?? 'the document could not be compressed',
      );
    return id;
  }

  /** A document's sessions get the context it was read into. */
  private documentSessionOptions(doc: DocumentRecord) {
    const opts = this.engine.sessionOptions();
    return doc.contextTokens ? { ...opts, nCtx: doc.contextTokens } : opts;
  }

  /** Two methods at the same budget, on fresh sessions (nothing is saved): by default the document's method
   * and its counterpart. */
  async compare(params: Params<'documents.compare'>): Promise<Result<'documents.compare'>> {
    const doc = this.storage.documents.require(params.documentId);
    const tokens = this.storage.documents.tokens(doc.id);
    if (!tokens || tokens.length === 0) throw new ApiError('DOCUMENT_NOT_READY', 'the document has not been read yet');
    const model = await this.model();
    const c = this.storage.settings.get().compression;
    const budget = params.budget ?? c.budget;
    const a = params.a ?? doc.compression?.method ?? c.method;
    const b = params.b ?? compareCounterpart(a);
    // Read as the document was: into its context, in one pass or in chunks, re-based or not.
    const read = this.storage.stats.get(doc.id);
    const how = read ? { chunk: read.chunks > 1 ? ('auto' as const) : 0, rebase: read.rebased } : {};
    const run = async (method: CompressionMethod, task: Task) => {
      const h = await this.engine.createSession(model, this.documentSessionOptions(doc));
      try {
        const r = await this.engine.call(
          'compress',
          {
            sessionId: h.sessionId,
            tokens,
            options: { method, budget, alpha: c.alpha, window: c.window, kernel: c.kernel, ...how },
          },
          {
            signal: task.signal,
            onProgress: (d, t) => task.progress('compare', d, t, `${methodLabel(method)} at ${budget}`),
          },
        );
        return { ...r.stats, tokenRetention: Array.from(r.stats.tokenRetention) };
      } finally {
        await this.engine.disposeSession(h.sessionId);
      }
    };
    return this.tasks.run('compare', doc.id, async (task) => ({
      budget,
      a: await run(a, task),
      b: await run(b, task),
    }));
  }

  async delete(documentId: string): Promise<void> {
    this.storage.documents.require(documentId);
    this.tasks.cancelDocument(documentId);
    await this.engine.dropDocumentSessions(documentId);
    this.held.delete(documentId);
    const { sha256 } = this.storage.documents.require(documentId);
    const { files } = this.storage.documents.delete(documentId);
    for (const f of [...files, this.checkpointPath(documentId)]) rmSync(f, { force: true });
    // The original goes with the last document made from it.
    if (sha256 && this.storage.documents.findBySha256(sha256).length === 0) this.files?.remove(sha256);
    this.bus.emit('documents.deleted', { documentId });
  }

  /**
   * A document's stored original, or its HTML (a Word document's, as mammoth wrote it; served as text: the
   * renderer sanitises it); null when there is none (unknown id, imported before originals were kept).
   */
  file(documentId: string, part: DocumentFilePart = 'file'): DocumentFile | null {
    const doc = this.storage.documents.get(documentId);
    if (!doc || !this.files) return null;
    const path = part === 'html' ? this.files.htmlPath(doc.sha256) : this.files.path(doc.sha256);
    return path ? { path, type: part === 'html' ? 'text/plain; charset=utf-8' : DOCUMENT_FILE_TYPES[doc.kind] } : null;
  }

  changed(documentId: string): void {
    const d = this.storage.documents.get(documentId);
    if (d) this.bus.emit('documents.changed', this.summary(d));
  }
}

/**
 * The bytes of a Buffer as a Uint8Array that owns its whole ArrayBuffer, so that holding them (a failed
 * import's file) holds nothing else: a big Buffer already does (no copy); a small one lives in Node's
 * shared pool and is copied.
 */
function ownedBytes(b: Buffer): Uint8Array {
  if (b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer)
    return new Uint8Array(b.buffer);
  return new Uint8Array(b);
}

/** What a compressed prefix was made from besides the document and the model: the system prompt. */
function prefixKey(systemPrompt: string): string {
  return createHash('sha256').update(systemPrompt).digest('hex').slice(0, 32);
}

function sameCompression(a: CompressionSettings | null, b: CompressionSettings): boolean {
  const pyramid = !!a && methodRow(a.method).schedule === 'pyramid';
  return (
    !!a &&
    a.method === b.method &&
    (a.method === 'full' ||
      (a.budget === b.budget &&
        a.alpha === b.alpha &&
        a.window === b.window &&
        a.kernel === b.kernel &&
        (!pyramid || (a.beta ?? DEFAULT_BETA) === (b.beta ?? DEFAULT_BETA))))
  );
}
