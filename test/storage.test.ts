// Storage (electron/storage/): migrations and the checks on open (newer schema, damaged file, someone
// else's database), settings, documents, statistics, chats and messages, cascades, the throttled writes of
// streaming answers on a fake clock, recovery of answers cut off by a crash (in process, and by killing a
// child process), downloads, and readers working while another connection writes (WAL).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
  closeSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

import Database from 'better-sqlite3';

import {
  ChatSummary,
  CompressionStats as CompressionStatsSchema,
  DocumentSummary,
  Message,
  Settings,
  type CompressionStats,
} from '../electron/api/contract.ts';
import {
  DATABASE_FILE,
  DEFAULT_SETTINGS,
  LATEST_VERSION,
  openStorage,
  StorageError,
  migrations,
  type Scheduler,
  type Storage,
  type StorageOptions,
} from '../electron/storage/index.ts';
import { migrate, type Migration } from '../electron/storage/migrations.ts';
import { RECOMMENDED_METHOD } from '../electron/shared/kv/methods.ts';

const repoRoot = resolve(fileURLToPath(new URL('..', import.meta.url)));

// ---------------------------------------------------------------------------------------------------------
// Helpers

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'folio-storage-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A clock whose time moves only when the test says so; timers fire in order during advance(). */
class FakeClock implements Scheduler {
  t = Date.parse('2025-03-01T12:00:00.000Z');
  private readonly timers = new Map<number, { at: number; fn: () => void }>();
  private nextId = 1;

  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.set(id, { at: this.t + Math.max(0, ms), fn });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }
  get pendingTimers(): number {
    return this.timers.size;
  }
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | null = null;
      for (const e of this.timers) if (e[1].at <= end && (!next || e[1].at < next[1].at)) next = e;
      if (!next) break;
      this.timers.delete(next[0]);
      this.t = next[1].at;
      next[1].fn();
    }
    this.t = end;
  }
}

function open(dir: string, options: StorageOptions = {}): Storage {
  return openStorage(dir, options);
}

function sha(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

function expectStorageError(fn: () => unknown, code: string, messagePart?: RegExp): StorageError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof StorageError, `expected StorageError ${code}, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (messagePart) assert.match(caught.message, messagePart);
  return caught;
}

function count(s: Storage, sql: string, ...params: unknown[]): number {
  return s.db
    .prepare(sql)
    .pluck()
    .get(...params) as number;
}

function sampleStats(
  prefixTokens: number,
  retention: Int32Array | number[],
): CompressionStats & { tokenRetention: never } {
  return {
    method: 'ada-snapkv',
    prefixTokens: prefixTokens,
    window: 32,
    kernel: 7,
    alpha: 0.2,
    kvType: 'f16',
    compressed: true,
    reason: null,
    budget: 64,
    budgetSelectable: 32,
    budgetClamped: false,
    kvBytesFull: 1_000_000,
    kvBytesKept: 200_000,
    msPrefill: 12.5,
    msCompress: 1.25,
    chunks: 2,
    chunkTokens: 512,
    kvBytesPeak: 400_000,
    kvBytesBound: 420_000,
    positions: prefixTokens,
    rebased: false,
    layers: [
      {
        budget: 128,
        slidingWindow: 0,
        bytesFull: 500_000,
        bytesKept: 100_000,
        epsOverC: 0.5,
        attnL1: null,
        msScore: 0.1,
        msSelect: 0.2,
        msCompact: 0.3,
        heads: [
          { kept: 70, retainedMass: 0.9, concentration: 0.1 },
          { kept: 58, retainedMass: 0.85, concentration: 0.2 },
        ],
      },
    ],
    tokenRetention: retention as never,
  };
}

/** A document with pages, tokens, a saved cache and statistics. */
function makeDocument(s: Storage, title = 'Report', kvPath = `/cache/${title}.kv`) {
  const d = s.documents.create({ title, kind: 'pdf', fileName: `${title}.pdf`, sha256: 'ab'.repeat(32) });
  const tokens = Int32Array.from({ length: 300 }, (_, i) => (i * 7919) % 32000);
  s.documents.setContent(d.id, {
    pages: [
      { page: 1, text: 'First page.', tokenStart: 0, tokenEnd: 120 },
      { page: 2, text: 'Second page.', tokenStart: 120, tokenEnd: 300 },
    ],
    tokens,
    charMap: Int32Array.from({ length: 300 }, (_, i) => i * 3),
  });
  s.documents.saveCache(d.id, {
    kvPath,
    modelId: 'model-1',
    compression: { ...DEFAULT_SETTINGS.compression },
    kvBytesFull: 1_000_000,
    kvBytesKept: 200_000,
    stats: sampleStats(
      300,
      Int32Array.from({ length: 300 }, (_, i) => i % 11),
    ),
  });
  return { id: d.id, tokens };
}

// ---------------------------------------------------------------------------------------------------------
// Opening and migrations

test('a new data folder gets every migration, WAL mode and foreign keys; reopening applies nothing', () => {
  const dir = join(tempDir(), 'nested', 'data');
  const s = open(dir);
  assert.deepEqual(
    s.migrated,
    migrations.map((m) => m.version),
  );
  assert.equal(s.journalMode, 'wal');
  assert.equal(s.file, join(dir, DATABASE_FILE));
  assert.equal(s.db.pragma('foreign_keys', { simple: true }), 1);
  const applied = s.db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all();
  assert.deepEqual(
    applied,
    migrations.map((m) => ({ version: m.version, name: m.name })),
  );
  assert.equal(Math.max(...migrations.map((m) => m.version)), LATEST_VERSION);
  for (const t of [
    'settings',
    'documents',
    'document_pages',
    'compression_stats',
    'chats',
    'messages',
    'model_folders',
    'model_files',
    'downloads',
  ]) {
    assert.equal(count(s, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, t), 1, t);
  }
  const doc = s.documents.create({ title: 'Kept', kind: 'text', fileName: 'kept.txt' });
  s.close();

  const again = open(dir);
  assert.deepEqual(again.migrated, []);
  assert.equal(again.documents.get(doc.id)?.title, 'Kept');
  again.close();
});

/** A new database in a folder of its own, migrated up to `version` only (as a build of that time left it). */
function databaseAt(version: number) {
  const dir = tempDir();
  const clock = new FakeClock();
  const old = new Database(join(dir, DATABASE_FILE));
  migrate(
    old,
    clock,
    migrations.filter((m) => m.version <= version),
  );
  return { dir, clock, old };
}

test("versions 15 to 17: a document's token ids and character map move out of its row, nothing lost; chats get a style", () => {
  const { dir, clock, old } = databaseAt(14);
  const insert = old.prepare(
    `INSERT INTO documents (id, title, kind, file_name, status, created_at, updated_at, token_count, tokens, char_map)
       VALUES (?, ?, 'text', 'a.txt', 'ready', 'x', 'x', ?, ?, ?)`,
  );
  const tokens = Int32Array.from([5, 6, 7]);
  const charMap = Int32Array.from([1, 0, 2, 1, 2, 4, 1, 4, 6]);
  insert.run('read', 'Read', 3, Buffer.from(tokens.buffer), Buffer.from(charMap.buffer));
  insert.run('unread', 'Unread', 0, null, null);
  old.close();

  const s = open(dir, { scheduler: clock });
  assert.deepEqual(s.migrated, [15, 16, 17, 18, 19, 20]);
  assert.deepEqual(s.documents.tokens('read'), tokens);
  assert.deepEqual(s.documents.charMap('read'), charMap);
  assert.equal(s.documents.tokens('unread'), null);
  assert.equal(s.documents.require('read').tokens, 3);
  const columns = (s.db.prepare(`PRAGMA table_info(documents)`).all() as { name: string }[]).map((c) => c.name);
  assert.ok(!columns.includes('tokens') && !columns.includes('char_map'), columns.join(', '));
  assert.ok(!columns.includes('model_fingerprint'), 'version 16: the unused column is gone');
  // Version 17: a chat made before keeps the model's style (null); a style set is kept.
  const chat = s.chats.create('read');
  assert.equal(chat.style, null);
  assert.equal(s.chats.setStyle(chat.id, 'completion').style, 'completion');
  assert.throws(() => s.db.prepare(`UPDATE chats SET style = 'poem' WHERE id = ?`).run(chat.id), /CHECK/);
  // Deleting the document deletes its tokens too.
  s.documents.delete('read');
  assert.equal(s.db.prepare(`SELECT COUNT(*) FROM document_tokens`).pluck().get(), 0);
  s.close();
});

test('statistics stored in snake_case before version 6 open as camelCase and read in one pass, nothing lost', () => {
  // A database as version 5 left it, holding statistics in the names of that time.
  const { dir, clock, old } = databaseAt(5);
  old
    .prepare(
      `INSERT INTO documents (id, title, kind, file_name, status, created_at, updated_at) VALUES ('d1', 'Old', 'text', 'old.txt', 'ready', 'x', 'x')`,
    )
    .run();
  const stored = {
    method: 'ada-snapkv',
    prefix_tokens: 4,
    window: 2,
    kernel: 1,
    alpha: 0.2,
    kv_type: 'f16',
    compressed: true,
    reason: null,
    budget: 3,
    budget_selectable: 1,
    budget_clamped: true,
    kv_bytes_full: 1024,
    kv_bytes_kept: 768,
    ms_prefill: 5.5,
    ms_compress: 0.5,
    layers: [
      {
        budget: 3,
        bytes_full: 1024,
        bytes_kept: 768,
        eps_over_c: 0.25,
        attn_l1: 0.125,
        ms_score: 0.1,
        ms_select: 0.2,
        ms_compact: 0.3,
        heads: [{ kept: 3, retained_mass: 0.875, concentration: 0.5 }],
      },
    ],
  };
  const retention = Buffer.from(Int32Array.from([1, 0, 1, 1]).buffer);
  old
    .prepare(
      `INSERT INTO compression_stats (document_id, json, retention, retention_format, created_at) VALUES ('d1', ?, ?, 'i32', 'x')`,
    )
    .run(JSON.stringify(stored), retention);
  old.close();

  const s = open(dir, { scheduler: clock });
  assert.deepEqual(
    s.migrated,
    migrations.map((m) => m.version).filter((v) => v >= 6),
  );
  // version 9: a document read before held only the pages it read, so it read them all
  assert.equal(s.documents.require('d1').readPages, null);
  const back = s.stats.get('d1')!;
  assert.deepEqual(back, {
    method: 'ada-snapkv',
    prefixTokens: 4,
    window: 2,
    kernel: 1,
    alpha: 0.2,
    kvType: 'f16',
    compressed: true,
    reason: null,
    budget: 3,
    budgetSelectable: 1,
    budgetClamped: true,
    kvBytesFull: 1024,
    kvBytesKept: 768,
    msPrefill: 5.5,
    msCompress: 0.5,
    // version 7: every cache stored before was read in one pass at its own positions, its peak unmeasured
    chunks: 1,
    chunkTokens: 4,
    kvBytesPeak: 0,
    kvBytesBound: 0,
    positions: 4,
    rebased: false,
    layers: [
      {
        budget: 3,
        slidingWindow: 0,
        bytesFull: 1024,
        bytesKept: 768,
        epsOverC: 0.25,
        attnL1: 0.125,
        msScore: 0.1,
        msSelect: 0.2,
        msCompact: 0.3,
        heads: [{ kept: 3, retainedMass: 0.875, concentration: 0.5 }],
      },
    ],
    tokenRetention: [1, 0, 1, 1],
  });
  assert.ok(CompressionStatsSchema.safeParse(back).success, "what is read back is the contract's shape");
  s.close();
});

test('a migration step is applied in a transaction: a failing step leaves no trace', () => {
  const db = new Database(':memory:');
  const steps: Migration[] = [
    { version: 1, name: 'one', up: (d) => d.exec('CREATE TABLE a (x)') },
    {
      version: 2,
      name: 'two fails',
      up: (d) => {
        d.exec('CREATE TABLE b (x)');
        throw new Error('step two broke');
      },
    },
  ];
  const clock = new FakeClock();
  assert.throws(() => migrate(db, clock, steps), /step two broke/);
  const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).pluck().all();
  assert.deepEqual(tables, ['a', 'schema_migrations']);
  assert.deepEqual(db.prepare('SELECT version, name, applied_at FROM schema_migrations').all(), [
    { version: 1, name: 'one', applied_at: new Date(clock.t).toISOString() },
  ]);
  // Fixed, the step applies on the next run; the first is not applied twice.
  steps[1] = { version: 2, name: 'two fails', up: (d) => d.exec('CREATE TABLE b (x)') };
  assert.deepEqual(migrate(db, clock, steps), [2]);
  assert.deepEqual(migrate(db, clock, steps), []);
  db.close();
});

test('a database written by a newer Folio is refused with a clear error and left unchanged', () => {
  const dir = tempDir();
  const s = open(dir);
  s.db
    .prepare(
      `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from the future', '2030-01-01T00:00:00.000Z')`,
    )
    .run(LATEST_VERSION + 5);
  s.close();
  const file = join(dir, DATABASE_FILE);
  const before = sha(file);
  const e = expectStorageError(() => open(dir), 'STORAGE_NEWER_SCHEMA', /newer version of Folio/);
  assert.match(e.message, new RegExp(`version ${LATEST_VERSION + 5}`));
  assert.match(e.message, new RegExp(`up to ${LATEST_VERSION}`));
  assert.equal(sha(file), before);
  assert.equal(existsSync(file + '-wal') && statSync(file + '-wal').size > 0, false);
});

