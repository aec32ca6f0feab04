// Chats: conversations about one document or a set of them (chat_documents, in the order the model reads
// them). Messages are in messages.ts.
import type Database from 'better-sqlite3';

import type { ChatStyle, ChatSummary, SetReading } from '../api/contract.ts';
import { isoTime, newId, type Scheduler } from './clock.ts';
import { StorageError } from './errors.ts';
import { writeTransaction } from './transaction.ts';

export const DEFAULT_CHAT_TITLE = 'New chat';

const SUMMARY = `SELECT c.id, c.document_id AS documentId, c.title, c.created_at AS createdAt, c.updated_at AS updatedAt,
  c.style, c.reading, c.set_budget AS setBudget, (SELECT COUNT(*) FROM messages m WHERE m.chat_id = c.id) AS messageCount,
  (SELECT json_group_array(document_id) FROM (SELECT document_id FROM chat_documents d WHERE d.chat_id = c.id
    ORDER BY d.ordinal)) AS documentIds FROM chats c`;

type SummaryRow = Omit<ChatSummary, 'documentIds'> & { documentIds: string };
const summary = (r: SummaryRow): ChatSummary => ({ ...r, documentIds: JSON.parse(r.documentIds) as string[] });

export class ChatsRepo {
  private readonly insert;
  private readonly selectOne;
  private readonly selectByDocument;
  private readonly renameStmt;
  private readonly styleStmt;
  private readonly readingStmt;
  private readonly touchStmt;
  private readonly remove;
  private readonly selectIds;
  private readonly setPositionsStmt;
  private readonly selectPositions;

  constructor(
    db: Database.Database,
    private readonly scheduler: Scheduler,
  ) {
    const insertChat = db.prepare(
      `INSERT INTO chats (id, document_id, title, style, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
    );
    const insertDocument = db.prepare(`INSERT INTO chat_documents (chat_id, document_id, ordinal) VALUES (?, ?, ?)`);
    this.insert = (id: string, documentIds: readonly string[], title: string, style: ChatStyle | null, now: string) =>
      writeTransaction(db, () => {
        insertChat.run(id, documentIds[0], title, style, now, now);
        documentIds.forEach((d, i) => insertDocument.run(id, d, i));
      });
    this.selectOne = db.prepare(`${SUMMARY} WHERE c.id = ?`);
    this.selectByDocument = db.prepare(
      `${SUMMARY} WHERE c.id IN (SELECT chat_id FROM chat_documents WHERE document_id = ?)
       ORDER BY c.updated_at DESC, c.rowid DESC`,
    );
    this.renameStmt = db.prepare(`UPDATE chats SET title = ?, updated_at = ? WHERE id = ?`);
    this.styleStmt = db.prepare(`UPDATE chats SET style = ? WHERE id = ?`);
    this.readingStmt = db.prepare(`UPDATE chats SET reading = ?, set_budget = ? WHERE id = ?`);
    this.touchStmt = db.prepare(`UPDATE chats SET updated_at = ? WHERE id = ?`);
    this.remove = db.prepare(`DELETE FROM chats WHERE id = ?`);
    this.selectIds = db.prepare(`SELECT id FROM chats`).pluck();
    this.setPositionsStmt = db.prepare(
      `UPDATE chats SET conversation_positions = ?, conversation_messages = ? WHERE id = ?`,
    );
    this.selectPositions = db.prepare(
      `SELECT conversation_positions AS positions, conversation_messages AS messages FROM chats WHERE id = ?`,
    );
  }

  /** A chat over a document, or a set of them (each once), read in that order. */
  create(documents: string | readonly string[], title?: string, style: ChatStyle | null = null): ChatSummary {
    const documentIds = typeof documents === 'string' ? [documents] : documents;
    if (documentIds.length === 0 || new Set(documentIds).size !== documentIds.length)
      throw new StorageError('BAD_REQUEST', 'a chat is over one or more different documents');
    const id = newId();
    const now = isoTime(this.scheduler);
    try {
      this.insert(id, documentIds, title?.trim() || DEFAULT_CHAT_TITLE, style, now);
    } catch (e) {
      if ((e as { code?: string }).code === 'SQLITE_CONSTRAINT_FOREIGNKEY')
        throw new StorageError('NOT_FOUND', `no document ${documentIds.join(' or ')}`);
      throw e;
    }
    return this.require(id);
  }

  get(id: string): ChatSummary | null {
    const r = this.selectOne.get(id) as SummaryRow | undefined;
    return r ? summary(r) : null;
  }

  require(id: string): ChatSummary {
    const c = this.get(id);
    if (!c) throw new StorageError('NOT_FOUND', `no chat ${id}`);
    return c;
  }

  /** Every chat's id. */
  ids(): string[] {
    return this.selectIds.all() as string[];
  }

  /** The chats over a document, alone or in a set, most recently active first. */
  list(documentId: string): ChatSummary[] {
    return (this.selectByDocument.all(documentId) as SummaryRow[]).map(summary);
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

  /** How a chat over a set reads its documents from its next question on, and its one budget (null: none). */
  setReading(id: string, reading: SetReading, setBudget: number | null = null): ChatSummary {
    if (this.readingStmt.run(reading, setBudget, id).changes === 0)
      throw new StorageError('NOT_FOUND', `no chat ${id}`);
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
