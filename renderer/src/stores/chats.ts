// Chats and their messages. Answers stream as chat.token events that grow one message, found by id; the
// chat.message event then replaces it with the stored version (final text, status, speed, page
// references). Each message row reads only its own message, so a token re-renders one row.
import { create } from 'zustand';

import type {
  ChatExportFormat,
  ChatSearchHit,
  ChatStyle,
  ChatSummary,
  EventPayload,
  Message,
  Result,
  SetReading,
} from '../../../electron/api/contract.ts';
import { api, errorMessage } from '../api/client.ts';
import { saveTextFile } from '../lib/save-file.ts';
import { notify, selectChat, selectDocument, useUi } from './ui.ts';

export type ContextUsage = Result<'chats.get'>['usage'];

/** Client-side measurements of an answer being written (for tokens/s before the final number comes). */
export interface LiveStream {
  firstAt: number;
  lastAt: number;
  tokens: number;
}

export interface ChatsState {
  /** Chat ids of each document, most recently used first. */
  byDoc: Record<string, string[]>;
  chats: Record<string, ChatSummary>;
  messages: Record<string, Message>;
  /** Message ids of each loaded chat, in conversation order. */
  order: Record<string, string[]>;
  usage: Record<string, ContextUsage>;
  live: Record<string, LiveStream>;
  /** A message to bring into view (a search hit opened), and mark. */
  focus: string | null;
}

const initial: ChatsState = { byDoc: {}, chats: {}, messages: {}, order: {}, usage: {}, live: {}, focus: null };
export const useChats = create<ChatsState>()(() => ({ ...initial }));

export function resetChats(): void {
  useChats.setState({ ...initial }, true);
}

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());

function sameMessage(a: Message, b: Message): boolean {
  return (
    a.text === b.text &&
    a.status === b.status &&
    a.tokens === b.tokens &&
    a.tokensPerSecond === b.tokensPerSecond &&
    a.error === b.error &&
    a.pageRefs.length === b.pageRefs.length &&
    a.pageRefs.every((p, i) => p === b.pageRefs[i]) &&
    JSON.stringify(a.citations) === JSON.stringify(b.citations)
  );
}

/** A message as stored, but keeping text already streamed when the stored copy is behind it. */
function merged(existing: Message | undefined, incoming: Message): Message {
  if (!existing) return incoming;
  // Another version of an answer (regenerated in place, or browsed to) replaces the one shown, unless the
  // one shown is being written: a stale copy cannot end a stream. The version being written is the server's
  // number (the token events and the replies carry it), so its own final copy always has the same number.
  if (incoming.version.index !== existing.version.index) return existing.status === 'streaming' ? existing : incoming;
  // A finished version never streams again (regenerating makes a new version): a stale copy cannot undo it.
  if (incoming.status === 'streaming' && existing.status !== 'streaming') return existing;
  return kept(existing, incoming);
}

/** `incoming`, keeping text already streamed when it is behind `existing`, or `existing` when nothing changed. */
function kept(existing: Message, incoming: Message): Message {
  if (incoming.status === 'streaming' && existing.status === 'streaming' && existing.text.length > incoming.text.length)
    return { ...incoming, text: existing.text };
  return sameMessage(existing, incoming) ? existing : incoming;
}

/**
 * The server's reply to an action that starts an answer (send, regenerate, edit): what it says is being
 * written is, even where this window still shows a finished version of the same number (an empty stopped
 * answer is rewritten in place under its own number); only text already streamed into it is kept.
 */
function started(existing: Message | undefined, incoming: Message): Message {
  if (existing?.status !== 'streaming' || existing.version.index !== incoming.version.index) return incoming;
  return kept(existing, incoming);
}

function sortChats(ids: string[], chats: Record<string, ChatSummary>): string[] {
  return [...ids].sort((a, b) => (chats[b]?.updatedAt ?? '').localeCompare(chats[a]?.updatedAt ?? ''));
}

// ---------------------------------------------------------------------------------------------------------
// Events

