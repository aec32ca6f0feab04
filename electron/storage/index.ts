// Folio's storage: one SQLite database (WAL) in the data folder the caller gives (the app passes the OS
// app-data folder; tests a temporary one), with one small repository per concern. Plain TypeScript: no
// import of 'electron'.
//
//   const storage = openStorage(dataDir);   // checks the file, migrates
//   storage.recover();                      // once at startup: answers cut off by a crash -> interrupted
//   storage.documents.create(...); storage.chats.create(...); storage.messages.beginAnswer(...) ...
//   storage.close();
import type Database from 'better-sqlite3';

import { ChatsRepo } from './chats.ts';
import { systemScheduler, type Scheduler } from './clock.ts';
import { openDatabase, type OpenDatabaseOptions } from './database.ts';
import { DocumentsRepo } from './documents.ts';
import { DownloadsRepo } from './downloads.ts';
import { MessagesRepo } from './messages.ts';
import { ModelsRepo } from './models.ts';
import { SettingsRepo } from './settings.ts';
import { ContentWriter } from './write-thread.ts';
import { StatsRepo } from './stats.ts';

export { DATABASE_FILE } from './database.ts';
export { corruptError, isCorruption, StorageError, type StorageErrorCode } from './errors.ts';
export { systemScheduler, type Scheduler } from './clock.ts';
export { LATEST_VERSION, migrations, type Migration, type AppliedMigration } from './migrations.ts';
export {
  DEFAULT_SETTINGS,
  DEFAULT_SYSTEM_PROMPT,
  StrictSettingsPatch,
  SettingsRepo,
  type SettingsRead,
} from './settings.ts';
export {
  DocumentsRepo,
  INTERRUPTED_IMPORT,
  toSummary,
  type DocumentContent,
  type DocumentKind,
  type DocumentPage,
  type DocumentPatch,
  type DocumentRecord,
  type DocumentStatus,
  type NewDocument,
  type SavedCache,
} from './documents.ts';
export { StatsRepo, type StatsInput } from './stats.ts';
export { ChatsRepo, DEFAULT_CHAT_TITLE } from './chats.ts';
export {
  MessagesRepo,
  type MessagePatch,
  type MessageRole,
  type MessageStatus,
  type NewMessage,
  type Truncation,
} from './messages.ts';
export { DEFAULT_FLUSH_INTERVAL_MS, StreamingAnswer, type FinalStatus, type FinishDetails } from './streaming.ts';
export { ModelsRepo, type ModelFileRecord, type ModelFileSource } from './models.ts';
export {
  DownloadsRepo,
  type DownloadPatch,
  type DownloadRecord,
  type DownloadStatus,
  type NewDownload,
} from './downloads.ts';
import { writeTransaction } from './transaction.ts';

export interface StorageOptions extends OpenDatabaseOptions {
  /** Streaming answers are written at most this often (ms, default 250). */
  flushIntervalMs?: number;
  /** Errors of timed writes of streaming answers. Default: console.error. */
  onError?: (e: unknown) => void;
}

export interface RecoveryReport {
  /** Answers that were streaming, now 'interrupted'. */
  messages: number;
  /** Documents cut off while importing or compressing, now 'failed' (or 'stale' when they had a cache). */
  documents: number;
  /** Downloads that were running, now 'paused'. */
  downloads: number;
}

export class Storage {
  readonly settings: SettingsRepo;
  readonly documents: DocumentsRepo;
  readonly stats: StatsRepo;
  readonly chats: ChatsRepo;
  readonly messages: MessagesRepo;
  readonly models: ModelsRepo;
  readonly downloads: DownloadsRepo;
  /** A document's content (pages, tokens, character map) stored off the event loop (write-thread.ts). */
  readonly content: ContentWriter;

  private constructor(
    /** The connection, for what the repositories do not cover (and for tests). */
    readonly db: Database.Database,
    readonly file: string,
    /** Schema versions applied when this connection opened. */
    readonly migrated: number[],
    readonly journalMode: string,
    scheduler: Scheduler,
    options: StorageOptions,
  ) {
    this.models = new ModelsRepo(db, scheduler);
    this.settings = new SettingsRepo(db, scheduler, this.models);
    this.stats = new StatsRepo(db, scheduler);
    this.documents = new DocumentsRepo(db, scheduler, this.stats);
    this.chats = new ChatsRepo(db, scheduler);
    this.messages = new MessagesRepo(db, scheduler, this.chats, {
      flushIntervalMs: options.flushIntervalMs,
      onError: options.onError,
    });
    this.downloads = new DownloadsRepo(db, scheduler);
    this.content = new ContentWriter(file, options.busyTimeoutMs ?? 5000, scheduler);
  }

  /**
   * Opens the database in `dir` (creating the folder and file when needed) and migrates it. Throws
   * StorageError: STORAGE_NEWER_SCHEMA, STORAGE_SCHEMA_MISMATCH, STORAGE_CORRUPT, STORAGE_NOT_FOLIO or
   * STORAGE_OPEN_FAILED, leaving the file as it was.
   */
  static open(dir: string, options: StorageOptions = {}): Storage {
    const scheduler = options.scheduler ?? systemScheduler;
    const { db, file, migrated, journalMode } = openDatabase(dir, { ...options, scheduler });
    return new Storage(db, file, migrated, journalMode, scheduler, options);
  }

  /**
   * The startup recovery, in one transaction: streaming answers become interrupted, documents cut off
   * while importing/compressing become failed (or stale), running downloads become paused. Call it once,
   * when this process is the only Folio on the data folder (the app's single-instance lock).
   */
  recover(): RecoveryReport {
    return writeTransaction(this.db, () => ({
      messages: this.messages.recoverInterrupted(),
      documents: this.documents.recoverInterrupted(),
      downloads: this.downloads.recoverInterrupted(),
    }));
  }

  get open(): boolean {
    return this.db.open;
  }

  /** Finishes answers still streaming as 'interrupted' (with all their text), then closes the connection. */
  close(): void {
    if (!this.db.open) return;
    for (const answer of this.messages.openStreams()) {
      try {
        answer.finish('interrupted');
      } catch {
        answer.drop();
      }
    }
    void this.content.close(); // its thread finishes the write under way, then closes its own connection
    this.db.close();
  }
}

export function openStorage(dir: string, options: StorageOptions = {}): Storage {
  return Storage.open(dir, options);
}
