// What a session in the engine process belongs to. The core keeps the sessions it reuses (a document's
// pristine compressed cache, and each chat's fork of it) under these keys; short-lived sessions (an OpenAI
// request, a comparison) are not kept and have no key.
export type SessionKey =
  | { kind: 'document'; documentId: string }
  | { kind: 'chat'; documentId: string; chatId: string };

export const SessionKey = {
  /** A document's pristine compressed session, which chats fork. */
  document: (documentId: string): SessionKey => ({ kind: 'document', documentId }),
  /** A chat's fork of its document's session, holding the conversation. */
  chat: (documentId: string, chatId: string): SessionKey => ({ kind: 'chat', documentId, chatId }),
};

/** The one spelling of a key, for maps. */
export function sessionKeyId(key: SessionKey): string {
  return key.kind === 'document' ? `doc:${key.documentId}` : `chat:${key.documentId}:${key.chatId}`;
}
