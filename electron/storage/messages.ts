// Messages of a chat, in order (seq), each with the number of tokens it occupies in the session's KV
// cache, so that regenerate and edit can cut the cache back exactly. Answers stream through
// StreamingAnswer (streaming.ts), which writes at a bounded rate.
import type Database from 'better-sqlite3';
import { z } from 'zod';

import { CitedPage, type Message, type MessageStatus as MessageStatusSchema } from '../api/contract.ts';
import type { ChatsRepo } from './chats.ts';
import { isoTime, newId, type Scheduler } from './clock.ts';
import { StorageError } from './errors.ts';
import {
  DEFAULT_FLUSH_INTERVAL_MS,
  StreamingAnswer,
  type FinalStatus,
  type FinishDetails,
  type StreamHost,
} from './streaming.ts';
import { writeTransaction } from './transaction.ts';

export type MessageStatus = z.infer<typeof MessageStatusSchema>;
export type MessageRole = Message['role'];

export interface NewMessage {
  role: MessageRole;
  text: string;
  /** Default 'complete'. */
  status?: MessageStatus;
  tokens?: number | null;
  tokensPerSecond?: number | null;
  pageRefs?: number[];
  citations?: CitedPage[] | null;
  error?: string | null;
  cacheTokens?: number | null;
}

export type MessagePatch = Partial<Omit<NewMessage, 'role'>>;

/** What truncateFrom removed, and how many cache tokens the caller cuts from the session. */
export interface Truncation {
  removed: string[];
  cacheTokens: number;
  /** False when a removed message's cache tokens were unknown: cut by rebuilding, not by a count. */
  exact: boolean;
}

interface Row {
  id: string;
  chat_id: string;
  seq: number;
  role: MessageRole;
  text: string;
  status: MessageStatus;
  created_at: string;
  tokens: number | null;
  tokens_per_second: number | null;
  page_refs: string;
  citations: string | null;
  error: string | null;
  cache_tokens: number | null;
  /** The number of the answer version the row holds (migration 11). */
  version: number;
  /** The answer's other versions (answer_versions). */
  others: number;
}

/** What followed a question when it was edited (a question's earlier version keeps it): the rows as read. */
interface Branch {
  messages: Record<string, unknown>[];
  versions: Record<string, unknown>[];
}

/** Every read of a message counts its other versions. */
const SELECT_MESSAGE = `SELECT m.*, (SELECT COUNT(*) FROM answer_versions v WHERE v.message_id = m.id) AS others FROM messages m`;

/** A message that matched a search (chat-search.ts makes the hit). */
export interface SearchRow {
  messageId: string;
  chatId: string;
  documentId: string;
  chatTitle: string;
  role: MessageRole;
  text: string;
  createdAt: string;
}

function toMessage(r: Row): Message {
  return {
    id: r.id,
    chatId: r.chat_id,
    role: r.role,
    text: r.text,
    status: r.status,
    createdAt: r.created_at,
    tokens: r.tokens,
    tokensPerSecond: r.tokens_per_second,
    pageRefs: JSON.parse(r.page_refs) as number[],
    citations: readCitations(r),
    error: r.error,
    version: { index: r.version, count: r.others + 1 },
  };
}

const StoredCitations = z.array(CitedPage);

/** A message's stored citations; a damaged value reads as none (its page chips fall back to pageRefs'
 * order) rather than making the whole chat unreadable, and says so once on the console. */
function readCitations(r: Row): CitedPage[] | null {
  if (r.citations === null) return null;
  try {
    const parsed = StoredCitations.safeParse(JSON.parse(r.citations));
    if (parsed.success) return parsed.data;
  } catch {
    // not JSON: reported below
  }
  console.warn(`folio storage: the citations of message ${r.id} are damaged and were ignored`);
  return null;
}

/** Citations as stored: JSON after the contract's check, so that nothing unreadable is written. */
function writeCitations(c: CitedPage[] | null | undefined): string | null {
  return c ? JSON.stringify(StoredCitations.parse(c)) : null;
}

export interface MessagesOptions {
  flushIntervalMs?: number;
  /** Errors of timed writes of streaming answers (they cannot throw to anyone). Default: console.error. */
  onError?: (e: unknown) => void;
}

