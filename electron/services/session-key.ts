// What a session in the engine process belongs to. The core keeps the sessions it reuses (a document's
// pristine compressed cache, and each chat's session: a fork of its document's, or a set's caches assembled)
// under these keys; short-lived sessions (an OpenAI request, a comparison) are not kept and have no key.
export type SessionKey =
  | { kind: 'document'; documentId: string }
  | { kind: 'chat'; documentIds: readonly string[]; chatId: string };

export const SessionKey = {
  /** A document's pristine compressed session, which chats fork. */
  document: (documentId: string): SessionKey => ({ kind: 'document', documentId }),
  /** A chat's session holding the conversation, over its documents. */
  chat: (documentIds: readonly string[], chatId: string): SessionKey => ({ kind: 'chat', documentIds, chatId }),
};

/** The one spelling of a key, for maps. */
export function sessionKeyId(key: SessionKey): string {
  return key.kind === 'document' ? `doc:${key.documentId}` : `chat:${key.chatId}`;
}

/** Whether the session is made from the document's cache (it goes when that cache is replaced). */
export function sessionUses(key: SessionKey, documentId: string): boolean {
  return key.kind === 'document' ? key.documentId === documentId : key.documentIds.includes(documentId);
}