test('a database whose applied step has another name (another build) is refused', () => {
  const dir = tempDir();
  const s = open(dir);
  s.db.prepare(`UPDATE schema_migrations SET name = 'something else' WHERE version = 2`).run();
  s.close();
  expectStorageError(() => open(dir), 'STORAGE_SCHEMA_MISMATCH', /something else/);
});

test('a file that is not a database is reported as damaged, and left as it was', () => {
  const dir = tempDir();
  const file = join(dir, DATABASE_FILE);
  writeFileSync(file, Buffer.concat([Buffer.from('this is not SQLite at all\n'), Buffer.alloc(8192, 0x5a)]));
  const before = sha(file);
  const e = expectStorageError(() => open(dir), 'STORAGE_CORRUPT', /damaged or is not a database/);
  assert.ok(e.message.includes(file), 'the message names the file');
  assert.match(e.message, /untouched/);
  assert.equal(sha(file), before);
  // Still refused the second time: nothing was recreated in its place.
  expectStorageError(() => open(dir), 'STORAGE_CORRUPT');
  assert.equal(sha(file), before);
});

test('a database with damaged pages is reported as damaged on open', () => {
  const dir = tempDir();
  const s = open(dir);
  for (let i = 0; i < 4; i++) {
    const d = s.documents.create({ title: `doc${i}`, kind: 'text', fileName: 'x.txt' });
    s.documents.setContent(d.id, {
      pages: [{ page: 1, text: 'x'.repeat(12_000), tokenStart: 0, tokenEnd: 3000 }],
      tokens: new Int32Array(3000),
    });
  }
  s.close();
  const file = join(dir, DATABASE_FILE);
  const pageSize = 4096;
  const pages = statSync(file).size / pageSize;
  assert.ok(pages > 10, `${pages} pages`);
  // Overwrite the headers of every page but the first (the schema) with garbage.
  const fd = openSync(file, 'r+');
  for (let p = 1; p < pages; p++) writeSync(fd, Buffer.alloc(24, 0xee), 0, 24, p * pageSize);
  closeSync(fd);
  const before = sha(file);
  expectStorageError(() => open(dir), 'STORAGE_CORRUPT', /damaged/);
  assert.equal(sha(file), before);
});