export class MessagesRepo {
  private readonly nextSeq;
  private readonly insert;
  private readonly selectOne;
  private readonly selectByChat;
  private readonly updateAll;
  private readonly writeStreamingText;
  private readonly selectFrom;
  private readonly deleteFrom;
  private readonly sumCache;
  private readonly recover;
  private readonly archiveVersion;
  private readonly selectVersionRow;
  private readonly archiveQuestion;
  private readonly selectAfter;
  private readonly deleteAfter;
  private readonly selectVersionsOf;
  private readonly insertMessageRow: Database.Statement;
  private readonly insertVersionRow: Database.Statement;
  private readonly deleteVersion;
  private readonly lastVersion;
  private readonly restoreVersion;
  private readonly searchAll;
  private readonly searchDocument;
  private readonly streams = new Map<string, StreamingAnswer>();
  private readonly flushIntervalMs: number;
  private readonly onError: (e: unknown) => void;

  constructor(
    private readonly db: Database.Database,
    private readonly scheduler: Scheduler,
    private readonly chats: ChatsRepo,
    options: MessagesOptions = {},
  ) {
    this.flushIntervalMs = options.flushIntervalMs ?? DEFAULT_FLUSH_INTERVAL_MS;
    this.onError = options.onError ?? ((e) => console.error('folio storage: writing a streaming answer failed:', e));
    this.nextSeq = db.prepare(`SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE chat_id = ?`).pluck();
    this.insert = db.prepare(
      `INSERT INTO messages (id, chat_id, seq, role, text, status, created_at, updated_at, tokens, tokens_per_second, page_refs, citations, error, cache_tokens)
       VALUES (@id, @chatId, @seq, @role, @text, @status, @now, @now, @tokens, @tokensPerSecond, @pageRefs, @citations, @error, @cacheTokens)`,
    );
    this.selectOne = db.prepare(`${SELECT_MESSAGE} WHERE m.id = ?`);
    this.selectByChat = db.prepare(`${SELECT_MESSAGE} WHERE m.chat_id = ? ORDER BY m.seq`);
    this.updateAll = db.prepare(
      `UPDATE messages SET text = @text, status = @status, tokens = @tokens, tokens_per_second = @tokensPerSecond,
         page_refs = @pageRefs, citations = @citations, error = @error, cache_tokens = @cacheTokens, updated_at = @now WHERE id = @id`,
    );
    this.writeStreamingText = db.prepare(
      `UPDATE messages SET text = ?, updated_at = ? WHERE id = ? AND status = 'streaming'`,
    );
    this.selectFrom = db.prepare(
      `SELECT id, cache_tokens AS cacheTokens FROM messages WHERE chat_id = ? AND seq >= ? ORDER BY seq`,
    );
    this.deleteFrom = db.prepare(`DELETE FROM messages WHERE chat_id = ? AND seq >= ?`);
    this.sumCache = db.prepare(
      `SELECT COALESCE(SUM(cache_tokens), 0) AS tokens, COUNT(*) - COUNT(cache_tokens) AS unknown FROM messages WHERE chat_id = ?`,
    );
    this.recover = db.prepare(
      `UPDATE messages SET status = 'interrupted', updated_at = ?
       WHERE status = 'streaming' AND id NOT IN (SELECT value FROM json_each(?))`,
    );
    this.archiveVersion = db.prepare(
      `INSERT INTO answer_versions (message_id, version, text, status, created_at, tokens, tokens_per_second, page_refs, citations, error, cache_tokens)
       SELECT id, version, text, status, created_at, tokens, tokens_per_second, page_refs, citations, error, cache_tokens FROM messages WHERE id = ?`,
    );
    this.selectVersionRow = db.prepare(`SELECT * FROM answer_versions WHERE message_id = ? AND version = ?`);
    this.archiveQuestion = db.prepare(
      `INSERT INTO answer_versions (message_id, version, text, status, created_at, tokens, tokens_per_second, page_refs, citations, error, cache_tokens, branch)
       SELECT id, version, text, status, created_at, tokens, tokens_per_second, page_refs, citations, error, cache_tokens, ? FROM messages WHERE id = ?`,
    );
    this.selectAfter = db.prepare(`SELECT * FROM messages WHERE chat_id = ? AND seq > ? ORDER BY seq`);
    this.deleteAfter = db.prepare(`DELETE FROM messages WHERE chat_id = ? AND seq > ?`);
    this.selectVersionsOf = db.prepare(`SELECT * FROM answer_versions WHERE message_id = ? ORDER BY version`);
    // A branch's rows go back as they were read (SELECT *): every column, by name.
    const columns = (table: string) =>
      (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((c) => c.name);
    const insertAll = (table: string) => {
      const cols = columns(table);
      return db.prepare(`INSERT INTO ${table} (${cols.join(', ')}) VALUES (${cols.map((c) => `@${c}`).join(', ')})`);
    };
    this.insertMessageRow = insertAll('messages');
    this.insertVersionRow = insertAll('answer_versions');
    this.deleteVersion = db.prepare(`DELETE FROM answer_versions WHERE message_id = ? AND version = ?`);
    this.lastVersion = db
      .prepare(`SELECT MAX(m.version, COALESCE((SELECT MAX(version) FROM answer_versions WHERE message_id = m.id), 0))
                FROM messages m WHERE m.id = ?`)
      .pluck();
    this.restoreVersion = db.prepare(
      `UPDATE messages SET version = @version, text = @text, status = @status, created_at = @createdAt, tokens = @tokens,
         tokens_per_second = @tokensPerSecond, page_refs = @pageRefs, citations = @citations, error = @error,
         cache_tokens = @cacheTokens, updated_at = @now WHERE id = @id`,
    );
    // instr over lower(): case-insensitive for ASCII (SQLite's lower), which a search box needs most.
    const search = `SELECT m.id AS messageId, m.chat_id AS chatId, c.document_id AS documentId, c.title AS chatTitle,
        m.role, m.text, m.created_at AS createdAt
      FROM messages m JOIN chats c ON c.id = m.chat_id
      WHERE instr(lower(m.text), lower(@query)) > 0`;
    this.searchAll = db.prepare(`${search} ORDER BY m.created_at DESC, m.rowid DESC LIMIT @limit`);
    this.searchDocument = db.prepare(
      `${search} AND c.id IN (SELECT chat_id FROM chat_documents WHERE document_id = @documentId)
        ORDER BY m.created_at DESC, m.rowid DESC LIMIT @limit`,
    );
  }

  /** Appends a message to the chat (and marks the chat active), in one transaction. */
  add(chatId: string, m: NewMessage): Message {
    const id = newId();
    writeTransaction(this.db, () => {
      this.chats.require(chatId);
      this.insert.run({
        id,
        chatId,
        seq: this.nextSeq.get(chatId) as number,
        role: m.role,
        text: m.text,
        status: m.status ?? 'complete',
        now: isoTime(this.scheduler),
        tokens: m.tokens ?? null,
        tokensPerSecond: m.tokensPerSecond ?? null,
        pageRefs: JSON.stringify(m.pageRefs ?? []),
        citations: writeCitations(m.citations),
        error: m.error ?? null,
        cacheTokens: m.cacheTokens ?? null,
      });
      this.chats.touch(chatId);
    });
    return this.require(id);
  }

  get(id: string): Message | null {
    const row = this.selectOne.get(id) as Row | undefined;
    return row ? toMessage(row) : null;
  }

  require(id: string): Message {
    const m = this.get(id);
    if (!m) throw new StorageError('NOT_FOUND', `no message ${id}`);
    return m;
  }

  /** The chat's messages in order. */
  list(chatId: string): Message[] {
    return (this.selectByChat.all(chatId) as Row[]).map(toMessage);
  }

  update(id: string, patch: MessagePatch): Message {
    writeTransaction(this.db, () => {
      const row = this.selectOne.get(id) as Row | undefined;
      if (!row) throw new StorageError('NOT_FOUND', `no message ${id}`);
      this.updateAll.run({
        id,
        text: patch.text ?? row.text,
        status: patch.status ?? row.status,
        tokens: patch.tokens === undefined ? row.tokens : patch.tokens,
        tokensPerSecond: patch.tokensPerSecond === undefined ? row.tokens_per_second : patch.tokensPerSecond,
        pageRefs: patch.pageRefs === undefined ? row.page_refs : JSON.stringify(patch.pageRefs),
        citations: patch.citations === undefined ? row.citations : writeCitations(patch.citations),
        error: patch.error === undefined ? row.error : patch.error,
        cacheTokens: patch.cacheTokens === undefined ? row.cache_tokens : patch.cacheTokens,
        now: isoTime(this.scheduler),
      });
      this.chats.touch(row.chat_id);
    });
    return this.require(id);
  }

  /** Tokens a message occupies in the KV cache; null when unknown. */
  cacheTokens(id: string): number | null {
    const row = this.selectOne.get(id) as Row | undefined;
    if (!row) throw new StorageError('NOT_FOUND', `no message ${id}`);
    return row.cache_tokens;
  }

  /** The conversation's share of the context: the sum of its messages' cache tokens. */
  conversationTokens(chatId: string): { tokens: number; exact: boolean } {
    const r = this.sumCache.get(chatId) as { tokens: number; unknown: number };
    return { tokens: r.tokens, exact: r.unknown === 0 };
  }

  /**
   * Removes the message and every later one of its chat, in one transaction (regenerate drops the last
   * answer; edit drops a question and what follows). Streaming answers among them are dropped.
   */
  truncateFrom(chatId: string, messageId: string): Truncation {
    return writeTransaction(this.db, () => {
      const row = this.selectOne.get(messageId) as Row | undefined;
      if (!row || row.chat_id !== chatId)
        throw new StorageError('NOT_FOUND', `no message ${messageId} in chat ${chatId}`);
      const removed = this.selectFrom.all(chatId, row.seq) as { id: string; cacheTokens: number | null }[];
      this.deleteFrom.run(chatId, row.seq);
      this.chats.touch(chatId);
      for (const r of removed) this.streams.get(r.id)?.drop();
      return {
        removed: removed.map((r) => r.id),
        cacheTokens: removed.reduce((s, r) => s + (r.cacheTokens ?? 0), 0),
        exact: removed.every((r) => r.cacheTokens !== null),
      };
    });
  }

  /**
   * Replaces a question with a new version, in place, as a branch: the version it held is kept (like an
   * answer's, answer_versions) together with everything that followed it (its branch), and what followed is
   * removed; the next answer follows the new text. Refused while an answer after it is being written.
   */
  reviseQuestion(messageId: string, text: string): Message {
    return writeTransaction(this.db, () => {
      const row = this.requireQuestion(messageId);
      const branch = this.cutBranch(row);
      this.archiveQuestion.run(JSON.stringify(branch), messageId);
      return this.newVersion(row, (this.lastVersion.get(messageId) as number) + 1, text, 'complete');
    });
  }

  /** The message becomes a new version of itself, in place: `text`, and none of the numbers, pages or error
   * of the version it held (archived already, or replaced). */
  private newVersion(row: Row, version: number, text: string, status: 'complete' | 'streaming'): Message {
    const now = isoTime(this.scheduler);
    this.restoreVersion.run({
      id: row.id,
      version,
      text,
      status,
      createdAt: now,
      tokens: null,
      tokensPerSecond: null,
      pageRefs: '[]',
      citations: null,
      error: null,
      cacheTokens: null,
      now,
    });
    this.chats.touch(row.chat_id);
    return toMessage(this.selectOne.get(row.id) as Row);
  }

  private requireQuestion(messageId: string): Row {
    const row = this.selectOne.get(messageId) as Row | undefined;
    if (row?.role !== 'user') throw new StorageError('NOT_FOUND', `no question ${messageId}`);
    return row;
  }

  /** Removes what follows a question (its branch) and returns it: the messages and their earlier versions. */
  private cutBranch(row: Row): Branch {
    const messages = this.selectAfter.all(row.chat_id, row.seq) as Record<string, unknown>[];
    if (messages.some((m) => m.status === 'streaming'))
      throw new StorageError('BAD_REQUEST', 'an answer is still being written: stop it first');
    const versions = messages.flatMap((m) => this.selectVersionsOf.all(m.id) as Record<string, unknown>[]);
    this.deleteAfter.run(row.chat_id, row.seq);
    return { messages, versions };
  }

  /** Puts a branch back after its question (selectVersion of a question), with its messages' earlier versions. */
  private restoreBranch(branch: Branch): void {
    for (const m of branch.messages) this.insertMessageRow.run(m);
    for (const v of branch.versions) this.insertVersionRow.run(v);
  }

  /** Starts an assistant answer: a message marked 'streaming' whose text arrives through append(). */
  beginAnswer(chatId: string, options: { text?: string } = {}): StreamingAnswer {
    const m = this.add(chatId, { role: 'assistant', text: options.text ?? '', status: 'streaming' });
    return this.startStream(m, m.text);
  }

  private startStream(m: Message, text: string): StreamingAnswer {
    const answer = new StreamingAnswer(
      this.host,
      m.id,
      m.chatId,
      m.version.index,
      text,
      this.scheduler,
      this.flushIntervalMs,
      this.onError,
    );
    this.streams.set(m.id, answer);
    return answer;
  }

  /**
   * Starts a new version of a finished answer, in place (same message, same position): the version it held
   * is kept in answer_versions (unless it holds nothing: an empty answer that failed is replaced), and the
   * message becomes the new version, streaming.
   */
  reviseAnswer(messageId: string): StreamingAnswer {
    const m = writeTransaction(this.db, () => {
      const row = this.selectOne.get(messageId) as Row | undefined;
      if (row?.role !== 'assistant') throw new StorageError('NOT_FOUND', `no answer ${messageId}`);
      if (row.status === 'streaming')
        throw new StorageError('BAD_REQUEST', 'the answer is still being written: stop it first');
      const keep = row.text !== '' || row.status === 'complete';
      if (keep) this.archiveVersion.run(messageId);
      return this.newVersion(
        row,
        keep ? (this.lastVersion.get(messageId) as number) + 1 : row.version,
        '',
        'streaming',
      );
    });
    return this.startStream(m, '');
  }

  /**
   * Shows version `version` of an answer, or of an edited question with its branch (what followed it then):
   * it takes the message's place (what the conversation replays) and the version shown before joins the
   * others, a question's with its own branch. Refused while an answer is being written.
   */
  selectVersion(messageId: string, version: number): Message {
    return writeTransaction(this.db, () => {
      const row = this.selectOne.get(messageId) as Row | undefined;
      if (!row) throw new StorageError('NOT_FOUND', `no message ${messageId}`);
      if (row.version === version) return toMessage(row);
      if (row.status === 'streaming')
        throw new StorageError('BAD_REQUEST', 'the answer is still being written: stop it first');
      const v = this.selectVersionRow.get(messageId, version) as
        | (Omit<Row, 'id' | 'chat_id' | 'seq' | 'role' | 'others'> & { message_id: string; branch: string | null })
        | undefined;
      const what = row.role === 'user' ? 'question' : 'answer';
      if (!v) throw new StorageError('NOT_FOUND', `the ${what} has no version ${version} (it has ${row.others + 1})`);
      if (row.role === 'user') {
        this.archiveQuestion.run(JSON.stringify(this.cutBranch(row)), messageId);
        if (v.branch) this.restoreBranch(JSON.parse(v.branch) as Branch);
      } else this.archiveVersion.run(messageId);
      this.deleteVersion.run(messageId, version);
      this.restoreVersion.run({
        id: messageId,
        version,
        text: v.text,
        status: v.status,
        createdAt: v.created_at,
        tokens: v.tokens,
        tokensPerSecond: v.tokens_per_second,
        pageRefs: v.page_refs,
        citations: v.citations,
        error: v.error,
        cacheTokens: v.cache_tokens,
        now: isoTime(this.scheduler),
      });
      this.chats.touch(row.chat_id);
      return toMessage(this.selectOne.get(messageId) as Row);
    });
  }

  /** Messages (the versions shown) whose text holds `query`, ignoring case; newest first. */
  search(query: string, o: { documentId?: string; limit: number }): SearchRow[] {
    return (
      o.documentId
        ? this.searchDocument.all({ query, documentId: o.documentId, limit: o.limit })
        : this.searchAll.all({ query, limit: o.limit })
    ) as SearchRow[];
  }

  /** The open streaming answer with this id (e.g. for chats.stop), if any. */
  stream(messageId: string): StreamingAnswer | undefined {
    return this.streams.get(messageId);
  }

  /** All open streaming answers of this connection. */
  openStreams(): StreamingAnswer[] {
    return [...this.streams.values()];
  }

  /**
   * Startup recovery: messages still marked 'streaming' belong to answers cut off when the app died; they
   * become 'interrupted' with the text of their last write. Run it once at startup, before answering
   * anything (answers streaming in this process are left alone). Returns how many changed.
   */
  recoverInterrupted(): number {
    return this.recover.run(isoTime(this.scheduler), JSON.stringify([...this.streams.keys()])).changes;
  }

  private readonly host: StreamHost = {
    writeText: (id, text) => {
      this.writeStreamingText.run(text, isoTime(this.scheduler), id);
    },
    finish: (id, text, status, details: FinishDetails) => {
      return writeTransaction(this.db, () => {
        const row = this.selectOne.get(id) as Row | undefined;
        if (!row) return null;
        this.updateAll.run({
          id,
          text,
          status: status satisfies FinalStatus,
          tokens: details.tokens ?? row.tokens,
          tokensPerSecond: details.tokensPerSecond ?? row.tokens_per_second,
          pageRefs: details.pageRefs ? JSON.stringify(details.pageRefs) : row.page_refs,
          citations: details.citations === undefined ? row.citations : writeCitations(details.citations),
          error: details.error ?? row.error,
          cacheTokens: details.cacheTokens ?? row.cache_tokens,
          now: isoTime(this.scheduler),
        });
        this.chats.touch(row.chat_id);
        return toMessage(this.selectOne.get(id) as Row);
      });
    },
    release: (answer) => {
      if (this.streams.get(answer.id) === answer) this.streams.delete(answer.id);
    },
  };
}