export function onChatToken(t: EventPayload<'chat.token'>): void {
  useChats.setState((s) => {
    const order = s.order[t.chatId];
    const existing = s.messages[t.messageId];
    if (!existing && !order) return s; // a chat this window has not opened
    // The first words of a version this window does not show as being written (an answer regenerated in
    // place, started from another window): it starts empty, under the server's number.
    const revised: Message | undefined =
      existing && (existing.status !== 'streaming' || existing.version.index !== t.version)
        ? {
            ...existing,
            text: '',
            status: 'streaming',
            pageRefs: [],
            citations: null,
            error: null,
            tokens: null,
            tokensPerSecond: null,
            version: { index: t.version, count: Math.max(existing.version.count, t.version) },
          }
        : existing;
    const base: Message = revised ?? {
      id: t.messageId,
      chatId: t.chatId,
      role: 'assistant',
      text: '',
      status: 'streaming',
      createdAt: new Date().toISOString(),
      tokens: null,
      tokensPerSecond: null,
      pageRefs: [],
      citations: null,
      error: null,
      version: { index: t.version, count: t.version },
    };
    const at = now();
    const live = s.live[t.messageId];
    return {
      messages: { ...s.messages, [t.messageId]: { ...base, text: base.text + t.text } },
      order: order && !order.includes(t.messageId) ? { ...s.order, [t.chatId]: [...order, t.messageId] } : s.order,
      live: {
        ...s.live,
        [t.messageId]: live ? { ...live, lastAt: at, tokens: live.tokens + 1 } : { firstAt: at, lastAt: at, tokens: 1 },
      },
    };
  });
}

export function onChatMessage(m: Message): void {
  const loaded = !!useChats.getState().order[m.chatId];
  useChats.setState((s) => {
    const order = s.order[m.chatId];
    if (!order && !s.messages[m.id]) return s;
    const live = { ...s.live };
    if (m.status !== 'streaming') delete live[m.id];
    return {
      messages: { ...s.messages, [m.id]: merged(s.messages[m.id], m) },
      order: order && !order.includes(m.id) ? { ...s.order, [m.chatId]: [...order, m.id] } : s.order,
      live,
    };
  });
  // A finished answer changes the context usage and the chat's place in the list.
  if (loaded && m.status !== 'streaming') void refreshChat(m.chatId);
}

// ---------------------------------------------------------------------------------------------------------
// Actions

export async function loadChats(documentId: string): Promise<void> {
  try {
    const list = await api().call('chats.list', { documentId });
    useChats.setState((s) => {
      const chats = { ...s.chats };
      for (const c of list) chats[c.id] = c;
      return {
        chats,
        byDoc: {
          ...s.byDoc,
          [documentId]: sortChats(
            list.map((c) => c.id),
            chats,
          ),
        },
      };
    });
  } catch (e) {
    notify(`Could not list the chats: ${errorMessage(e)}`);
  }
}

/** Fetches a chat with its messages and context usage; keeps unchanged message objects (no re-render). */
export async function refreshChat(chatId: string): Promise<void> {
  let r: Result<'chats.get'>;
  try {
    r = await api().call('chats.get', { chatId });
  } catch (e) {
    if ((e as { code?: string }).code !== 'DISCONNECTED') notify(`Could not open the chat: ${errorMessage(e)}`);
    return;
  }
  useChats.setState((s) => {
    const messages = { ...s.messages };
    const ids = r.messages.map((m) => {
      messages[m.id] = merged(s.messages[m.id], m);
      return m.id;
    });
    // An answer that started after the server read the list stays at the end.
    for (const id of s.order[chatId] ?? []) if (!ids.includes(id) && messages[id]?.status === 'streaming') ids.push(id);
    const chats = { ...s.chats, [chatId]: r.chat };
    // Listed under each of its documents (a chat over a set is one of each one's chats).
    const byDoc = { ...s.byDoc };
    for (const d of r.chat.documentIds) {
      const docChats = byDoc[d] ?? [];
      byDoc[d] = sortChats(docChats.includes(chatId) ? docChats : [chatId, ...docChats], chats);
    }
    return { messages, chats, order: { ...s.order, [chatId]: ids }, usage: { ...s.usage, [chatId]: r.usage }, byDoc };
  });
}

