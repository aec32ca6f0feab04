// Model downloads, recorded so that one interrupted by quitting (or a crash) resumes after a restart:
// the url, where the file goes, the expected sha256, how far it got, and the server's validator (ETag) for
// a Range request with If-Range.
import type Database from 'better-sqlite3';

import { isoTime, newId, type Scheduler } from './clock.ts';
import { StorageError } from './errors.ts';
import { writeTransaction } from './transaction.ts';

export type DownloadStatus = 'queued' | 'running' | 'paused' | 'done' | 'failed' | 'cancelled';

export interface DownloadRecord {
  id: string;
  url: string;
  destination: string;
  catalogId: string | null;
  expectedSha256: string | null;
  totalBytes: number | null;
  bytesDone: number;
  etag: string | null;
  status: DownloadStatus;
  error: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface NewDownload {
  url: string;
  destination: string;
  catalogId?: string | null;
  expectedSha256?: string | null;
  totalBytes?: number | null;
}

export interface DownloadPatch {
  status?: DownloadStatus;
  error?: string | null;
  bytesDone?: number;
  totalBytes?: number | null;
  etag?: string | null;
}

const COLUMNS = `id, url, destination, catalog_id AS catalogId, expected_sha256 AS expectedSha256, total_bytes AS totalBytes,
  bytes_done AS bytesDone, etag, status, error, created_at AS createdAt, updated_at AS updatedAt`;

export class DownloadsRepo {
  private readonly insert;
  private readonly selectOne;
  private readonly selectAll;
  private readonly selectUnfinished;
  private readonly updateAll;
  private readonly remove;
  private readonly recover;

  constructor(
    private readonly db: Database.Database,
    private readonly scheduler: Scheduler,
  ) {
    this.insert = db.prepare(
      `INSERT INTO downloads (id, url, destination, catalog_id, expected_sha256, total_bytes, bytes_done, status, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, 0, 'queued', ?, ?)`,
    );
    this.selectOne = db.prepare(`SELECT ${COLUMNS} FROM downloads WHERE id = ?`);
    this.selectAll = db.prepare(`SELECT ${COLUMNS} FROM downloads ORDER BY created_at, rowid`);
    this.selectUnfinished = db.prepare(
      `SELECT ${COLUMNS} FROM downloads WHERE status IN ('queued', 'running', 'paused') ORDER BY created_at, rowid`,
    );
    this.updateAll = db.prepare(
      `UPDATE downloads SET status = @status, error = @error, bytes_done = @bytesDone, total_bytes = @totalBytes, etag = @etag,
         updated_at = @now WHERE id = @id`,
    );
    this.remove = db.prepare(`DELETE FROM downloads WHERE id = ?`);
    this.recover = db.prepare(`UPDATE downloads SET status = 'paused', updated_at = ? WHERE status = 'running'`);
  }

  create(d: NewDownload): DownloadRecord {
    const id = newId();
    const now = isoTime(this.scheduler);
    this.insert.run(
      id,
      d.url,
      d.destination,
      d.catalogId ?? null,
      d.expectedSha256 ?? null,
      d.totalBytes ?? null,
      now,
      now,
    );
    return this.require(id);
  }

  get(id: string): DownloadRecord | null {
    return (this.selectOne.get(id) as DownloadRecord | undefined) ?? null;
  }

  require(id: string): DownloadRecord {
    const d = this.get(id);
    if (!d) throw new StorageError('NOT_FOUND', `no download ${id}`);
    return d;
  }

  list(): DownloadRecord[] {
    return this.selectAll.all() as DownloadRecord[];
  }

  /** Queued, running or paused: the ones to resume. */
  unfinished(): DownloadRecord[] {
    return this.selectUnfinished.all() as DownloadRecord[];
  }

  /**
   * Records progress or a change of status. The caller bounds the rate of progress writes (once a second
   * is plenty: on resume the partial file's size is the truth, bytesDone is what the UI shows meanwhile).
   */
  update(id: string, patch: DownloadPatch): DownloadRecord {
    return writeTransaction(this.db, () => {
      const d = this.require(id);
      this.updateAll.run({
        id,
        status: patch.status ?? d.status,
        error: patch.error === undefined ? d.error : patch.error,
        bytesDone: patch.bytesDone ?? d.bytesDone,
        totalBytes: patch.totalBytes === undefined ? d.totalBytes : patch.totalBytes,
        etag: patch.etag === undefined ? d.etag : patch.etag,
        now: isoTime(this.scheduler),
      });
      return this.require(id);
    });
  }

  delete(id: string): boolean {
    return this.remove.run(id).changes > 0;
  }

  /** Startup recovery: downloads that were running when the app died become paused, ready to resume. */
  recoverInterrupted(): number {
    return this.recover.run(isoTime(this.scheduler)).changes;
  }
}