test('damage in a table that opening does not read is found by the integrity check on open', () => {
  const dir = tempDir();
  const s = open(dir);
  const d = s.documents.create({ title: 'long', kind: 'text', fileName: 'long.txt' });
  const pages = Array.from({ length: 40 }, (_, i) => ({
    page: i + 1,
    text: 'y'.repeat(2000),
    tokenStart: i,
    tokenEnd: i + 1,
  }));
  s.documents.setContent(d.id, { pages, tokens: [1, 2, 3] });
  const root = count(s, `SELECT rootpage FROM sqlite_master WHERE name = 'document_pages'`);
  const pageSize = Number(s.db.pragma('page_size', { simple: true }));
  s.close();
  const file = join(dir, DATABASE_FILE);
  const fd = openSync(file, 'r+');
  writeSync(fd, Buffer.alloc(12, 0xee), 0, 12, (root - 1) * pageSize);
  closeSync(fd);
  const before = sha(file);
  const e = expectStorageError(() => open(dir), 'STORAGE_CORRUPT', /integrity check: .*Tree \d+ page \d+/);
  assert.ok(!e.message.includes('\n'), 'one line');
  assert.equal(sha(file), before);
  // Without the check the file opens, and the damage shows only when the table is read.
  const unchecked = open(dir, { integrityCheck: false });
  assert.equal(unchecked.documents.list().length, 1);
  assert.throws(() => unchecked.documents.pages(d.id), /malformed/);
  unchecked.db.close();
});