/** A chat over the document, or over it and `others` (a set, read in that order). */
export async function createChat(
  documentId: string,
  style?: ChatStyle | null,
  others: readonly string[] = [],
): Promise<string | null> {
  try {
    const chat = await api().call('chats.create', {
      documentId,
      ...(style === undefined ? {} : { style }),
      ...(others.length ? { others: [...others] } : {}),
    });
    useChats.setState((s) => {
      const byDoc = { ...s.byDoc };
      for (const d of chat.documentIds) byDoc[d] = [chat.id, ...(byDoc[d] ?? []).filter((id) => id !== chat.id)];
      return { chats: { ...s.chats, [chat.id]: chat }, byDoc, order: { ...s.order, [chat.id]: [] } };
    });
    selectChat(chat.id);
    void refreshChat(chat.id);
    return chat.id;
  } catch (e) {
    notify(`Could not start a chat: ${errorMessage(e)}`);
    return null;
  }
}

/** A new chat over these documents (a set, in this order; or one), shown with one of them: the one on screen when
 * it is of the set, else the first. Picking documents in the library, and adding or removing one of a set's,
 * come here: another set is another chat. */
export async function chatOver(documentIds: readonly string[]): Promise<string | null> {
  const [first, ...others] = documentIds;
  if (!first) return null;
  if (!documentIds.includes(useUi.getState().documentId ?? '')) selectDocument(first);
  return createChat(first, undefined, others);
}

export async function deleteChat(chatId: string): Promise<void> {
  const chat = useChats.getState().chats[chatId];
  try {
    await api().call('chats.delete', { chatId });
  } catch (e) {
    notify(`The chat was not deleted: ${errorMessage(e)}`);
    return;
  }
  useChats.setState((s) => {
    const chats = { ...s.chats };
    delete chats[chatId];
    const order = { ...s.order };
    delete order[chatId];
    const byDoc = { ...s.byDoc };
    for (const d of chat?.documentIds ?? []) byDoc[d] = (byDoc[d] ?? []).filter((id) => id !== chatId);
    return { chats, order, byDoc };
  });
  if (useUi.getState().chatId === chatId) {
    const shown = useUi.getState().documentId;
    const next = shown ? (useChats.getState().byDoc[shown]?.[0] ?? null) : null;
    useUi.setState({ chatId: next });
  }
}

export async function renameChat(chatId: string, title: string): Promise<void> {
  try {
    const chat = await api().call('chats.rename', { chatId, title });
    useChats.setState((s) => ({ chats: { ...s.chats, [chatId]: chat } }));
  } catch (e) {
    notify(`The chat was not renamed: ${errorMessage(e)}`);
  }
}

/** How the chat's turns are written from its next question on (null: by the model). */
export async function setChatStyle(chatId: string, style: ChatStyle | null): Promise<void> {
  try {
    const chat = await api().call('chats.setStyle', { chatId, style });
    useChats.setState((s) => ({ chats: { ...s.chats, [chatId]: chat } }));
  } catch (e) {
    notify(`The chat's style was not changed: ${errorMessage(e)}`);
  }
}

/** How a chat over a set reads its documents from its next question on, and an assembled set's one budget (null:
 * none). */
export async function setChatReading(
  chatId: string,
  reading: SetReading,
  setBudget: number | null = null,
): Promise<void> {
  try {
    const chat = await api().call('chats.setReading', { chatId, reading, setBudget });
    useChats.setState((s) => ({ chats: { ...s.chats, [chatId]: chat } }));
  } catch (e) {
    notify(`The way the documents are read was not changed: ${errorMessage(e)}`);
  }
}

/** Puts a question and its (streaming) answer at the end of the chat, dropping `cutFrom` and what followed. */
function placeExchange(chatId: string, user: Message | null, assistant: Message, cutFrom?: string): void {
  useChats.setState((s) => {
    // What followed `cutFrom` goes (an edited question keeps it as its earlier version's branch), then the
    // exchange takes its place: the question may be `cutFrom` itself, revised.
    let ids = s.order[chatId] ?? [];
    if (cutFrom) {
      const at = ids.indexOf(cutFrom);
      if (at >= 0) ids = ids.slice(0, at);
    }
    ids = ids.filter((id) => id !== user?.id && id !== assistant.id);
    const messages = { ...s.messages, [assistant.id]: started(s.messages[assistant.id], assistant) };
    if (user) messages[user.id] = merged(s.messages[user.id], user);
    return { messages, order: { ...s.order, [chatId]: [...ids, ...(user ? [user.id] : []), assistant.id] } };
  });
}

