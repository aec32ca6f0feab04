// Opening Folio's SQLite database: checks before anything is written (is it a database, is it Folio's,
// is it intact, is it not newer than this build), then WAL mode and the migrations. A file that fails a
// check is reported with a StorageError and left exactly as it was: nothing is dropped or recreated.
import { privateDir, privateFile } from './private-files.ts';
import { join } from 'node:path';

import Database from 'better-sqlite3';

import { systemScheduler, type Scheduler } from './clock.ts';
import { corruptError, isCorruption, StorageError } from './errors.ts';
import { APPLICATION_ID, appliedMigrations, LATEST_VERSION, migrate, migrations } from './migrations.ts';

export const DATABASE_FILE = 'folio.sqlite3';

export interface OpenDatabaseOptions {
  scheduler?: Scheduler;
  /** Run SQLite's quick_check on open (reads every page once; default true). */
  integrityCheck?: boolean;
  /** How long a write waits for another connection's write to finish (ms, default 5000). */
  busyTimeoutMs?: number;
}

export interface OpenedDatabase {
  db: Database.Database;
  file: string;
  /** The migration versions applied by this open (empty when the schema was current). */
  migrated: number[];
  /** The journal mode in effect: 'wal', unless the file system does not support it. */
  journalMode: string;
}

/**
 * What every connection to the library sets (the main one and the content writer's, write-worker.ts): WAL with
 * synchronous FULL, so that every commit is on disk when it returns (durable across power loss too; writes are
 * few, answers are written at a bounded rate, so the fsyncs cost nothing noticeable), and foreign keys.
 * Returns the journal mode in effect ('wal', unless the file system does not support it).
 */
export function configureConnection(db: Database.Database): string {
  const journalMode = String(db.pragma('journal_mode = WAL', { simple: true })).toLowerCase();
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  return journalMode;
}

/** Opens (creating if needed) the database file in `dir`, checks it and brings its schema up to date. */
export function openDatabase(dir: string, options: OpenDatabaseOptions = {}): OpenedDatabase {
  const scheduler = options.scheduler ?? systemScheduler;
  try {
    privateDir(dir);
  } catch (e) {
    throw new StorageError('STORAGE_OPEN_FAILED', `Cannot create the data folder ${dir}: ${(e as Error).message}`, {
      dir,
    });
  }
  const file = join(dir, DATABASE_FILE);
  let db: Database.Database;
  try {
    // Made 0600 before SQLite opens it: SQLite gives its -wal and -shm files the database file's mode.
    privateFile(file);
    db = new Database(file, { timeout: options.busyTimeoutMs ?? 5000 });
  } catch (e) {
    throw translate(e, file);
  }
  try {
    checkBeforeWriting(db, file, options.integrityCheck ?? true);
    const journalMode = configureConnection(db);
    const migrated = migrate(db, scheduler);
    return { db, file, migrated, journalMode };
  } catch (e) {
    db.close();
    throw translate(e, file);
  }
}

function checkBeforeWriting(db: Database.Database, file: string, integrityCheck: boolean): void {
  // The first read of the schema fails with SQLITE_NOTADB when the file is not a database.
  const tables = (
    db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).all() as {
      name: string;
    }[]
  ).map((r) => r.name);
  const applicationId = Number(db.pragma('application_id', { simple: true }));
  const applied = appliedMigrations(db);
  const fresh = applied.length === 0 && tables.every((t) => t === 'schema_migrations');
  if (!fresh && applicationId !== APPLICATION_ID) {
    throw new StorageError(
      'STORAGE_NOT_FOLIO',
      `${file} is an SQLite database but not Folio's (application id ${applicationId}, tables: ${tables.slice(0, 8).join(', ')}). ` +
        'Folio left it untouched; move it elsewhere to start with an empty library.',
      { file, applicationId, tables },
    );
  }
  if (integrityCheck && !fresh) {
    const rows = db.pragma('quick_check(20)') as { quick_check: string }[];
    const problems = rows
      .flatMap((r) => r.quick_check.split('\n'))
      .map((line) => line.trim())
      .filter((line) => line && line !== 'ok' && !line.startsWith('***'));
    if (problems.length) {
      const more = problems.length > 3 ? `; and ${problems.length - 3} more` : '';
      throw corruptError(file, `integrity check: ${problems.slice(0, 3).join('; ')}${more}`);
    }
  }
  const newest = applied.length ? applied[applied.length - 1] : null;
  if (newest && newest.version > LATEST_VERSION) {
    throw new StorageError(
      'STORAGE_NEWER_SCHEMA',
      `This library (${file}) was written by a newer version of Folio: its database schema is at version ${newest.version} ` +
        `("${newest.name}"), and this Folio knows versions up to ${LATEST_VERSION}. Update Folio to open it; the file was not changed.`,
      { file, version: newest.version, supported: LATEST_VERSION },
    );
  }
  for (const a of applied) {
    const known = migrations.find((m) => m.version === a.version);
    if (known && known.name !== a.name) {
      throw new StorageError(
        'STORAGE_SCHEMA_MISMATCH',
        `${file}: schema step ${a.version} was applied as "${a.name}", but this Folio's step ${a.version} is "${known.name}". ` +
          'The library comes from a different build of Folio; the file was not changed.',
        { file, version: a.version, name: a.name, expected: known.name },
      );
    }
  }
}

function translate(e: unknown, file: string): StorageError {
  if (e instanceof StorageError) return e;
  if (isCorruption(e)) return corruptError(file, (e as Error).message);
  return new StorageError('STORAGE_OPEN_FAILED', `Cannot open the Folio database ${file}: ${(e as Error).message}`, {
    file,
  });
}