test("someone else's SQLite database is refused, not adopted", () => {
  const dir = tempDir();
  const other = new Database(join(dir, DATABASE_FILE));
  other.exec(`CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers (name) VALUES ('Ada')`);
  other.close();
  expectStorageError(() => open(dir), 'STORAGE_NOT_FOLIO', /not Folio's/);
  const check = new Database(join(dir, DATABASE_FILE), { readonly: true });
  assert.equal(check.prepare('SELECT name FROM customers').pluck().get(), 'Ada');
  assert.equal(check.prepare(`SELECT COUNT(*) FROM sqlite_master WHERE name = 'schema_migrations'`).pluck().get(), 0);
  check.close();
});

// ---------------------------------------------------------------------------------------------------------
// Settings

test('chats: the positions a conversation took, valid while its messages are unchanged', () => {
  const s = open(tempDir());
  const doc = s.documents.create({ title: 'd', kind: 'text', fileName: 'd.txt' });
  const chat = s.chats.create(doc.id);
  assert.equal(s.chats.conversationPositions(chat.id), null, 'never measured');
  s.messages.add(chat.id, { role: 'user', text: 'q' });
  s.messages.add(chat.id, { role: 'assistant', text: 'a' });
  s.chats.setConversationPositions(chat.id, { positions: 37, messages: 2 });
  assert.equal(s.chats.conversationPositions(chat.id), 37);
  s.messages.add(chat.id, { role: 'user', text: 'another' });
  assert.equal(s.chats.conversationPositions(chat.id), null, 'a message since: no longer the cache');
  s.chats.setConversationPositions(chat.id, { positions: 50, messages: 3 });
  s.chats.setConversationPositions(chat.id, null);
  assert.equal(s.chats.conversationPositions(chat.id), null, 'forgotten');
});

test('settings: the defaults', () => {
  const s = open(tempDir());
  const v = s.settings.get();
  assert.deepEqual(Settings.parse(v), v);
  assert.equal(v.modelId, null);
  assert.deepEqual(v.compression, {
    method: RECOMMENDED_METHOD,
    budget: 0.2,
    alpha: 0.2,
    window: 32,
    kernel: 7,
    positions: 'auto',
  });
  assert.deepEqual(v.sampling, {
    temperature: 0.7,
    topK: 40,
    topP: 0.95,
    minP: 0.05,
    repeatPenalty: 1.1,
    maxTokens: 512,
    seed: null,
  });
  assert.ok(v.systemPrompt.length > 20 && v.systemPrompt.length < 500);
  assert.equal(v.nCtx, null);
  assert.equal(v.threads, null);
  assert.equal(v.kvType, 'f16');
  assert.equal(v.theme, 'system');
  assert.deepEqual(v.modelFolders, []);
  // Reading writes nothing.
  assert.equal(count(s, 'SELECT COUNT(*) FROM settings'), 0);
  s.close();
});

test('settings: updates merge nested fields and persist', () => {
  const dir = tempDir();
  const s = open(dir);
  const a = s.settings.update({ sampling: { temperature: 0 }, theme: 'dark', modelId: 'm1' });
  assert.equal(a.sampling.temperature, 0);
  assert.equal(a.sampling.topK, 40, 'other sampling fields kept');
  assert.equal(a.theme, 'dark');
  assert.equal(a.modelId, 'm1');
  const b = s.settings.update({
    compression: { budget: 0.5, method: 'snapkv' },
    nCtx: 8192,
    modelFolders: ['/models/a', '/models/b', '/models/a'],
  });
  assert.deepEqual(b.compression, {
    method: 'snapkv',
    budget: 0.5,
    alpha: 0.2,
    window: 32,
    kernel: 7,
    positions: 'auto',
  });
  assert.equal(b.sampling.temperature, 0, 'earlier update kept');
  assert.deepEqual(b.modelFolders, ['/models/a', '/models/b']);
  assert.deepEqual(s.models.folders(), ['/models/a', '/models/b']);
  // Folders added through the models repository show in the settings.
  assert.equal(s.models.addFolder('/models/c'), true);
  assert.equal(s.models.addFolder('/models/c'), false);
  assert.deepEqual(s.settings.get().modelFolders, ['/models/a', '/models/b', '/models/c']);
  const c = s.settings.update({ modelId: null, modelFolders: ['/models/c', '/models/a'] });
  assert.equal(c.modelId, null);
  assert.deepEqual(c.modelFolders, ['/models/c', '/models/a']);
  s.close();

  const again = open(dir);
  assert.deepEqual(again.settings.get(), c);
  again.close();
});

test('settings: a bad patch is refused and nothing changes', () => {
  const s = open(tempDir());
  s.settings.update({ theme: 'light', modelFolders: ['/m'] });
  const before = s.settings.get();
  const row = s.db.prepare('SELECT json, updated_at FROM settings').get();
  const bad: unknown[] = [
    { sampling: { temperature: 'hot' } },
    { sampling: { temperature: 11 } },
    { compression: { kernel: 8 } },
    { compression: { method: 'magic' } },
    { compression: { budget: 0 } },
    { theme: 'purple' },
    { nCtx: 10 },
    { colour: 'red' },
    { sampling: { temprature: 0.5 } },
    { modelFolders: [''] },
    // A good field with a bad one: neither is applied.
    { theme: 'dark', modelFolders: ['/x'], sampling: { topP: 0 } },
    'not an object',
    null,
  ];
  for (const patch of bad) {
    const e = expectStorageError(() => s.settings.update(patch), 'BAD_REQUEST', /^settings: /);
    assert.ok(e.message.length > 'settings: '.length);
  }
  assert.deepEqual(s.settings.get(), before);
  assert.deepEqual(s.db.prepare('SELECT json, updated_at FROM settings').get(), row);
  assert.deepEqual(s.models.folders(), ['/m']);
  // The message names the field.
  expectStorageError(() => s.settings.update({ compression: { kernel: 8 } }), 'BAD_REQUEST', /compression\.kernel/);
  s.close();
});

test('settings: a stored field that no longer validates reads as its default; the rest is kept', () => {
  const s = open(tempDir());
  s.settings.update({ theme: 'dark', sampling: { topK: 5 } });
  const stored = JSON.parse(s.db.prepare('SELECT json FROM settings').pluck().get() as string);
  stored.sampling.temperature = 'warm';
  stored.kvType = 'q4';
  s.db.prepare('UPDATE settings SET json = ?').run(JSON.stringify(stored));
  const r = s.settings.read();
  assert.deepEqual(r.ignored.sort(), ['kvType', 'sampling.temperature']);
  assert.equal(r.settings.theme, 'dark');
  assert.equal(r.settings.sampling.topK, 5);
  assert.equal(r.settings.sampling.temperature, DEFAULT_SETTINGS.sampling.temperature);
  assert.equal(r.settings.kvType, 'f16');
  s.close();
});

// ---------------------------------------------------------------------------------------------------------
// Documents and statistics

test('documents: create, content, cache and statistics round trip', () => {
  const clock = new FakeClock();
  const dir = tempDir();
  const s = open(dir, { scheduler: clock });
  const created = s.documents.create({
    title: 'Annual report',
    kind: 'pdf',
    fileName: 'report.pdf',
    sha256: 'cd'.repeat(32),
  });
  assert.match(created.id, /^[A-Za-z0-9_-]{16,}$/);
  assert.equal(created.status, 'importing');
  assert.equal(created.createdAt, new Date(clock.t).toISOString());
  assert.equal(created.kvPath, null);
  assert.equal(created.compression, null);
  assert.equal(s.documents.tokens(created.id), null);

  const tokens = Int32Array.from({ length: 10_000 }, (_, i) => (i * 2654435761) % 150_000);
  const charMap = Int32Array.from({ length: 10_000 }, (_, i) => i * 4);
  const pages = [
    { page: 1, text: 'Alpha ✓ — first', tokenStart: 0, tokenEnd: 4000 },
    { page: 2, text: 'Beta', tokenStart: 4000, tokenEnd: 10_000 },
  ];
  clock.advance(1000);
  s.documents.setContent(created.id, { pages, tokens, charMap });
  s.documents.update(created.id, { status: 'compressing' });

  const retention = Int32Array.from({ length: 10_000 }, (_, i) => (i * 31) % 21);
  const stats = sampleStats(10_000, retention);
  const first = s.documents.saveCache(created.id, {
    kvPath: '/cache/a.kv',
    modelId: 'qwen',
    compression: { method: 'ada-snapkv', budget: 0.2, alpha: 0.2, window: 32, kernel: 7 },
    kvBytesFull: 5_000_000_000,
    kvBytesKept: 1_000_000_000,
    stats,
  });
  assert.deepEqual(first, { replacedKvPath: null });
  s.close();

  const r = open(dir, { scheduler: clock });
  const d = r.documents.require(created.id);
  assert.equal(d.status, 'ready');
  assert.equal(d.pages, 2);
  assert.equal(d.tokens, 10_000);
  assert.equal(d.kvPath, '/cache/a.kv');
  assert.equal(d.modelId, 'qwen');
  assert.equal(d.sha256, 'cd'.repeat(32));
  assert.equal(d.kvBytesFull, 5_000_000_000);
  assert.deepEqual(d.compression, { method: 'ada-snapkv', budget: 0.2, alpha: 0.2, window: 32, kernel: 7 });
  assert.deepEqual(r.documents.pages(created.id), pages);
  assert.deepEqual(r.documents.tokens(created.id), tokens);
  assert.deepEqual(r.documents.charMap(created.id), charMap);
  // Big arrays are 4 bytes a value.
  assert.equal(count(r, 'SELECT length(tokens) FROM document_tokens WHERE document_id = ?', created.id), 40_000);
  assert.equal(count(r, 'SELECT length(retention) FROM compression_stats WHERE document_id = ?', created.id), 40_000);

  // list() gives the contract's summaries, exactly.
  const list = r.documents.list();
  assert.equal(list.length, 1);
  assert.deepEqual(DocumentSummary.strict().parse(list[0]), list[0]);
  assert.equal(list[0].kvBytesKept, 1_000_000_000);

  const back = r.stats.get(created.id)!;
  assert.deepEqual(back, { ...stats, tokenRetention: Array.from(retention) });
  assert.deepEqual(r.stats.retention(created.id), retention);
  assert.deepEqual(
    r.documents.findBySha256('cd'.repeat(32)).map((x) => x.id),
    [created.id],
  );

  // Recompressing records the new file and hands back the old one to remove.
  const second = r.documents.saveCache(created.id, {
    kvPath: '/cache/b.kv',
    modelId: 'qwen',
    compression: { method: 'snapkv', budget: 0.1, alpha: 1, window: 16, kernel: 5 },
    kvBytesFull: 5,
    kvBytesKept: 1,
    stats: sampleStats(4, [0.5, 1.25, 2, 3]),
  });
  assert.deepEqual(second, { replacedKvPath: '/cache/a.kv' });
  assert.deepEqual(r.stats.get(created.id)!.tokenRetention, [0.5, 1.25, 2, 3]);
  assert.deepEqual(r.stats.retention(created.id), Float64Array.from([0.5, 1.25, 2, 3]));

  assert.deepEqual(r.documents.clearCache(created.id), { removedKvPath: '/cache/b.kv' });
  assert.equal(r.documents.get(created.id)!.status, 'stale');
  assert.equal(r.stats.get(created.id), null);
  r.close();
});

test('documents: invalid input is refused without partial writes; unknown ids are NOT_FOUND', () => {
  const s = open(tempDir());
  const { id, tokens } = makeDocument(s);
  expectStorageError(
    () => s.documents.setContent(id, { pages: [{ page: 1, text: 'x', tokenStart: 0, tokenEnd: 2 }], tokens: [1, 2.5] }),
    'BAD_REQUEST',
    /tokens\[1\]/,
  );
  expectStorageError(
    () => s.documents.setContent(id, { pages: [{ page: 0, text: 'x', tokenStart: 0, tokenEnd: 1 }], tokens: [1] }),
    'BAD_REQUEST',
    /pages\.0\.page/,
  );
  assert.deepEqual(s.documents.tokens(id), tokens);
  assert.equal(s.documents.pages(id).length, 2);
  const bad = { ...sampleStats(3, [1, 2, 3]), method: 'zip' } as unknown as CompressionStats;
  expectStorageError(() => s.stats.put(id, bad), 'BAD_REQUEST', /method/);
  expectStorageError(
    () =>
      s.documents.saveCache(id, {
        kvPath: '/x',
        modelId: 'm',
        compression: { ...DEFAULT_SETTINGS.compression, kernel: 4 },
        kvBytesFull: 1,
        kvBytesKept: 1,
      }),
    'BAD_REQUEST',
    /kernel/,
  );
  assert.equal(s.documents.get(id)!.kvPath, '/cache/Report.kv');
  expectStorageError(() => s.documents.update('nope', { title: 'x' }), 'NOT_FOUND');
  expectStorageError(() => s.documents.setContent('nope', { pages: [], tokens: [] }), 'NOT_FOUND');
  expectStorageError(() => s.stats.put('nope', sampleStats(1, [1])), 'NOT_FOUND');
  expectStorageError(() => s.chats.create('nope'), 'NOT_FOUND');
  assert.equal(s.documents.get('nope'), null);
  assert.deepEqual(s.documents.delete('nope'), { deleted: false, files: [] });
  s.close();
});

test('documents: a read of a range keeps every page with its text, the others without tokens; a whole read measures them all again', () => {
  const dir = tempDir();
  const s = open(dir);
  const d = s.documents.create({ title: 'Five', kind: 'pdf', fileName: 'five.pdf' });
  const text = (page: number) => `Page ${page} of five.`;
  const imported = [1, 2, 3, 4, 5].map((page) => ({ page, text: text(page), tokenStart: 0, tokenEnd: 0 }));
  s.documents.setContent(d.id, { pages: imported, tokens: [] });
  assert.equal(s.documents.require(d.id).readPages, null);

  const range = [2, 3].map((page, i) => ({ page, text: text(page), tokenStart: 4 + 6 * i, tokenEnd: 10 + 6 * i }));
  const tokens = Int32Array.from({ length: 20 }, (_, i) => i + 1);
  const read = s.documents.setRead(d.id, { pages: range, tokens, charMap: new Int32Array(60), range: [2, 3] });
  assert.deepEqual([read.readPages, read.pages, read.tokens], [[2, 3], 5, 20]);
  const expected = imported.map((p) =>
    p.page === 2 || p.page === 3 ? range[p.page - 2] : { ...p, tokenStart: -1, tokenEnd: -1 },
  );
  assert.deepEqual(s.documents.pages(d.id), expected);
  assert.deepEqual(s.documents.tokens(d.id), tokens);
  assert.deepEqual(DocumentSummary.strict().parse(s.documents.list()[0]).readPages, [2, 3]);

  // Refused, with nothing written: a page outside the range, one left out of it, one not stored, other text.
  const refused = [
    { pages: [range[0]], range: [2, 3] as [number, number], why: /leaves out stored pages/ },
    { pages: range, range: [2, 2] as [number, number], why: /page 3 is not a stored page of the range read/ },
    { pages: range, range: null, why: /leaves out stored pages/ },
    {
      pages: [...range, { page: 6, text: 'new', tokenStart: 16, tokenEnd: 18 }],
      range: [2, 6] as [number, number],
      why: /page 6 is not a stored page/,
    },
    { pages: [range[0], { ...range[1], text: 'other' }], range: [2, 3] as [number, number], why: /page 3/ },
  ];
  for (const r of refused)
    expectStorageError(() => s.documents.setRead(d.id, { ...r, tokens: [1] }), 'BAD_REQUEST', r.why);
  assert.deepEqual(s.documents.pages(d.id), expected);
  assert.deepEqual(s.documents.require(d.id).readPages, [2, 3]);
  s.close();

  // The range survives reopening; a whole read measures every page and records no range.
  const r = open(dir);
  assert.deepEqual(r.documents.require(d.id).readPages, [2, 3]);
  const all = imported.map((p, i) => ({ ...p, tokenStart: 4 * i, tokenEnd: 4 * i + 4 }));
  const whole = r.documents.setRead(d.id, { pages: all, tokens: new Int32Array(24), range: null });
  assert.deepEqual([whole.readPages, whole.tokens], [null, 24]);
  assert.deepEqual(r.documents.pages(d.id), all);
  // An import replaces the pages and forgets the read.
  r.documents.setRead(d.id, { pages: range, tokens, range: [2, 3] });
  assert.equal(r.documents.setContent(d.id, { pages: imported, tokens: [] }).readPages, null);
  expectStorageError(() => r.documents.setRead('nope', { pages: [], tokens: [], range: null }), 'NOT_FOUND');
  r.close();
});

// ---------------------------------------------------------------------------------------------------------
// Chats and messages

test('chats and messages round trip, in order, with the contract shapes', () => {
  const clock = new FakeClock();
  const s = open(tempDir(), { scheduler: clock });
  const { id: docId } = makeDocument(s);
  const chat = s.chats.create(docId);
  assert.deepEqual(ChatSummary.strict().parse(chat), chat);
  assert.equal(chat.title, 'New chat');
  assert.equal(chat.messageCount, 0);
  clock.advance(10);
  const other = s.chats.create(docId, 'Second');

  clock.advance(10);
  const q = s.messages.add(chat.id, { role: 'user', text: 'What is on page 2?', cacheTokens: 12 });
  clock.advance(10);
  const a = s.messages.add(chat.id, {
    role: 'assistant',
    text: 'Beta.',
    tokens: 3,
    tokensPerSecond: 41.5,
    pageRefs: [2],
    cacheTokens: 5,
  });
  assert.deepEqual(Message.strict().parse(a), a);
  assert.equal(a.status, 'complete');
  assert.deepEqual(
    s.messages.list(chat.id).map((m) => m.id),
    [q.id, a.id],
  );
  assert.deepEqual(s.messages.get(a.id), a);
  assert.equal(a.createdAt, new Date(clock.t).toISOString());

  // The chat with the latest message comes first, with its count.
  const list = s.chats.list(docId);
  assert.deepEqual(
    list.map((c) => [c.id, c.messageCount]),
    [
      [chat.id, 2],
      [other.id, 0],
    ],
  );
  assert.equal(list[0].updatedAt, a.createdAt);

  clock.advance(10);
  const renamed = s.chats.rename(other.id, 'Renamed');
  assert.equal(renamed.title, 'Renamed');
  assert.equal(s.chats.list(docId)[0].id, other.id);
  expectStorageError(() => s.chats.rename('nope', 'x'), 'NOT_FOUND');
  expectStorageError(() => s.messages.add('nope', { role: 'user', text: 'x' }), 'NOT_FOUND');

  const edited = s.messages.update(a.id, { pageRefs: [1, 2], error: null });
  assert.deepEqual(edited.pageRefs, [1, 2]);
  assert.equal(edited.text, 'Beta.');
  assert.deepEqual(s.messages.conversationTokens(chat.id), { tokens: 17, exact: true });

  assert.equal(s.chats.delete(other.id), true);
  assert.equal(s.chats.delete(other.id), false);
  assert.equal(s.chats.get(other.id), null);
  s.close();
});

test('truncateFrom gives the cache tokens to cut for regenerate and edit', () => {
  const s = open(tempDir());
  const { id: docId } = makeDocument(s);
  const chat = s.chats.create(docId);
  const q1 = s.messages.add(chat.id, { role: 'user', text: 'q1', cacheTokens: 10 });
  s.messages.add(chat.id, { role: 'assistant', text: 'a1', cacheTokens: 20 });
  const q2 = s.messages.add(chat.id, { role: 'user', text: 'q2', cacheTokens: 7 });
  const a2 = s.messages.add(chat.id, { role: 'assistant', text: 'a2', cacheTokens: 30 });
  assert.deepEqual(s.messages.conversationTokens(chat.id), { tokens: 67, exact: true });

  // Regenerate: drop the last answer.
  assert.deepEqual(s.messages.truncateFrom(chat.id, a2.id), { removed: [a2.id], cacheTokens: 30, exact: true });
  const again = s.messages.add(chat.id, { role: 'assistant', text: 'a2 again', cacheTokens: null });
  assert.deepEqual(
    s.messages.list(chat.id).map((m) => m.text),
    ['q1', 'a1', 'q2', 'a2 again'],
  );
  assert.deepEqual(s.messages.conversationTokens(chat.id), { tokens: 37, exact: false });

  // Edit: drop a question and everything after it.
  const cut = s.messages.truncateFrom(chat.id, q2.id);
  assert.deepEqual(cut, { removed: [q2.id, again.id], cacheTokens: 7, exact: false });
  const q2b = s.messages.add(chat.id, { role: 'user', text: 'q2 edited', cacheTokens: 9 });
  assert.deepEqual(
    s.messages
      .list(chat.id)
      .map((m) => m.id)
      .slice(-1),
    [q2b.id],
  );
  expectStorageError(() => s.messages.truncateFrom('other-chat', q1.id), 'NOT_FOUND');
  s.close();
});

test("an answer's citations: stored when it finishes, patched, none for answers without; a damaged value reads as none, an invalid one is refused", () => {
  const s = open(tempDir());
  const { id: docId } = makeDocument(s);
  const chat = s.chats.create(docId);
  s.messages.add(chat.id, { role: 'user', text: 'Where is the key?' });
  const before = s.messages.add(chat.id, { role: 'assistant', text: 'On page 1.', pageRefs: [1] });
  assert.equal(before.citations, null, 'an answer without citations (the OpenAI endpoint, stored before) has none');

  const citations = [
    { page: 2, share: 0.7, sentences: [{ start: 10, end: 42, share: 0.55 }] },
    { page: 1, share: 0.2, sentences: [] },
  ];
  const answer = s.messages.beginAnswer(chat.id);
  answer.append('The key is 4721.');
  const final = answer.finish('complete', { pageRefs: [2, 1], citations })!;
  assert.deepEqual(final.citations, citations);
  assert.deepEqual(Message.strict().parse(final), final);
  assert.deepEqual(s.messages.get(final.id)?.citations, citations);
  // A patch that says nothing of them keeps them; null removes them.
  assert.deepEqual(s.messages.update(final.id, { error: null }).citations, citations);
  assert.equal(s.messages.update(final.id, { citations: null }).citations, null);
  s.messages.update(final.id, { citations });

  // Invalid citations are refused before anything is written.
  assert.throws(() => s.messages.update(final.id, { citations: [{ page: 0, share: 2, sentences: [] }] as never }));
  assert.deepEqual(s.messages.get(final.id)?.citations, citations);

  // A damaged value reads as none, with the rest of the message and the chat intact.
  const warn = console.warn;
  const warned: string[] = [];
  console.warn = (m: string) => warned.push(m);
  try {
    for (const bad of ['{not json', JSON.stringify([{ page: 'two' }])]) {
      s.db.prepare('UPDATE messages SET citations = ? WHERE id = ?').run(bad, final.id);
      const m = s.messages.get(final.id)!;
      assert.equal(m.citations, null);
      assert.equal(m.text, 'The key is 4721.');
      assert.deepEqual(m.pageRefs, [2, 1]);
    }
  } finally {
    console.warn = warn;
  }
  assert.equal(warned.length, 2);
  assert.match(warned[0], /citations of message .* are damaged/);
  assert.equal(s.messages.list(chat.id).length, 3);
  s.close();
});

test('deleting a document cascades to pages, statistics, chats and messages, and returns the files to remove', () => {
  const s = open(tempDir());
  const keep = makeDocument(s, 'Keep');
  const gone = makeDocument(s, 'Gone', '/cache/gone.kv');
  for (const d of [keep.id, gone.id]) {
    for (let c = 0; c < 2; c++) {
      const chat = s.chats.create(d);
      s.messages.add(chat.id, { role: 'user', text: 'q' });
      s.messages.add(chat.id, { role: 'assistant', text: 'a' });
    }
  }
  const answer = s.messages.beginAnswer(s.chats.list(gone.id)[0].id);
  answer.append('partial');
  const tables = () => [
    count(s, 'SELECT COUNT(*) FROM documents'),
    count(s, 'SELECT COUNT(*) FROM document_pages'),
    count(s, 'SELECT COUNT(*) FROM compression_stats'),
    count(s, 'SELECT COUNT(*) FROM chats'),
    count(s, 'SELECT COUNT(*) FROM messages'),
  ];
  assert.deepEqual(tables(), [2, 4, 2, 4, 9]);
  assert.deepEqual(s.documents.delete(gone.id), { deleted: true, files: ['/cache/gone.kv'] });
  assert.deepEqual(tables(), [1, 2, 1, 2, 4]);
  assert.equal(s.documents.get(gone.id), null);
  assert.deepEqual(s.chats.list(gone.id), []);
  assert.equal(s.stats.get(gone.id), null);
  // The kept document is whole.
  assert.equal(s.documents.pages(keep.id).length, 2);
  assert.deepEqual(s.documents.tokens(keep.id), keep.tokens);
  assert.equal(s.chats.list(keep.id).length, 2);
  // The answer that was streaming into a deleted chat finishes harmlessly.
  answer.append(' more');
  assert.equal(answer.finish('complete'), null);

  // Deleting a chat deletes its messages.
  const chat = s.chats.list(keep.id)[0];
  s.chats.delete(chat.id);
  assert.equal(count(s, 'SELECT COUNT(*) FROM messages WHERE chat_id = ?', chat.id), 0);
  assert.equal(count(s, 'SELECT COUNT(*) FROM messages'), 2);
  s.close();
});

// ---------------------------------------------------------------------------------------------------------
// Streaming answers

test('a streaming answer is written at most once per interval, and in full when it finishes', () => {
  const clock = new FakeClock();
  const s = open(tempDir(), { scheduler: clock });
  const { id: docId } = makeDocument(s);
  const chat = s.chats.create(docId);
  s.messages.add(chat.id, { role: 'user', text: 'Tell me a story.', cacheTokens: 8 });
  // Count the writes of the message's text with a trigger, independently of the writer.
  s.db.exec(`CREATE TEMP TABLE text_writes (n INTEGER); INSERT INTO text_writes VALUES (0);
    CREATE TEMP TRIGGER count_text_writes AFTER UPDATE OF text ON main.messages BEGIN UPDATE text_writes SET n = n + 1; END;`);
  const writes = () => count(s, 'SELECT n FROM text_writes');
  const stored = (id: string) =>
    s.db.prepare('SELECT text, status FROM messages WHERE id = ?').get(id) as { text: string; status: string };

  const answer = s.messages.beginAnswer(chat.id);
  assert.equal(s.messages.stream(answer.id), answer);
  assert.deepEqual(stored(answer.id), { text: '', status: 'streaming' });

  answer.append('Once');
  clock.advance(100);
  answer.append(' upon');
  assert.deepEqual(stored(answer.id), { text: '', status: 'streaming' }, 'nothing written within the first interval');
  assert.equal(writes(), 0);
  assert.equal(clock.pendingTimers, 1, 'one timer for the pending text');
  clock.advance(150); // t = 250: the timer writes
  assert.deepEqual(stored(answer.id), { text: 'Once upon', status: 'streaming' });
  assert.equal(writes(), 1);
  assert.equal(answer.pending, false);

  // A burst of 1000 tokens over one second: about four writes, not a thousand.
  for (let i = 0; i < 1000; i++) {
    answer.append(` t${i}`);
    clock.advance(1);
  }
  assert.ok(writes() >= 4 && writes() <= 6, `${writes()} writes`);
  assert.equal(answer.writes, writes());
  // What is stored is never more than one interval behind.
  clock.advance(250);
  assert.equal(stored(answer.id).text, answer.text);
  assert.equal(clock.pendingTimers, 0);

  // After a quiet interval, the next token is written at once.
  clock.advance(1000);
  const before = writes();
  answer.append(' end');
  assert.equal(writes(), before + 1);
  assert.equal(stored(answer.id).text, answer.text);

  answer.append('.');
  const final = answer.finish('complete', {
    tokens: 1003,
    tokensPerSecond: 900.5,
    pageRefs: [1, 2],
    cacheTokens: 1010,
  })!;
  assert.equal(final.status, 'complete');
  assert.equal(final.text, answer.text);
  assert.ok(final.text.endsWith(' t999 end.'));
  assert.equal(final.tokens, 1003);
  assert.deepEqual(final.pageRefs, [1, 2]);
  assert.deepEqual(s.messages.get(answer.id), final);
  assert.equal(s.messages.cacheTokens(answer.id), 1010);
  assert.equal(clock.pendingTimers, 0, 'finishing cancels the timer');
  assert.equal(s.messages.stream(answer.id), undefined);
  assert.throws(() => answer.append('late'), StorageError);
  assert.throws(() => answer.finish('complete'), StorageError);
  s.close();
});

test('stopping and failing an answer keep its text; a truncated answer stops writing', () => {
  const clock = new FakeClock();
  const s = open(tempDir(), { scheduler: clock });
  const chat = s.chats.create(makeDocument(s).id);
  const stopped = s.messages.beginAnswer(chat.id);
  stopped.append('Half an');
  assert.equal(stopped.finish('cancelled')!.text, 'Half an');
  const failed = s.messages.beginAnswer(chat.id);
  failed.append('Oops');
  const f = failed.finish('failed', { error: 'engine crashed' })!;
  assert.deepEqual([f.status, f.text, f.error], ['failed', 'Oops', 'engine crashed']);

  const dropped = s.messages.beginAnswer(chat.id);
  dropped.append('to be regenerated');
  s.messages.truncateFrom(chat.id, dropped.id);
  assert.equal(dropped.closed, true);
  assert.equal(clock.pendingTimers, 0);
  assert.equal(s.messages.get(dropped.id), null);
  s.close();
});

test('a crash mid-answer: on reopen the answer is interrupted, with the text of its last write', () => {
  const clock = new FakeClock();
  const dir = tempDir();
  const a = open(dir, { scheduler: clock });
  const chat = a.chats.create(makeDocument(a).id);
  const q = a.messages.add(chat.id, { role: 'user', text: 'Question?' });
  const answer = a.messages.beginAnswer(chat.id);
  answer.append('Written part');
  clock.advance(250);
  answer.append(', lost part');
  const done = a.messages.add(chat.id, { role: 'assistant', text: 'an older complete answer' });
  // The crash: the connection goes away without finishing (or closing) anything.
  a.db.close();

  const b = open(dir, { scheduler: clock });
  assert.equal(b.messages.get(answer.id)!.status, 'streaming');
  assert.deepEqual(b.recover(), { messages: 1, documents: 0, downloads: 0 });
  const m = b.messages.get(answer.id)!;
  assert.equal(m.status, 'interrupted');
  assert.equal(m.text, 'Written part');
  assert.equal(b.messages.get(q.id)!.status, 'complete');
  assert.equal(b.messages.get(done.id)!.status, 'complete');
  assert.deepEqual(b.recover(), { messages: 0, documents: 0, downloads: 0 }, 'recovery is idempotent');

  // Recovery leaves answers streaming in this process alone.
  const live = b.messages.beginAnswer(chat.id);
  assert.equal(b.messages.recoverInterrupted(), 0);
  assert.equal(b.messages.get(live.id)!.status, 'streaming');
  b.close();
});

test('closing the storage finishes open answers as interrupted, with all their text', () => {
  const clock = new FakeClock();
  const dir = tempDir();
  const s = open(dir, { scheduler: clock });
  const chat = s.chats.create(makeDocument(s).id);
  const answer = s.messages.beginAnswer(chat.id);
  answer.append('All of it');
  s.close();
  assert.equal(clock.pendingTimers, 0);
  s.close(); // twice is harmless
  const r = open(dir);
  assert.deepEqual([r.messages.get(answer.id)!.status, r.messages.get(answer.id)!.text], ['interrupted', 'All of it']);
  r.close();
});

test('a process killed mid-answer leaves the answer to recover as interrupted', async () => {
  const dir = tempDir();
  const s = open(dir);
  const chat = s.chats.create(makeDocument(s).id);
  s.close();
  const child = join(dir, 'child.ts');
  const storageUrl = pathToFileURL(join(repoRoot, 'electron/storage/index.ts')).href;
  writeFileSync(
    child,
    `import { openStorage } from ${JSON.stringify(storageUrl)};
     const s = openStorage(${JSON.stringify(dir)}, { flushIntervalMs: 60_000 });
     const a = s.messages.beginAnswer(${JSON.stringify(chat.id)});
     a.append('flushed before the crash');
     a.flush();
     a.append(' and never written');
     process.stdout.write(JSON.stringify({ id: a.id }) + '\\n');
     setInterval(() => {}, 1000);
    `,
  );
  const proc = spawn(process.execPath, ['--import', 'tsx', child], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stderr.on('data', (d) => (err += d));
  const id = await new Promise<string>((resolveId, reject) => {
    proc.stdout.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) resolveId((JSON.parse(out.slice(0, nl)) as { id: string }).id);
    });
    proc.on('exit', (code) => reject(new Error(`child exited (${code}) before answering: ${err}`)));
  });
  const exited = new Promise((r) => proc.on('exit', r));
  proc.kill('SIGKILL');
  await exited;
  assert.ok(existsSync(join(dir, DATABASE_FILE + '-wal')), 'the killed process left its WAL behind');

  const r = open(dir);
  assert.deepEqual(r.recover(), { messages: 1, documents: 0, downloads: 0 });
  const m = r.messages.get(id)!;
  assert.deepEqual([m.status, m.text, m.role], ['interrupted', 'flushed before the crash', 'assistant']);
  r.close();
});

