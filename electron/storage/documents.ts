// Documents: what was imported (title, kind, file, sha256), its pages with their token ranges, its token
// ids and per-token character map (int32 BLOBs), the range of pages the last read took in (every page keeps
// its text whatever was read), its status, and the saved compressed KV cache it has
// (model, model file fingerprint, compression settings, file path, bytes). Deleting a document deletes its
// pages, statistics, chats and messages through foreign-key cascades, and hands back the files to remove.
import type Database from 'better-sqlite3';
import { z } from 'zod';

// biome-ignore lint/style/useImportType: DocumentKind and DocumentStatus are zod values whose inferred types are re-exported under the same names.
import {
  CompressionSettings,
  DocumentKind,
  DocumentPage,
  DocumentStatus,
  type DocumentSummary,
  type OcrWord,
} from '../api/contract.ts';
import { failureRemedy } from '../documents/errors.ts';
import { decodeInt32, encodeInt32 } from './blob.ts';
import { isoTime, newId, type Scheduler } from './clock.ts';
import { StorageError } from './errors.ts';
import type { StatsInput, StatsRepo } from './stats.ts';
import { writeTransaction } from './transaction.ts';

export type DocumentKind = z.infer<typeof DocumentKind>;
export type DocumentStatus = z.infer<typeof DocumentStatus>;
export type { DocumentPage } from '../api/contract.ts';

export interface NewDocument {
  title: string;
  kind: DocumentKind;
  fileName: string;
  /** Hex sha256 of the imported file. */
  sha256?: string | null;
  /** Default 'importing'. */
  status?: DocumentStatus;
}

/** A document's row: the contract's summary plus what only the core needs. */
export interface DocumentRecord extends DocumentSummary {
  sha256: string | null;
  /** What the cache's prefix was made from besides the document (the system prompt's hash); null: unknown. */
  prefixKey: string | null;
  /** The saved KV cache file, or null when there is none. */
  kvPath: string | null;
  updatedAt: string;
}

export interface DocumentPatch {
  title?: string;
  status?: DocumentStatus;
  /** Clearing the error (null) clears its code too, unless errorCode says otherwise. */
  error?: string | null;
  errorCode?: string | null;
}

export interface DocumentContent {
  /** With, for a page read by OCR, its words (stored apart: documents.pageWords). */
  pages: readonly (DocumentPage & { ocrWords?: readonly OcrWord[] })[];
  tokens: Int32Array | readonly number[];
  /** Per token, where it is in the text (the document service's layout); null: not stored. */
  charMap?: Int32Array | readonly number[] | null;
}

/** A read of a document's stored pages: all of them, or a range. */
export interface DocumentRead {
  /** The pages read, in order, each with the token range it became; their text is the stored text. */
  pages: readonly DocumentPage[];
  tokens: Int32Array | readonly number[];
  charMap?: Int32Array | readonly number[] | null;
  /** The first and last page read; null: the whole document. */
  range: [number, number] | null;
}

/** A compressed cache that was saved to disk, with what it was made from. */
export interface SavedCache {
  kvPath: string;
  modelId: string;
  /** What the prefix was made from besides the document (see DocumentRecord.prefixKey). */
  prefixKey?: string | null;
  compression: CompressionSettings;
  kvBytesFull: number;
  kvBytesKept: number;
  /** The context the cache was read into (its positions); null: the settings' context. */
  contextTokens?: number | null;
  /** How it was read, for the user (one pass, chunks, re-based). */
  readNote?: string | null;
  stats?: StatsInput | null;
  /** Where the kept entries sit (DocumentSummary.kept); absent: 'rebased' when the statistics say re-based. */
  placement?: 'own' | 'packed' | 'rebased';
  /** Default 'ready'. */
  status?: DocumentStatus;
}

interface Row {
  id: string;
  title: string;
  kind: DocumentKind;
  file_name: string;
  file_sha256: string | null;
  status: DocumentStatus;
  error: string | null;
  error_code: string | null;
  created_at: string;
  updated_at: string;
  page_count: number;
  token_count: number;
  model_id: string | null;
  prefix_key: string | null;
  compression: string | null;
  kv_path: string | null;
  kv_bytes_full: number | null;
  kv_bytes_kept: number | null;
  context_tokens: number | null;
  read_note: string | null;
  read_first: number | null;
  read_last: number | null;
  kept_per_head: number | null;
  kept_positions: number | null;
  kept_placement: 'own' | 'packed' | 'rebased' | null;
}

