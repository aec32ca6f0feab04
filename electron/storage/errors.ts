// Errors of the storage layer. They are ApiErrors, so the API layer passes them to the UI unchanged: a
// stable code for the program and a message a person can act on.
import { ApiError } from '../api/contract.ts';

export type StorageErrorCode =
  /** The database was written by a newer Folio (its schema has migrations this build does not know). */
  | 'STORAGE_NEWER_SCHEMA'
  /** An applied schema step has another name than this build's step of the same version (another build). */
  | 'STORAGE_SCHEMA_MISMATCH'
  /** The file is not an SQLite database, or SQLite found it damaged. */
  | 'STORAGE_CORRUPT'
  /** An SQLite database, but not Folio's. */
  | 'STORAGE_NOT_FOLIO'
  /** The file could not be opened or migrated for another reason (permissions, disk full, ...). */
  | 'STORAGE_OPEN_FAILED'
  /** A row the caller named does not exist. */
  | 'NOT_FOUND'
  /** The caller passed something invalid (e.g. a settings patch that fails validation). */
  | 'BAD_REQUEST'
  /** A write on the storage writer's thread failed for another reason (disk full, the thread died). */
  | 'STORAGE_WRITE_FAILED';

export class StorageError extends ApiError {
  constructor(
    override readonly code: StorageErrorCode,
    message: string,
    details?: unknown,
  ) {
    super(code, message, details);
    this.name = 'StorageError';
  }
}

/** SQLite result codes (better-sqlite3's SqliteError.code) that mean the file itself is bad. */
const CORRUPT_CODES = new Set([
  'SQLITE_NOTADB',
  'SQLITE_CORRUPT',
  'SQLITE_CORRUPT_VTAB',
  'SQLITE_CORRUPT_SEQUENCE',
  'SQLITE_CORRUPT_INDEX',
]);

export function sqliteCode(e: unknown): string | null {
  const code = e instanceof Error ? (e as Error & { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : null;
}

export function isCorruption(e: unknown): boolean {
  const code = sqliteCode(e);
  return code !== null && CORRUPT_CODES.has(code);
}

export function corruptError(file: string, cause: string): StorageError {
  return new StorageError(
    'STORAGE_CORRUPT',
    `The Folio database ${file} is damaged or is not a database (${cause}). Folio left the file untouched: ` +
      'quit Folio, then restore a backup of it, or move it (with its -wal and -shm files) elsewhere to start with an empty library.',
    { file, cause },
  );
}