// ---------------------------------------------------------------------------------------------------------
// Startup recovery of documents and downloads; models

test('recovery: documents cut off become failed (or stale with a cache); running downloads become paused', () => {
  const s = open(tempDir());
  const importing = s.documents.create({ title: 'a', kind: 'text', fileName: 'a.txt' });
  const recompressing = makeDocument(s, 'b');
  s.documents.update(recompressing.id, { status: 'compressing' });
  const ready = makeDocument(s, 'c');
  const failed = s.documents.create({ title: 'd', kind: 'docx', fileName: 'd.docx', status: 'failed' });
  s.documents.update(failed.id, { error: 'bad zip' });

  const dl = s.downloads.create({
    url: 'https://example.com/m.gguf',
    destination: '/models/m.gguf',
    expectedSha256: 'ef'.repeat(32),
    totalBytes: 1000,
  });
  assert.equal(dl.status, 'queued');
  s.downloads.update(dl.id, { status: 'running', bytesDone: 400, etag: '"v1"' });
  const finished = s.downloads.create({ url: 'https://example.com/n.gguf', destination: '/models/n.gguf' });
  s.downloads.update(finished.id, { status: 'done', bytesDone: 10, totalBytes: 10 });

  assert.deepEqual(s.recover(), { messages: 0, documents: 2, downloads: 1 });
  const i = s.documents.get(importing.id)!;
  assert.equal(i.status, 'failed');
  assert.match(i.error!, /closed before/);
  assert.equal(s.documents.get(recompressing.id)!.status, 'stale');
  assert.equal(s.documents.get(recompressing.id)!.kvPath, '/cache/b.kv');
  assert.equal(s.documents.get(ready.id)!.status, 'ready');
  assert.equal(s.documents.get(failed.id)!.error, 'bad zip');

  const resumed = s.downloads.get(dl.id)!;
  assert.deepEqual(
    [resumed.status, resumed.bytesDone, resumed.totalBytes, resumed.etag, resumed.expectedSha256],
    ['paused', 400, 1000, '"v1"', 'ef'.repeat(32)],
  );
  assert.deepEqual(
    s.downloads.unfinished().map((d) => d.id),
    [dl.id],
  );
  assert.equal(s.downloads.list().length, 2);
  assert.equal(s.downloads.delete(finished.id), true);
  s.close();
});

