// Chats: conversations about one document. Messages are in messages.ts.
import type Database from 'better-sqlite3';

import type { ChatStyle, ChatSummary } from '../api/contract.ts';
import { isoTime, newId, type Scheduler } from './clock.ts';
import { StorageError } from './errors.ts';

export const DEFAULT_CHAT_TITLE = 'New chat';

const SUMMARY = `SELECT c.id, c.document_id AS documentId, c.title, c.created_at AS createdAt, c.updated_at AS updatedAt,
  c.style, (SELECT COUNT(*) FROM messages m WHERE m.chat_id = c.id) AS messageCount FROM chats c`;

export class ChatsRepo {
  private readonly insert;
  private readonly selectOne;
  private readonly selectByDocument;
  private readonly renameStmt;
  private readonly styleStmt;
  private readonly touchStmt;
  private readonly remove;
  private readonly setPositionsStmt;
  private readonly selectPositions;

  constructor(
    db: Database.Database,
    private readonly scheduler: Scheduler,
  ) {
    this.insert = db.prepare(
      `INSERT INTO chats (id, document_id, title, style, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
    );
    this.selectOne = db.prepare(`${SUMMARY} WHERE c.id = ?`);
    this.selectByDocument = db.prepare(`${SUMMARY} WHERE c.document_id = ? ORDER BY c.updated_at DESC, c.rowid DESC`);
    this.renameStmt = db.prepare(`UPDATE chats SET title = ?, updated_at = ? WHERE id = ?`);
    this.styleStmt = db.prepare(`UPDATE chats SET style = ? WHERE id = ?`);
    this.touchStmt = db.prepare(`UPDATE chats SET updated_at = ? WHERE id = ?`);
    this.remove = db.prepare(`DELETE FROM chats WHERE id = ?`);
    this.setPositionsStmt = db.prepare(
      `UPDATE chats SET conversation_positions = ?, conversation_messages = ? WHERE id = ?`,
    );
    this.selectPositions = db.prepare(
      `SELECT conversation_positions AS positions, conversation_messages AS messages FROM chats WHERE id = ?`,
    );
  }

  create(documentId: string, title?: string, style: ChatStyle | null = null): ChatSummary {
    const id = newId();
    const now = isoTime(this.scheduler);
    try {
      this.insert.run(id, documentId, title?.trim() || DEFAULT_CHAT_TITLE, style, now, now);
    } catch (e) {
      if ((e as { code?: string }).code === 'SQLITE_CONSTRAINT_FOREIGNKEY')
        throw new StorageError('NOT_FOUND', `no document ${documentId}`);
      throw e;
    }
    return this.require(id);
  }

  get(id: string): ChatSummary | null {
    return (this.selectOne.get(id) as ChatSummary | undefined) ?? null;
  }

  require(id: string): ChatSummary {
    const c = this.get(id);
    if (!c) throw new StorageError('NOT_FOUND', `no chat ${id}`);
    return c;
  }

  /** A document's chats, most recently active first. */
  list(documentId: string): ChatSummary[] {
    return this.selectByDocument.all(documentId) as ChatSummary[];
  }

  rename(id: string, title: string): ChatSummary {
    if (this.renameStmt.run(title, isoTime(this.scheduler), id).changes === 0)
      throw new StorageError('NOT_FOUND', `no chat ${id}`);
    return this.require(id);
  }

  /** How the chat's turns are written from its next question on (null: by the model). */
  setStyle(id: string, style: ChatStyle | null): ChatSummary {
    if (this.styleStmt.run(style, id).changes === 0) throw new StorageError('NOT_FOUND', `no chat ${id}`);
    return this.require(id);
  }

  /** Marks the chat active now (messages.ts calls this when a message is added or finished). */
  touch(id: string): void {
    this.touchStmt.run(isoTime(this.scheduler), id);
  }

  /**
   * Records the positions the chat's conversation took in the cache after its last answer, when it held
   * `messages` messages; null forgets them (the conversation changed under the cache).
   */
  setConversationPositions(id: string, at: { positions: number; messages: number } | null): void {
    this.setPositionsStmt.run(at?.positions ?? null, at?.messages ?? null, id);
  }

  /** The positions last recorded, if they still describe the chat: its message count is unchanged since. */
  conversationPositions(id: string): number | null {
    const r = this.selectPositions.get(id) as { positions: number | null; messages: number | null } | undefined;
    if (!r || r.positions === null || r.messages !== this.require(id).messageCount) return null;
    return r.positions;
  }

  /** Deletes the chat and its messages (cascade). False when there was no such chat. */
  delete(id: string): boolean {
    return this.remove.run(id).changes > 0;
  }
}
