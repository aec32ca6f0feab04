// The engine's compression statistics of a document's saved cache. The per-layer part is small and kept as
// JSON; the retention map (one value per prefix token) is a BLOB: int32 when every value is a whole count
// (the engine's case), float64 otherwise.
import type Database from 'better-sqlite3';

import { CompressionStats } from '../api/contract.ts';
import { allInt32, decodeFloat64, decodeInt32, encodeFloat64, encodeInt32 } from './blob.ts';
import { isoTime, type Scheduler } from './clock.ts';
import { StorageError } from './errors.ts';

/** The statistics as the engine returns them (retention as an Int32Array) or as the contract has them (an array). */
export type StatsInput = Omit<CompressionStats, 'tokenRetention'> & { tokenRetention: Int32Array | readonly number[] };

const StatsWithoutRetention = CompressionStats.omit({ tokenRetention: true });

interface StatsRow {
  json: string;
  retention: Buffer;
  retention_format: 'i32' | 'f64';
}

export class StatsRepo {
  private readonly upsert;
  private readonly select;
  private readonly selectRetention;
  private readonly remove;

  constructor(
    db: Database.Database,
    private readonly scheduler: Scheduler,
  ) {
    this.upsert = db.prepare(
      `INSERT INTO compression_stats (document_id, json, retention, retention_format, created_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (document_id) DO UPDATE SET json = excluded.json, retention = excluded.retention,
         retention_format = excluded.retention_format, created_at = excluded.created_at`,
    );
    this.select = db.prepare(`SELECT json, retention, retention_format FROM compression_stats WHERE document_id = ?`);
    this.selectRetention = db.prepare(
      `SELECT retention, retention_format FROM compression_stats WHERE document_id = ?`,
    );
    this.remove = db.prepare(`DELETE FROM compression_stats WHERE document_id = ?`);
  }

  /** Stores (or replaces) a document's statistics; they are validated against the contract first. */
  put(documentId: string, stats: StatsInput): void {
    const { tokenRetention: retention, ...others } = stats;
    const parsed = StatsWithoutRetention.safeParse(others);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new StorageError(
        'BAD_REQUEST',
        `compression stats: ${issue.path.join('.')}: ${issue.message}`,
        parsed.error.issues,
      );
    }
    if (!(retention instanceof Int32Array) && !Array.isArray(retention)) {
      throw new StorageError(
        'BAD_REQUEST',
        'compression stats: tokenRetention: expected an Int32Array or an array of numbers',
      );
    }
    const int = retention instanceof Int32Array || allInt32(retention);
    let blob: Buffer;
    if (int) {
      blob = encodeInt32(retention, 'tokenRetention');
    } else {
      if (!retention.every((v) => typeof v === 'number' && Number.isFinite(v))) {
        throw new StorageError('BAD_REQUEST', 'compression stats: tokenRetention: expected finite numbers');
      }
      blob = encodeFloat64(retention);
    }
    try {
      this.upsert.run(documentId, JSON.stringify(parsed.data), blob, int ? 'i32' : 'f64', isoTime(this.scheduler));
    } catch (e) {
      if ((e as { code?: string }).code === 'SQLITE_CONSTRAINT_FOREIGNKEY')
        throw new StorageError('NOT_FOUND', `no document ${documentId}`);
      throw e;
    }
  }

  get(documentId: string): CompressionStats | null {
    const row = this.select.get(documentId) as StatsRow | undefined;
    if (!row) return null;
    return {
      ...(JSON.parse(row.json) as Omit<CompressionStats, 'tokenRetention'>),
      tokenRetention: Array.from(decode(row, documentId)),
    };
  }

  /** The retention map alone, as a typed array (no JSON, no per-value objects). */
  retention(documentId: string): Int32Array | Float64Array | null {
    const row = this.selectRetention.get(documentId) as Omit<StatsRow, 'json'> | undefined;
    return row ? decode(row, documentId) : null;
  }

  delete(documentId: string): boolean {
    return this.remove.run(documentId).changes > 0;
  }
}

function decode(row: Omit<StatsRow, 'json'>, documentId: string): Int32Array | Float64Array {
  const what = `retention map of document ${documentId}`;
  return row.retention_format === 'i32' ? decodeInt32(row.retention, what) : decodeFloat64(row.retention, what);
}