test('model files and folders', () => {
  const s = open(tempDir());
  assert.deepEqual(s.models.files(), []);
  s.models.addFile('/x/a.gguf');
  s.models.addFile('/x/b.gguf', 'download');
  s.models.addFile('/x/a.gguf', 'added');
  assert.deepEqual(
    s.models.files().map((f) => [f.path, f.source]),
    [
      ['/x/a.gguf', 'added'],
      ['/x/b.gguf', 'download'],
    ],
  );
  assert.equal(s.models.removeFile('/x/a.gguf'), true);
  assert.equal(s.models.removeFile('/x/a.gguf'), false);
  s.models.addFolder('/f1');
  s.models.addFolder('/f2');
  assert.equal(s.models.removeFolder('/f1'), true);
  assert.deepEqual(s.models.folders(), ['/f2']);
  assert.deepEqual(s.settings.get().modelFolders, ['/f2']);
  s.close();
});

// ---------------------------------------------------------------------------------------------------------
// Concurrency (WAL)

test('readers are not blocked by a writer and see only committed data (WAL)', () => {
  const dir = tempDir();
  const writer = open(dir, { busyTimeoutMs: 100 });
  const reader = open(dir, { busyTimeoutMs: 100 });
  const raw = new Database(join(dir, DATABASE_FILE), { readonly: true, timeout: 100 });
  const docs = () => raw.prepare('SELECT COUNT(*) FROM documents').pluck().get() as number;

  // A write transaction in progress: readers read, and see the state before it.
  writer.db
    .transaction(() => {
      makeDocument(writer, 'in flight');
      assert.equal(reader.documents.list().length, 0);
      assert.equal(docs(), 0);
    })
    .immediate();
  assert.equal(reader.documents.list().length, 1);
  assert.equal(docs(), 1);

  // A reader holding a snapshot does not stop the writer from committing, and keeps its snapshot.
  raw.exec('BEGIN');
  assert.equal(docs(), 1);
  // (With a rollback journal this write would fail with SQLITE_BUSY after the 100 ms busy timeout.)
  makeDocument(writer, 'second');
  assert.equal(docs(), 1, 'the snapshot is stable');
  raw.exec('COMMIT');
  assert.equal(docs(), 2);
  assert.equal(reader.documents.list().length, 2);

  raw.close();
  reader.close();
  writer.close();
});

