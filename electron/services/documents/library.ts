// The library's view of its documents: the list with each one's state (stale when its saved cache no longer
// fits the settings), a document's detail with its retention map, renaming, deleting (with its caches, its
// read's checkpoint and, with the last document made from it, its original), and the stored files.
import { rmSync } from 'node:fs';
import { freemem } from 'node:os';

import {
  DOCUMENT_FILE_TYPES,
  type DocumentDetail,
  type DocumentFilePart,
  type DocumentSummary,
  type Params,
  type Result,
  type SetEstimate,
} from '../../api/contract.ts';
import { conversationRoom, pagesRead } from '../../shared/room.ts';
import { languageName, SHIPPED_OCR_LANGUAGE } from '../../shared/ocr.ts';
import { ocrLanguages } from '../../documents/ocr.ts';
import { SET_HEADER_TOKENS } from '../chat-set.ts';
import { toSummary, type DocumentRecord } from '../../storage/index.ts';
import { cacheMatches, checkpointPath, type DocumentsContext } from './context.ts';
import { retentionMap } from './inspector.ts';

/** A document's stored file, for the routes that serve it (web host, app protocol). */
export interface DocumentFile {
  path: string;
  /** The media type it is served with. */
  type: string;
}

export class DocumentLibrary {
  constructor(private readonly ctx: DocumentsContext) {}

  list(): DocumentSummary[] {
    return this.ctx.storage.documents.list().map((d) => this.summary(this.ctx.storage.documents.require(d.id)));
  }

  /** What the UI sees of a document: stale when its cache no longer matches, and what can help a failure. */
  summary(d: DocumentRecord): DocumentSummary {
    const s = this.ctx.storage.settings.get();
    // A document whose cache was made with another model, other settings or another system prompt is stale.
    const stale = d.status === 'ready' && !cacheMatches(s, d);
    const summary = toSummary(stale ? { ...d, status: 'stale' } : d, this.ctx.held.has(d.id));
    const ocrChoice = this.ctx.ocrChoices.get(d.id);
    return ocrChoice ? { ...summary, ocrChoice } : summary;
  }

  /** What a chat over these documents would take, and how many more like them fit (SetEstimate). */
  setEstimate(params: Params<'documents.setEstimate'>): SetEstimate {
    const docs = params.documentIds.map((id) => this.ctx.storage.documents.require(id));
    const sum = (f: (d: DocumentRecord) => number | null) =>
      docs.some((d) => f(d) === null) ? null : docs.reduce((n, d) => n + f(d)!, 0);
    const pageTokens = docs.map((d) =>
      pagesRead(this.ctx.storage.documents.pages(d.id), d.readPages).reduce((n, p) => n + p.tokenEnd - p.tokenStart, 0),
    );
    // The system prompt and template once (the first document's prefix around its pages), each document's pages
    // and its header (a line: counted at SET_HEADER_TOKENS).
    const system = Math.max(0, docs[0].tokens - pageTokens[0]);
    const each = pageTokens.map((n) => n + SET_HEADER_TOKENS);
    const positions = system + each.reduce((a, b) => a + b, 0);
    const settings = this.ctx.storage.settings.get();
    const contextTokens = Math.max(...docs.map((d) => d.contextTokens ?? this.ctx.engine.sessionOptions().nCtx));
    const roomTokens = conversationRoom(contextTokens, settings.conversationRoom);
    const keptBytes = sum((d) => d.kvBytesKept);
    const freeBytes = freemem();
    const average = (n: number) => n / docs.length;
    return {
      keptBytes,
      fullBytes: sum((d) => d.kvBytesFull),
      positions,
      contextTokens,
      roomTokens,
      placement: positions + roomTokens <= contextTokens ? 'own' : 'packed',
      freeBytes,
      moreByMemory: keptBytes ? Math.floor(freeBytes / Math.max(1, average(keptBytes))) : null,
      moreByPositions: Math.max(
        0,
        Math.floor((contextTokens - roomTokens - positions) / Math.max(1, average(each.reduce((a, b) => a + b, 0)))),
      ),
    };
  }

  /** Renames a document (the title the library shows; the file name stays). */
  rename(params: Params<'documents.rename'>): DocumentSummary {
    this.ctx.storage.documents.require(params.documentId);
    this.ctx.storage.documents.update(params.documentId, { title: params.title.replace(/\s+/g, ' ').trim() });
    this.ctx.changed(params.documentId);
    return this.summary(this.ctx.storage.documents.require(params.documentId));
  }

  /** The languages OCR can read: English, shipped, and those the user added to the folder. */
  ocrLanguages(): Result<'documents.ocrLanguages'> {
    const folder = this.ctx.ocrLanguagesDir ?? '';
    return {
      folder,
      available: ocrLanguages(folder || null).map((l) => ({
        code: l.code,
        name: languageName(l.code),
        shipped: l.code === SHIPPED_OCR_LANGUAGE,
      })),
    };
  }

  /** The words OCR recognised on one of the document's pages (none where the page has a text layer). */
  pageWords(p: Params<'documents.pageWords'>): Result<'documents.pageWords'> {
    this.ctx.storage.documents.require(p.documentId);
    return { words: this.ctx.storage.documents.pageWords(p.documentId, p.page) };
  }

  get(documentId: string): DocumentDetail {
    const doc = this.ctx.storage.documents.require(documentId);
    const pages = this.ctx.storage.documents.pages(documentId);
    const stats = this.ctx.storage.stats.get(documentId);
    return {
      ...this.summary(doc),
      pageList: pages,
      stats,
      ...retentionMap(this.ctx.storage.documents.charMap(documentId), pagesRead(pages, doc.readPages), stats),
      hasFile: this.ctx.files?.path(doc.sha256) != null,
      hasHtml: this.ctx.files?.derivedPath(doc.sha256, 'html') != null,
      hasPdf: this.ctx.files?.derivedPath(doc.sha256, 'pdf') != null,
    };
  }

  async delete(documentId: string): Promise<void> {
    this.ctx.storage.documents.require(documentId);
    this.ctx.tasks.cancelDocument(documentId);
    await this.ctx.engine.dropDocumentSessions(documentId);
    this.ctx.held.delete(documentId);
    const { sha256 } = this.ctx.storage.documents.require(documentId);
    const { files } = this.ctx.storage.documents.delete(documentId);
    for (const f of [...files, checkpointPath(this.ctx.cacheDir, documentId)]) rmSync(f, { force: true });
    // The original goes with the last document made from it.
    if (sha256 && this.ctx.storage.documents.findBySha256(sha256).length === 0) this.ctx.files?.remove(sha256);
    this.ctx.bus.emit('documents.deleted', { documentId });
  }

  /**
   * A document's stored original, its HTML (a Word document's, as mammoth wrote it; served as text: the renderer
   * sanitises it) or its page (an image's); null when there is none (unknown id, imported before originals were
   * kept).
   */
  file(documentId: string, part: DocumentFilePart = 'file'): DocumentFile | null {
    const doc = this.ctx.storage.documents.get(documentId);
    if (!doc || !this.ctx.files) return null;
    const path = part === 'file' ? this.ctx.files.path(doc.sha256) : this.ctx.files.derivedPath(doc.sha256, part);
    const type =
      part === 'html'
        ? 'text/plain; charset=utf-8'
        : part === 'pdf'
          ? 'application/pdf'
          : DOCUMENT_FILE_TYPES[doc.kind];
    return path ? { path, type } : null;
  }

  changed(documentId: string): void {
    const d = this.ctx.storage.documents.get(documentId);
    if (d) this.ctx.bus.emit('documents.changed', this.summary(d));
  }
}
