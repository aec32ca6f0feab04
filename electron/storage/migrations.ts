// Versioned schema migrations. Each migration is a small named step; the table schema_migrations records
// the ones applied. Every step runs in its own transaction together with its row in that table, so a step
// is applied completely or not at all. Append new steps at the end; never edit or renumber a released one.
//
// A step that has to rebuild a table (SQLite's ALTER TABLE cannot change a column or a CHECK) says so
// (`rebuilds`): foreign keys are turned off around its transaction and checked before it commits, following
// https://sqlite.org/lang_altertable.html#otheralter (rebuildTable).
import type Database from 'better-sqlite3';

import { isoTime, type Scheduler } from './clock.ts';
import { writeTransaction } from './transaction.ts';

export interface Migration {
  version: number;
  name: string;
  up(db: Database.Database): void;
  /** It rebuilds a table (rebuildTable): foreign keys off around its transaction. */
  rebuilds?: true;
}

/**
 * Rebuilds `table` with its CREATE statement changed by `change` (SQLite's way to change what ALTER TABLE cannot):
 * a new table of the changed schema, every row copied, the old one dropped, the new one renamed, its indexes made
 * again. Only within a step marked `rebuilds` (foreign keys off: dropping the old table must not cascade).
 */
export function rebuildTable(db: Database.Database, table: string, change: (sql: string) => string): void {
  const sql = db
    .prepare(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`)
    .pluck()
    .get(table) as string;
  const indexes = db
    .prepare(`SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL`)
    .pluck()
    .all(table) as string[];
  const changed = change(sql);
  if (changed === sql) throw new Error(`migration: rebuilding ${table} changes nothing`);
  const temp = `${table}_rebuilt`;
  db.exec(changed.replace(/^CREATE TABLE "?\w+"?/, `CREATE TABLE ${temp}`));
  db.exec(`INSERT INTO ${temp} SELECT * FROM ${table}; DROP TABLE ${table}; ALTER TABLE ${temp} RENAME TO ${table};`);
  for (const index of indexes) db.exec(index);
}

/** 'Foli' in ASCII: the SQLite header's application id of a Folio database. */
export const APPLICATION_ID = 0x466f6c69;

export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'settings',
    up(db) {
      db.pragma(`application_id = ${APPLICATION_ID}`);
      db.exec(`
        -- One row: the settings document as JSON, without modelFolders (in model_folders).
        CREATE TABLE settings (
          id         INTEGER PRIMARY KEY CHECK (id = 1),
          json       TEXT NOT NULL,
          updated_at TEXT NOT NULL
        );
      `);
    },
  },
  {
    version: 2,
    name: 'documents',
    up(db) {
      db.exec(`
        CREATE TABLE documents (
          id                TEXT PRIMARY KEY,
          title             TEXT NOT NULL,
          kind              TEXT NOT NULL CHECK (kind IN ('pdf', 'docx', 'markdown', 'text')),
          file_name         TEXT NOT NULL,
          file_sha256       TEXT,
          status            TEXT NOT NULL CHECK (status IN ('importing', 'compressing', 'ready', 'failed', 'stale')),
          error             TEXT,
          created_at        TEXT NOT NULL,
          updated_at        TEXT NOT NULL,
          page_count        INTEGER NOT NULL DEFAULT 0,
          token_count       INTEGER NOT NULL DEFAULT 0,
          tokens            BLOB,     -- int32 little-endian token ids
          char_map          BLOB,     -- int32 little-endian, per token (the document service's layout)
          model_id          TEXT,
          model_fingerprint TEXT,
          compression       TEXT,     -- CompressionSettings as JSON
          kv_path           TEXT,     -- the saved KV cache file
          kv_bytes_full     INTEGER,
          kv_bytes_kept     INTEGER
        );
        CREATE INDEX documents_by_created ON documents (created_at);
        CREATE INDEX documents_by_sha256 ON documents (file_sha256);

        CREATE TABLE document_pages (
          document_id TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
          page        INTEGER NOT NULL CHECK (page >= 1),
          text        TEXT NOT NULL,
          token_start INTEGER NOT NULL,
          token_end   INTEGER NOT NULL,
          PRIMARY KEY (document_id, page)
        );

        -- The engine's statistics of the saved cache; the retention map apart, as a BLOB.
        CREATE TABLE compression_stats (
          document_id      TEXT PRIMARY KEY REFERENCES documents (id) ON DELETE CASCADE,
          json             TEXT NOT NULL,  -- CompressionStats without token_retention
          retention        BLOB NOT NULL,
          retention_format TEXT NOT NULL CHECK (retention_format IN ('i32', 'f64')),
          created_at       TEXT NOT NULL
        );
      `);
    },
  },
  {
    version: 3,
    name: 'chats and messages',
    up(db) {
      db.exec(`
        CREATE TABLE chats (
          id          TEXT PRIMARY KEY,
          document_id TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
          title       TEXT NOT NULL,
          created_at  TEXT NOT NULL,
          updated_at  TEXT NOT NULL
        );
        CREATE INDEX chats_by_document ON chats (document_id, updated_at);

        CREATE TABLE messages (
          id                TEXT PRIMARY KEY,
          chat_id           TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
          seq               INTEGER NOT NULL,  -- order in the chat
          role              TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
          text              TEXT NOT NULL,
          status            TEXT NOT NULL CHECK (status IN ('complete', 'streaming', 'interrupted', 'cancelled', 'failed')),
          created_at        TEXT NOT NULL,
          updated_at        TEXT NOT NULL,
          tokens            INTEGER,
          tokens_per_second REAL,
          page_refs         TEXT NOT NULL DEFAULT '[]',  -- JSON array of page numbers
          error             TEXT,
          cache_tokens      INTEGER,  -- tokens the message occupies in the session's KV cache; NULL: unknown
          UNIQUE (chat_id, seq)
        );
        CREATE INDEX messages_streaming ON messages (status) WHERE status = 'streaming';
      `);
    },
  },
  {
    version: 4,
    name: 'models and downloads',
    up(db) {
      db.exec(`
        -- Folders the user added to the model search (Settings.modelFolders), in the user's order.
        CREATE TABLE model_folders (
          path     TEXT PRIMARY KEY,
          position INTEGER NOT NULL,
          added_at TEXT NOT NULL
        );
        -- Model files added one by one, or downloaded.
        CREATE TABLE model_files (
          path     TEXT PRIMARY KEY,
          source   TEXT NOT NULL CHECK (source IN ('added', 'download')),
          added_at TEXT NOT NULL
        );
        CREATE TABLE downloads (
          id              TEXT PRIMARY KEY,
          url             TEXT NOT NULL,
          destination     TEXT NOT NULL,
          catalog_id      TEXT,
          expected_sha256 TEXT,
          total_bytes     INTEGER,
          bytes_done      INTEGER NOT NULL DEFAULT 0,
          etag            TEXT,  -- the server's validator, for a Range request with If-Range on resume
          status          TEXT NOT NULL CHECK (status IN ('queued', 'running', 'paused', 'done', 'failed', 'cancelled')),
          error           TEXT,
          created_at      TEXT NOT NULL,
          updated_at      TEXT NOT NULL
        );
      `);
    },
  },
  {
    version: 5,
    name: 'the prefix a saved cache was made from',
    up(db) {
      // The compressed cache holds the system prompt along with the document: a key of the prefix's text
      // besides the document (a hash of the system prompt) ties the cache to it. NULL: made before this
      // was recorded, taken as matching rather than rebuilding every document after an upgrade.
      db.exec(`ALTER TABLE documents ADD COLUMN prefix_key TEXT;`);
    },
  },
  {
    version: 6,
    name: 'compression statistics in camelCase',
    up(db) {
      // The contract names every field in camelCase (electron/shared/kv/stats.ts); statistics stored before were
      // snake_case. Rewrites each stored JSON with the new names, keeping every value (and any key it
      // does not know). The names are spelt out here, not taken from the current table: a released step
      // must do the same thing whatever the tables become.
      rewriteStoredStats(db, statsToCamelCase);
    },
  },
  {
    version: 7,
    name: 'how a document was read',
    up(db) {
      // Statistics gained how the document was read (one pass or chunks), the cache's peak and bound, and
      // its positions. Every cache stored before was read in one pass at its own positions; its peak was
      // not measured (0).
      rewriteStoredStats(db, (s: { prefixTokens?: number }) => {
        const L = s.prefixTokens ?? 0;
        return { chunks: 1, chunkTokens: L, kvBytesPeak: 0, kvBytesBound: 0, positions: L, rebased: false, ...s };
      });
    },
  },
  {
    version: 8,
    name: 'the context a document was read into, and how',
    up(db) {
      // A long document is read into a context sized to it (its positions); a saved cache is loaded into the
      // same. NULL: read before this was recorded, into the settings' context. read_note: what the app
      // said about how it read the document (one pass, chunks, re-based positions).
      db.exec(`ALTER TABLE documents ADD COLUMN context_tokens INTEGER;
               ALTER TABLE documents ADD COLUMN read_note TEXT;`);
    },
  },
  {
    version: 9,
    name: 'the pages a read took in',
    up(db) {
      // A range of pages is read while every page keeps its text: read_first and read_last name the range the
      // cache holds. NULL: the whole document. A document read before this held only the pages it read (a
      // range read dropped the others), so NULL says the truth for it too.
      db.exec(`ALTER TABLE documents ADD COLUMN read_first INTEGER;
               ALTER TABLE documents ADD COLUMN read_last INTEGER;`);
    },
  },
  {
    version: 10,
    name: 'the positions a conversation takes in the cache',
    up(db) {
      // Older turns are compressed or set aside when the context fills, so a conversation takes fewer
      // positions than its messages' tokens: the meter shows what the cache held after the last answer, also
      // once the app is restarted. conversation_messages: the message count it was measured at (NULL: never).
      db.exec(`ALTER TABLE chats ADD COLUMN conversation_positions INTEGER;
               ALTER TABLE chats ADD COLUMN conversation_messages INTEGER;`);
    },
  },
  {
    version: 11,
    name: 'earlier versions of regenerated answers',
    up(db) {
      // Regenerating an answer keeps the one it replaces. The messages row holds the version shown (the one
      // the conversation replays); answer_versions holds the others, each with its number among them all
      // (1 = the first answer). messages.version: the number of the version the row holds.
      db.exec(`
        ALTER TABLE messages ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
        CREATE TABLE answer_versions (
          message_id        TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
          version           INTEGER NOT NULL CHECK (version >= 1),
          text              TEXT NOT NULL,
          status            TEXT NOT NULL CHECK (status IN ('complete', 'interrupted', 'cancelled', 'failed')),
          created_at        TEXT NOT NULL,
          tokens            INTEGER,
          tokens_per_second REAL,
          page_refs         TEXT NOT NULL DEFAULT '[]',
          error             TEXT,
          cache_tokens      INTEGER,
          PRIMARY KEY (message_id, version)
        );
      `);
    },
  },
  {
    version: 12,
    name: 'why a document failed',
    up(db) {
      // The code of a failed import or read (CORRUPT, PASSWORD_REQUIRED, ENGINE_CRASHED...), which says what
      // can help (contract.ts, failureRemedy). NULL: not failed, or failed before this was recorded.
      db.exec(`ALTER TABLE documents ADD COLUMN error_code TEXT;`);
    },
  },
  {
    version: 13,
    name: "the citations of an answer, from the model's attention",
    up(db) {
      // The pages and sentences an answer's attention went to (contract.ts CitedPage[], JSON), on the answer
      // shown and on its earlier versions. NULL: none measured (answers before this, the OpenAI endpoint, a
      // document read with re-based positions).
      db.exec(`
        ALTER TABLE messages ADD COLUMN citations TEXT;
        ALTER TABLE answer_versions ADD COLUMN citations TEXT;
      `);
    },
  },
  {
    version: 14,
    name: "a layer's sliding window",
    up(db) {
      // Each layer's statistics gained its sliding window (slidingWindow, kept by its window rather than
      // scored). Every cache stored before compressed every layer by scores: 0.
      rewriteStoredStats(db, (s: { layers?: Record<string, unknown>[] }) => ({
        ...s,
        layers: (s.layers ?? []).map((l) => ({ slidingWindow: 0, ...l })),
      }));
    },
  },
  {
    version: 15,
    name: "a document's token ids and character map apart from its row",
    up(db) {
      // The two blobs (megabytes for a long document) sat in the middle of every document's row, so each read
      // of a later column (the library list, every status change) walked their overflow pages: a 1,900-page
      // document cost ~100 ms a read. They move to a table of their own, read only when asked for.
      db.exec(`
        CREATE TABLE document_tokens (
          document_id TEXT PRIMARY KEY REFERENCES documents (id) ON DELETE CASCADE,
          tokens      BLOB NOT NULL,  -- int32 little-endian token ids
          char_map    BLOB            -- int32 little-endian, per token (the document service's layout)
        );
        INSERT INTO document_tokens (document_id, tokens, char_map)
          SELECT id, tokens, char_map FROM documents WHERE tokens IS NOT NULL;
        ALTER TABLE documents DROP COLUMN tokens;
        ALTER TABLE documents DROP COLUMN char_map;
      `);
    },
  },
  {
    version: 16,
    name: 'no model fingerprint',
    up(db) {
      // A column of an earlier design that nothing wrote or read: the model a cache was made with is its
      // model_id (the library's model, which names the file).
      db.exec(`ALTER TABLE documents DROP COLUMN model_fingerprint;`);
    },
  },
  {
    version: 17,
    name: 'chat style; what a read kept; edited questions keep their branch',
    up(db) {
      // An edited question keeps its earlier version as an answer's does, with what followed it (JSON: the
      // messages after it and their earlier versions), so that the user can go back to that branch.
      db.exec(`ALTER TABLE answer_versions ADD COLUMN branch TEXT;`);
      // How a chat's turns are written (contract ChatStyle); NULL: by the model, as every chat was before.
      db.exec(`ALTER TABLE chats ADD COLUMN style TEXT CHECK (style IN ('chat', 'completion'));`);
      // What the library shows of a read without its statistics (DocumentSummary.kept), from them.
      db.exec(`ALTER TABLE documents ADD COLUMN kept_per_head INTEGER;
        ALTER TABLE documents ADD COLUMN kept_positions INTEGER;
        ALTER TABLE documents ADD COLUMN kept_placement TEXT CHECK (kept_placement IN ('own', 'packed', 'rebased'));`);
      const update = db.prepare(
        `UPDATE documents SET kept_per_head = ?, kept_positions = ?, kept_placement = ? WHERE id = ?`,
      );
      const rows = db.prepare(`SELECT document_id AS id, json FROM compression_stats`).all() as {
        id: string;
        json: string;
      }[];
      for (const r of rows) {
        const s = JSON.parse(r.json) as {
          compressed?: boolean;
          budget?: number;
          positions?: number;
          rebased?: boolean;
        };
        if (typeof s.positions !== 'number') continue;
        // Before packed positions, a read was re-based only where the document was longer than its context.
        update.run(s.compressed ? (s.budget ?? null) : null, s.positions, s.rebased ? 'rebased' : 'own', r.id);
      }
    },
  },
  {
    version: 18,
    name: 'a chat over a set of documents',
    up(db) {
      // A chat's documents, in the order the model reads them (chats.document_id stays the first, the one its
      // chats are listed under before). A chat goes with any of its documents, as it went with its one.
      db.exec(`
        CREATE TABLE chat_documents (
          chat_id     TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
          document_id TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
          ordinal     INTEGER NOT NULL,
          PRIMARY KEY (chat_id, document_id)
        );
        CREATE INDEX chat_documents_by_document ON chat_documents (document_id);
        INSERT INTO chat_documents (chat_id, document_id, ordinal) SELECT id, document_id, 0 FROM chats;
        CREATE TRIGGER chat_goes_with_its_documents AFTER DELETE ON chat_documents
          BEGIN DELETE FROM chats WHERE id = OLD.chat_id; END;
      `);
      // How a set is read (contract SetReading): its saved caches side by side, or together as one read.
      db.exec(`ALTER TABLE chats ADD COLUMN reading TEXT NOT NULL DEFAULT 'assembled'
        CHECK (reading IN ('assembled', 'together'));`);
    },
  },
  {
    version: 19,
    name: 'one budget over a set',
    up(db) {
      // The share of its documents' kept entries an assembled set keeps, chosen over them all by the reads' scores
      // (contract ChatSummary.setBudget); null: each document keeps what its own read kept.
      db.exec(
        `ALTER TABLE chats ADD COLUMN set_budget REAL CHECK (set_budget IS NULL OR (set_budget > 0 AND set_budget <= 1));`,
      );
    },
  },
  {
    version: 20,
    name: 'pages read by OCR',
    up(db) {
      // A page without a text layer read by OCR (contract PageOcr): the language, its words' mean confidence, and
      // the words where they are on the page (JSON, contract OcrWord[]), which the document view draws.
      db.exec(`
        ALTER TABLE document_pages ADD COLUMN ocr_language TEXT;
        ALTER TABLE document_pages ADD COLUMN ocr_confidence REAL;
        ALTER TABLE document_pages ADD COLUMN ocr_words TEXT;
      `);
      // Images (PNG, JPEG) are documents of their own kind (contract DocumentKind).
      rebuildTable(db, 'documents', (sql) =>
        sql.replace(
          "CHECK (kind IN ('pdf', 'docx', 'markdown', 'text'))",
          "CHECK (kind IN ('pdf', 'docx', 'markdown', 'text', 'image'))",
        ),
      );
    },
    rebuilds: true,
  },
];

export const LATEST_VERSION = migrations[migrations.length - 1].version;

/** Rewrites every stored compression statistics JSON through `rewrite` (a migration step's change). */
function rewriteStoredStats<T>(db: Database.Database, rewrite: (stats: T) => unknown): void {
  const rows = db.prepare(`SELECT document_id AS id, json FROM compression_stats`).all() as {
    id: string;
    json: string;
  }[];
  const update = db.prepare(`UPDATE compression_stats SET json = ? WHERE document_id = ?`);
  for (const r of rows) update.run(JSON.stringify(rewrite(JSON.parse(r.json) as T)), r.id);
}

/** Version 6's renames of the statistics' fields: whole statistics, a layer's, a head's. */
const STATS_RENAMES: Record<'stats' | 'layer' | 'head', Record<string, string>> = {
  stats: {
    prefix_tokens: 'prefixTokens',
    kv_type: 'kvType',
    budget_selectable: 'budgetSelectable',
    budget_clamped: 'budgetClamped',
    kv_bytes_full: 'kvBytesFull',
    kv_bytes_kept: 'kvBytesKept',
    ms_prefill: 'msPrefill',
    ms_compress: 'msCompress',
    token_retention: 'tokenRetention',
  },
  layer: {
    bytes_full: 'bytesFull',
    bytes_kept: 'bytesKept',
    eps_over_c: 'epsOverC',
    attn_l1: 'attnL1',
    ms_score: 'msScore',
    ms_select: 'msSelect',
    ms_compact: 'msCompact',
  },
  head: { retained_mass: 'retainedMass' },
};

function renamed(o: unknown, names: Record<string, string>): unknown {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) return o;
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [names[k] ?? k, v]));
}

/** Stored snake_case statistics with version 6's names (camelCase ones pass through unchanged). */
export function statsToCamelCase(json: unknown): unknown {
  const s = renamed(json, STATS_RENAMES.stats) as { layers?: unknown } | null;
  if (!s || typeof s !== 'object' || !Array.isArray(s.layers)) return s;
  return {
    ...s,
    layers: s.layers.map((l) => {
      const layer = renamed(l, STATS_RENAMES.layer) as { heads?: unknown } | null;
      if (!layer || typeof layer !== 'object' || !Array.isArray(layer.heads)) return layer;
      return { ...layer, heads: layer.heads.map((h) => renamed(h, STATS_RENAMES.head)) };
    }),
  };
}

export interface AppliedMigration {
  version: number;
  name: string;
  appliedAt: string;
}

export function hasMigrationTable(db: Database.Database): boolean {
  return (
    db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).get() !== undefined
  );
}

export function appliedMigrations(db: Database.Database): AppliedMigration[] {
  if (!hasMigrationTable(db)) return [];
  return db
    .prepare(`SELECT version, name, applied_at AS appliedAt FROM schema_migrations ORDER BY version`)
    .all() as AppliedMigration[];
}

/**
 * Applies the steps not applied yet, each in an IMMEDIATE transaction (so two processes opening the same
 * database cannot both apply a step). Returns the versions applied now. The caller has checked beforehand
 * that the database is not newer than this build.
 */
export function migrate(
  db: Database.Database,
  scheduler: Scheduler,
  list: readonly Migration[] = migrations,
): number[] {
  db.exec(`
    CREATE TABLE IF NOT EXISTS schema_migrations (
      version    INTEGER PRIMARY KEY,
      name       TEXT NOT NULL,
      applied_at TEXT NOT NULL
    )
  `);
  const isApplied = db.prepare(`SELECT 1 FROM schema_migrations WHERE version = ?`);
  const record = db.prepare(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`);
  const done: number[] = [];
  for (const m of list) {
    const keys = m.rebuilds ? (db.pragma('foreign_keys', { simple: true }) as number) : 0;
    if (m.rebuilds) db.pragma('foreign_keys = OFF');
    try {
      const applied = writeTransaction(db, () => {
        if (isApplied.get(m.version) !== undefined) return false;
        m.up(db);
        // What the rebuild left must still hold together: no row pointing at nothing.
        if (m.rebuilds && (db.pragma('foreign_key_check') as unknown[]).length)
          throw new Error(`migration ${m.version}: a rebuilt table breaks a foreign key`);
        record.run(m.version, m.name, isoTime(scheduler));
        return true;
      });
      if (applied) done.push(m.version);
    } finally {
      if (m.rebuilds && keys) db.pragma('foreign_keys = ON');
    }
  }
  return done;
}