test('a reader keeps reading while another thread writes', async () => {
  const dir = tempDir();
  const s = open(dir);
  const chat = s.chats.create(makeDocument(s).id);
  const worker = new Worker(
    `const { workerData, parentPort } = require('node:worker_threads');
     const Database = require(workerData.sqlite);
     const db = new Database(workerData.file, { timeout: 5000 });
     db.pragma('foreign_keys = ON');
     const insert = db.prepare("INSERT INTO messages (id, chat_id, seq, role, text, status, created_at, updated_at) VALUES (?, ?, ?, 'user', ?, 'complete', '', '')");
     for (let i = 1; i <= 300; i++) insert.run('w' + i, workerData.chat, i, 'message ' + i);
     db.close();
     parentPort.postMessage('done');`,
    {
      eval: true,
      workerData: {
        sqlite: resolve(repoRoot, 'node_modules/better-sqlite3'),
        file: join(dir, DATABASE_FILE),
        chat: chat.id,
      },
    },
  );
  const done = new Promise<void>((r, reject) => {
    worker.on('message', () => r());
    worker.on('error', reject);
  });
  let finished = false;
  void done.then(() => (finished = true));
  let last = 0;
  let reads = 0;
  while (!finished) {
    const list = s.messages.list(chat.id);
    assert.ok(list.length >= last, 'counts never go back');
    // Every read is a consistent prefix of the writer's sequence.
    list.forEach((m, i) => assert.equal(m.text, `message ${i + 1}`));
    last = list.length;
    reads++;
    await new Promise((r) => setImmediate(r));
  }
  await done;
  assert.equal(s.messages.list(chat.id).length, 300);
  assert.ok(reads > 1);
  s.close();
});