const COLUMNS = `id, title, kind, file_name, file_sha256, status, error, error_code, created_at, updated_at, page_count, token_count,
  model_id, prefix_key, compression, kv_path, kv_bytes_full, kv_bytes_kept, context_tokens, read_note,
  read_first, read_last, kept_per_head, kept_positions, kept_placement`;

function toRecord(r: Row): DocumentRecord {
  return {
    id: r.id,
    title: r.title,
    kind: r.kind,
    fileName: r.file_name,
    pages: r.page_count,
    tokens: r.token_count,
    status: r.status,
    error: r.error,
    errorCode: r.status === 'failed' ? r.error_code : null,
    remedy: r.status === 'failed' ? failureRemedy(r.error_code, r.page_count > 0 ? 'compress' : 'import', false) : null,
    createdAt: r.created_at,
    modelId: r.model_id,
    compression: r.compression === null ? null : (JSON.parse(r.compression) as CompressionSettings),
    kvBytesFull: r.kv_bytes_full,
    kvBytesKept: r.kv_bytes_kept,
    contextTokens: r.context_tokens,
    readNote: r.read_note,
    readPages: r.read_first === null || r.read_last === null ? null : [r.read_first, r.read_last],
    kept:
      r.kept_positions === null || r.kept_placement === null
        ? null
        : { perHead: r.kept_per_head, positions: r.kept_positions, placement: r.kept_placement },
    sha256: r.file_sha256,
    prefixKey: r.prefix_key,
    kvPath: r.kv_path,
    updatedAt: r.updated_at,
  };
}

/**
 * The contract's DocumentSummary of a record (no extra fields). `held`: the app still holds the file of a
 * failed import in memory (services/documents/context.ts HeldFiles), so reading it again can help.
 */
export function toSummary(d: DocumentRecord, held = false): DocumentSummary {
  const {
    id,
    title,
    kind,
    fileName,
    pages,
    tokens,
    status,
    error,
    errorCode,
    createdAt,
    modelId,
    compression,
    kvBytesFull,
    kvBytesKept,
    contextTokens,
    readNote,
    readPages,
    kept,
  } = d;
  const remedy = status === 'failed' ? failureRemedy(errorCode, pages > 0 ? 'compress' : 'import', held) : null;
  return {
    id,
    title,
    kind,
    fileName,
    pages,
    tokens,
    status,
    error,
    errorCode,
    remedy,
    createdAt,
    modelId,
    compression,
    kvBytesFull,
    kvBytesKept,
    contextTokens,
    readNote,
    readPages,
    kept,
  };
}

const Pages = z.array(DocumentPage);

function parsePages(pages: readonly DocumentPage[]): DocumentPage[] {
  const parsed = Pages.safeParse(pages);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new StorageError('BAD_REQUEST', `pages.${issue.path.join('.')}: ${issue.message}`, parsed.error.issues);
}

/** Pages checked, token ids and the character map as stored (int32 little-endian blobs). */
function encodeContent(c: DocumentContent) {
  return {
    pages: parsePages(c.pages),
    tokens: encodeInt32(c.tokens, 'tokens'),
    charMap: c.charMap == null ? null : encodeInt32(c.charMap, 'charMap'),
  };
}

export const INTERRUPTED_IMPORT = 'Folio closed before this document was ready. Import it again.';

export class DocumentsRepo {
  private readonly insert;
  private readonly selectOne;
  private readonly selectAll;
  private readonly selectBySha;
  private readonly selectShas;
  private readonly updateFields;
  private readonly deletePages;
  private readonly insertPage;
  private readonly selectWords;
  private readonly setTokens;
  private readonly putTokens;
  private readonly unsetPageTokens;
  private readonly setPageTokens;
  private readonly countPages;
  private readonly setReadTokens;
  private readonly selectPages;
  private readonly selectTokens;
  private readonly selectCharMap;
  private readonly setCache;
  private readonly unsetCache;
  private readonly remove;
  private readonly recoverNoCache;
  private readonly recoverWithCache;