/** Asks a question; returns false when it was not accepted (the question box keeps the text then). */
export async function sendQuestion(chatId: string, text: string): Promise<boolean> {
  try {
    const r = await api().call('chats.send', { chatId, text });
    placeExchange(chatId, r.user, r.assistant);
    // A chat's first question names it.
    if (r.user && useChats.getState().chats[chatId]?.messageCount === 0) void refreshChat(chatId);
    return true;
  } catch (e) {
    notify(`The question was not sent: ${errorMessage(e)}`);
    return false;
  }
}

export async function stopAnswer(chatId: string): Promise<void> {
  try {
    await api().call('chats.stop', { chatId });
  } catch (e) {
    notify(`Could not stop the answer: ${errorMessage(e)}`);
  }
}

export async function regenerateAnswer(chatId: string): Promise<void> {
  try {
    const r = await api().call('chats.regenerate', { chatId });
    useChats.setState((s) => {
      const ids = s.order[chatId] ?? [];
      const last = ids[ids.length - 1];
      const drop = last && last !== r.assistant.id && s.messages[last]?.role === 'assistant';
      return { order: { ...s.order, [chatId]: drop ? ids.slice(0, -1) : ids } };
    });
    placeExchange(chatId, null, r.assistant);
  } catch (e) {
    notify(`Could not answer again: ${errorMessage(e)}`);
  }
}

export async function editQuestion(chatId: string, messageId: string, text: string): Promise<boolean> {
  try {
    const r = await api().call('chats.edit', { chatId, messageId, text });
    placeExchange(chatId, r.user, r.assistant, messageId);
    return true;
  } catch (e) {
    notify(`The question was not changed: ${errorMessage(e)}`);
    return false;
  }
}

/** Shows another version of an answer; the conversation goes on from it. */
export async function selectVersion(chatId: string, messageId: string, version: number): Promise<void> {
  try {
    const m = await api().call('chats.selectVersion', { chatId, messageId, version });
    useChats.setState((s) => ({ messages: { ...s.messages, [m.id]: merged(s.messages[m.id], m) } }));
    void refreshChat(chatId);
  } catch (e) {
    notify(`Could not show that version: ${errorMessage(e)}`);
  }
}

/** Messages holding `query`: in one document's chats, or in all of them (documentId null). */
export async function searchChats(query: string, documentId: string | null): Promise<ChatSearchHit[] | null> {
  try {
    return await api().call('chats.search', documentId ? { query, documentId } : { query });
  } catch (e) {
    notify(`The search failed: ${errorMessage(e)}`);
    return null;
  }
}

/** Opens a search hit: its document, its chat, the message brought into view. */
export function openHit(hit: ChatSearchHit): void {
  if (useUi.getState().documentId !== hit.documentId) selectDocument(hit.documentId);
  selectChat(hit.chatId);
  useChats.setState({ focus: hit.messageId });
}

/** Saves a chat as a Markdown or JSON file (a download: the browser's, or the desktop's save dialog). */
export async function exportChat(chatId: string, format: ChatExportFormat): Promise<void> {
  try {
    const file = await api().call('chats.export', { chatId, format });
    saveTextFile(file.fileName, file.mimeType, file.text);
    notify(`Exported ${file.fileName}`, 'info');
  } catch (e) {
    notify(`The chat was not exported: ${errorMessage(e)}`);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Selectors

export const EMPTY: readonly string[] = Object.freeze([]);

/** The answer being written in a chat (always its last message), or null. */
export function streamingMessage(s: ChatsState, chatId: string | null): Message | null {
  if (!chatId) return null;
  const ids = s.order[chatId];
  const last = ids?.length ? s.messages[ids[ids.length - 1]] : undefined;
  return last && last.status === 'streaming' ? last : null;
}

/** Tokens per second of a streaming answer, measured here. */
export function liveRate(l: LiveStream | undefined): number | null {
  if (!l || l.tokens < 2 || l.lastAt <= l.firstAt) return null;
  return ((l.tokens - 1) * 1000) / (l.lastAt - l.firstAt);
}

/** Context usage including the tokens of an answer still being written. */
export function liveUsage(s: ChatsState, chatId: string | null): ContextUsage | null {
  if (!chatId) return null;
  const u = s.usage[chatId];
  if (!u) return null;
  const m = streamingMessage(s, chatId);
  const extra = m ? (s.live[m.id]?.tokens ?? 0) : 0;
  return extra ? { ...u, conversationTokens: u.conversationTokens + extra } : u;
}