test('every write of the app runs through writeTransaction (IMMEDIATE), which the test below holds to', () => {
  const deferred: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.name.endsWith('.ts') && path !== join(repoRoot, 'electron/storage/transaction.ts'))
        if (/\.transaction\(/.test(readFileSync(path, 'utf8'))) deferred.push(path.slice(repoRoot.length + 1));
    }
  };
  walk(join(repoRoot, 'electron'));
  assert.deepEqual(deferred, [], 'use writeTransaction (electron/storage/transaction.ts) instead of db.transaction');
});

test("the content writer's thread and the main connection write at once: each waits its turn, none fails", async () => {
  const s = open(tempDir());
  const text = 'A page of text that the writer stores. '.repeat(60);
  const docs = Array.from({ length: 6 }, (_, i) =>
    s.documents.create({ title: `d${i}`, kind: 'text', fileName: `d${i}.txt`, sha256: null, status: 'importing' }),
  );
  const writes = docs.map((d, i) =>
    s.content.setContent(d.id, {
      pages: Array.from({ length: 200 }, (_, p) => ({ page: p + 1, text: `${i} ${text}`, tokenStart: 0, tokenEnd: 0 })),
      tokens: Int32Array.from({ length: 50_000 }, (_, k) => k % 300),
    }),
  );
  // Meanwhile the main connection reads a row and writes it, as a status change does.
  let updates = 0;
  const settled = Promise.allSettled(writes);
  let done = false;
  void settled.then(() => (done = true));
  while (!done || updates < 20) {
    s.documents.update(docs[updates % docs.length].id, { title: `t${updates}` });
    updates++;
    await new Promise((ok) => setTimeout(ok, 2));
  }
  const results = await settled;
  assert.deepEqual(
    results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason)),
    [],
  );
  for (const d of docs) assert.equal(s.documents.pages(d.id).length, 200);
  await s.content.close();
  s.close();
});

test('a page read by OCR keeps how (language, confidence) with the page, and its words apart', () => {
  const s = open(tempDir());
  const d = s.documents.create({ title: 'scan', kind: 'pdf', fileName: 'scan.pdf' });
  const words = [
    { text: 'Once', x: 56, y: 62, width: 28, size: 12, confidence: 96 },
    { text: 'upon', x: 88, y: 62, width: 27, size: 12, confidence: 95 },
  ];
  s.documents.setContent(d.id, {
    pages: [
      { page: 1, text: 'A text layer.', tokenStart: 0, tokenEnd: 0 },
      {
        page: 2,
        text: 'Once upon',
        tokenStart: 0,
        tokenEnd: 0,
        ocr: { language: 'eng', confidence: 95.5 },
        ocrWords: words,
      },
    ],
    tokens: [],
  });
  const pages = s.documents.pages(d.id);
  assert.equal(pages[0].ocr, undefined);
  assert.deepEqual(pages[1].ocr, { language: 'eng', confidence: 95.5 });
  assert.deepEqual(s.documents.pageWords(d.id, 2), words);
  assert.deepEqual(s.documents.pageWords(d.id, 1), [], 'a page with a text layer has no OCR words');
  assert.deepEqual(s.documents.pageWords(d.id, 9), []);
  s.close();
});

test('version 20 rebuilds the documents table for images: every row and link kept, foreign keys on again', () => {
  const { dir, clock, old } = databaseAt(19);
  old.pragma('foreign_keys = ON');
  old.exec(`
    INSERT INTO documents (id, title, kind, file_name, status, created_at, updated_at)
      VALUES ('d1', 'Report', 'pdf', 'r.pdf', 'ready', 'x', 'x');
    INSERT INTO document_pages (document_id, page, text, token_start, token_end) VALUES ('d1', 1, 'text', 0, 1);
    INSERT INTO chats (id, document_id, title, created_at, updated_at) VALUES ('c1', 'd1', 'A chat', 'x', 'x');
    INSERT INTO chat_documents (chat_id, document_id, ordinal) VALUES ('c1', 'd1', 0);
  `);
  old.close();
  const s = open(dir, { scheduler: clock });
  assert.deepEqual(s.migrated, [20]);
  assert.equal(s.documents.require('d1').title, 'Report');
  assert.equal(s.documents.pages('d1')[0].text, 'text');
  assert.deepEqual(s.chats.require('c1').documentIds, ['d1']);
  const image = s.documents.create({ title: 'photo', kind: 'image', fileName: 'photo.png' });
  assert.equal(s.documents.require(image.id).kind, 'image');
  assert.equal(Number(s.db.pragma('foreign_keys', { simple: true })), 1);
  // The links still hold: a document deleted takes its pages and its chats.
  s.documents.delete('d1');
  assert.equal(count(s, `SELECT COUNT(*) FROM document_pages WHERE document_id = 'd1'`), 0);
  assert.equal(count(s, `SELECT COUNT(*) FROM chats WHERE id = 'c1'`), 0);
  assert.deepEqual(s.db.pragma('foreign_key_check'), []);
  s.close();
});