  constructor(
    private readonly db: Database.Database,
    private readonly scheduler: Scheduler,
    private readonly stats: StatsRepo,
  ) {
    this.insert = db.prepare(
      `INSERT INTO documents (id, title, kind, file_name, file_sha256, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.selectOne = db.prepare(`SELECT ${COLUMNS} FROM documents WHERE id = ?`);
    this.selectAll = db.prepare(`SELECT ${COLUMNS} FROM documents ORDER BY created_at DESC, rowid DESC`);
    this.selectBySha = db.prepare(`SELECT ${COLUMNS} FROM documents WHERE file_sha256 = ? ORDER BY created_at DESC`);
    this.selectShas = db.prepare(`SELECT DISTINCT file_sha256 FROM documents WHERE file_sha256 IS NOT NULL`).pluck();
    this.updateFields = db.prepare(
      `UPDATE documents SET title = @title, status = @status, error = @error, error_code = @errorCode, updated_at = @now
         WHERE id = @id`,
    );
    this.deletePages = db.prepare(`DELETE FROM document_pages WHERE document_id = ?`);
    this.insertPage = db.prepare(
      `INSERT INTO document_pages (document_id, page, text, token_start, token_end, ocr_language, ocr_confidence, ocr_words)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.selectWords = db.prepare(`SELECT ocr_words FROM document_pages WHERE document_id = ? AND page = ?`).pluck();
    this.setTokens = db.prepare(
      `UPDATE documents SET token_count = ?, page_count = ?, read_first = NULL, read_last = NULL, updated_at = ? WHERE id = ?`,
    );
    this.putTokens = db.prepare(
      `INSERT INTO document_tokens (document_id, tokens, char_map) VALUES (?, ?, ?)
         ON CONFLICT (document_id) DO UPDATE SET tokens = excluded.tokens, char_map = excluded.char_map`,
    );
    this.unsetPageTokens = db.prepare(
      `UPDATE document_pages SET token_start = -1, token_end = -1 WHERE document_id = ?`,
    );
    this.setPageTokens = db.prepare(
      `UPDATE document_pages SET token_start = ?, token_end = ? WHERE document_id = ? AND page = ? AND text = ?`,
    );
    this.countPages = db
      .prepare(`SELECT COUNT(*) FROM document_pages WHERE document_id = ? AND page BETWEEN ? AND ?`)
      .pluck();
    this.setReadTokens = db.prepare(
      `UPDATE documents SET token_count = @tokenCount, read_first = @first, read_last = @last, updated_at = @now
         WHERE id = @id`,
    );
    this.selectPages = db.prepare(
      `SELECT page, text, token_start AS tokenStart, token_end AS tokenEnd, ocr_language AS ocrLanguage,
         ocr_confidence AS ocrConfidence FROM document_pages WHERE document_id = ? ORDER BY page`,
    );
    this.selectTokens = db.prepare(`SELECT tokens FROM document_tokens WHERE document_id = ?`).pluck();
    this.selectCharMap = db.prepare(`SELECT char_map FROM document_tokens WHERE document_id = ?`).pluck();
    this.setCache = db.prepare(
      `UPDATE documents SET kv_path = @kvPath, model_id = @modelId,
         prefix_key = @prefixKey, compression = @compression, kv_bytes_full = @kvBytesFull, kv_bytes_kept = @kvBytesKept, context_tokens = @contextTokens,
         read_note = @readNote, kept_per_head = @keptPerHead, kept_positions = @keptPositions, kept_placement = @keptPlacement,
         status = @status, error = NULL, error_code = NULL, updated_at = @now WHERE id = @id`,
    );
    this.unsetCache = db.prepare(
      `UPDATE documents SET kv_path = NULL, kv_bytes_full = NULL, kv_bytes_kept = NULL, kept_per_head = NULL, kept_positions = NULL,
         kept_placement = NULL, status = @status, updated_at = @now WHERE id = @id`,
    );
    this.remove = db.prepare(`DELETE FROM documents WHERE id = ?`);
    this.recoverNoCache = db.prepare(
      `UPDATE documents SET status = 'failed', error = ?, updated_at = ? WHERE status IN ('importing', 'compressing') AND kv_path IS NULL`,
    );
    this.recoverWithCache = db.prepare(
      `UPDATE documents SET status = 'stale', updated_at = ? WHERE status IN ('importing', 'compressing') AND kv_path IS NOT NULL`,
    );
  }

  create(input: NewDocument): DocumentRecord {
    const id = newId();
    const now = isoTime(this.scheduler);
    this.insert.run(
      id,
      input.title,
      input.kind,
      input.fileName,
      input.sha256 ?? null,
      input.status ?? 'importing',
      now,
      now,
    );
    return this.require(id);
  }

  get(id: string): DocumentRecord | null {
    const row = this.selectOne.get(id) as Row | undefined;
    return row ? toRecord(row) : null;
  }

  require(id: string): DocumentRecord {
    const d = this.get(id);
    if (!d) throw new StorageError('NOT_FOUND', `no document ${id}`);
    return d;
  }

  /** Newest first. */
  list(): DocumentSummary[] {
    return (this.selectAll.all() as Row[]).map((r) => toSummary(toRecord(r)));
  }

  /** The stored code of the document's last failure (kept while it is not failed too, until cleared). */
  private errorCode(id: string): string | null {
    return (this.selectOne.get(id) as Row | undefined)?.error_code ?? null;
  }

  /** Documents imported from a file with this content (to offer the existing one instead of a re-import). */
  findBySha256(sha256: string): DocumentRecord[] {
    return (this.selectBySha.all(sha256) as Row[]).map(toRecord);
  }

  /** The sha256 of every file some document was imported from. */
  sha256s(): Set<string> {
    return new Set(this.selectShas.all() as string[]);
  }

  update(id: string, patch: DocumentPatch): DocumentRecord {
    return writeTransaction(this.db, () => {
      const d = this.require(id);
      this.updateFields.run({
        id,
        title: patch.title ?? d.title,
        status: patch.status ?? d.status,
        error: patch.error === undefined ? d.error : patch.error,
        errorCode:
          patch.errorCode !== undefined ? patch.errorCode : patch.error === null ? null : (this.errorCode(id) ?? null),
        now: isoTime(this.scheduler),
      });
      return this.require(id);
    });
  }

  /** Replaces the pages, token ids and character map, in one transaction (an import: no read yet). */
  setContent(id: string, content: DocumentContent): DocumentRecord {
    const { pages, tokens, charMap } = encodeContent(content);
    return writeTransaction(this.db, () => {
      this.require(id);
      this.deletePages.run(id);
      pages.forEach((p, i) => {
        const words = content.pages[i].ocrWords;
        this.insertPage.run(
          id,
          p.page,
          p.text,
          p.tokenStart,
          p.tokenEnd,
          // A page OCR left unread (PageOcr.unread) keeps its language alone: no confidence, no words.
          p.ocr?.language ?? null,
          p.ocr && !p.ocr.unread ? p.ocr.confidence : null,
          p.ocr && !p.ocr.unread ? JSON.stringify(words ?? []) : null,
        );
      });
      this.setTokens.run(content.tokens.length, pages.length, isoTime(this.scheduler), id);
      this.putTokens.run(id, tokens, charMap);
      return this.require(id);
    });
  }

  /**
   * Records a read of the stored pages, in one transaction: the token ids, the character map, each page's
   * token range and the range read. No page's text is lost: a page the read left out keeps it, with no
   * tokens (-1). Refused unless the read's pages are exactly the stored ones of its range, with their text.
   */
  setRead(id: string, read: DocumentRead): DocumentRecord {
    const { pages, tokens, charMap } = encodeContent(read);
    const [first, last] = read.range ?? [1, Number.MAX_SAFE_INTEGER];
    return writeTransaction(this.db, () => {
      this.require(id);
      this.unsetPageTokens.run(id);
      for (const p of pages) {
        const inRange = p.page >= first && p.page <= last;
        if (!inRange || this.setPageTokens.run(p.tokenStart, p.tokenEnd, id, p.page, p.text).changes !== 1)
          throw new StorageError('BAD_REQUEST', `page ${p.page} is not a stored page of the range read`);
      }
      if (this.countPages.get(id, first, last) !== pages.length)
        throw new StorageError('BAD_REQUEST', 'the read leaves out stored pages of its range');
      this.putTokens.run(id, tokens, charMap);
      this.setReadTokens.run({
        id,
        tokenCount: read.tokens.length,
        first: read.range?.[0] ?? null,
        last: read.range?.[1] ?? null,
        now: isoTime(this.scheduler),
      });
      return this.require(id);
    });
  }

  /** Every stored page, read or not (DocumentSummary.readPages says which the cache holds). */
  pages(id: string): DocumentPage[] {
    type Row = Omit<DocumentPage, 'ocr'> & { ocrLanguage: string | null; ocrConfidence: number | null };
    return (this.selectPages.all(id) as Row[]).map(({ ocrLanguage, ocrConfidence, ...p }) =>
      ocrLanguage === null
        ? p
        : {
            ...p,
            ocr:
              ocrConfidence === null
                ? { language: ocrLanguage, confidence: 0, unread: true as const }
                : { language: ocrLanguage, confidence: ocrConfidence },
          },
    );
  }

  /** The words OCR recognised on a page; none for a page with a text layer (or no such page). */
  pageWords(id: string, page: number): OcrWord[] {
    const json = this.selectWords.get(id, page) as string | null | undefined;
    return json ? (JSON.parse(json) as OcrWord[]) : [];
  }

  /** The token ids; null when the document has none yet (or does not exist). */
  tokens(id: string): Int32Array | null {
    const blob = this.selectTokens.get(id) as Buffer | null | undefined;
    return blob == null ? null : decodeInt32(blob, `tokens of document ${id}`);
  }

  charMap(id: string): Int32Array | null {
    const blob = this.selectCharMap.get(id) as Buffer | null | undefined;
    return blob == null ? null : decodeInt32(blob, `character map of document ${id}`);
  }

  /**
   * Records a cache saved to disk, with its statistics, in one transaction. Returns the previous cache
   * file when it was another file: the caller removes it (after this returns, so a crash in between leaves
   * an unreferenced file rather than a dangling reference).
   */
  saveCache(id: string, cache: SavedCache): { replacedKvPath: string | null } {
    const compression = CompressionSettings.safeParse(cache.compression);
    if (!compression.success) {
      const issue = compression.error.issues[0];
      throw new StorageError(
        'BAD_REQUEST',
        `compression.${issue.path.join('.')}: ${issue.message}`,
        compression.error.issues,
      );
    }
    return writeTransaction(this.db, () => {
      const before = this.require(id);
      this.setCache.run({
        id,
        kvPath: cache.kvPath,
        modelId: cache.modelId,
        prefixKey: cache.prefixKey ?? null,
        compression: JSON.stringify(compression.data),
        kvBytesFull: cache.kvBytesFull,
        kvBytesKept: cache.kvBytesKept,
        contextTokens: cache.contextTokens ?? null,
        readNote: cache.readNote ?? null,
        keptPerHead: cache.stats?.compressed ? cache.stats.budget : null,
        keptPositions: cache.stats?.positions ?? null,
        keptPlacement: cache.stats ? (cache.placement ?? (cache.stats.rebased ? 'rebased' : 'own')) : null,
        status: cache.status ?? 'ready',
        now: isoTime(this.scheduler),
      });
      if (cache.stats) this.stats.put(id, cache.stats);
      else this.stats.delete(id);
      return { replacedKvPath: before.kvPath !== null && before.kvPath !== cache.kvPath ? before.kvPath : null };
    });
  }

  /** Forgets the saved cache and its statistics (the model and settings it was made with stay recorded). */
  clearCache(id: string, status: DocumentStatus = 'stale'): { removedKvPath: string | null } {
    return writeTransaction(this.db, () => {
      const before = this.require(id);
      this.unsetCache.run({ id, status, now: isoTime(this.scheduler) });
      this.stats.delete(id);
      return { removedKvPath: before.kvPath };
    });
  }

  /**
   * Deletes the document with its pages, statistics, chats and messages (cascades), in one transaction.
   * Returns the files the caller must remove (the saved KV cache).
   */
  delete(id: string): { deleted: boolean; files: string[] } {
    return writeTransaction(this.db, () => {
      const d = this.get(id);
      if (!d) return { deleted: false, files: [] };
      this.remove.run(id);
      return { deleted: true, files: d.kvPath ? [d.kvPath] : [] };
    });
  }

  /**
   * Startup recovery: a document still importing or compressing was cut off by a crash. Without a saved
   * cache it becomes failed (with a message saying so); with one (an interrupted recompression) it becomes
   * stale, so that it is checked against the current model and settings before a chat uses it.
   */
  recoverInterrupted(): number {
    return writeTransaction(this.db, () => {
      const now = isoTime(this.scheduler);
      return this.recoverNoCache.run(INTERRUPTED_IMPORT, now).changes + this.recoverWithCache.run(now).changes;
    });
  }
}
