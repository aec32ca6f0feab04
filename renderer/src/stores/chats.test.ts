import { describe, expect, it } from 'vitest';

import type { Message } from '../../../electron/api/contract.ts';
import { setApi } from '../api/client.ts';
import { chat, createFakeApi, message, usage } from '../test/fake-api.ts';
import {
  chatOver,
  deleteChat,
  editQuestion,
  liveRate,
  liveUsage,
  onChatMessage,
  onChatToken,
  refreshChat,
  regenerateAnswer,
  sendQuestion,
  streamingMessage,
  useChats,
} from './chats.ts';

const msg = message;

function openChat(messages: Message[] = []) {
  useChats.setState({
    order: { c1: messages.map((m) => m.id) },
    messages: Object.fromEntries(messages.map((m) => [m.id, m])),
    usage: { c1: usage({ conversationTokens: 10 }) },
  });
}

describe('streaming answers, by message id', () => {
  it('grows the message a token names, and only that message', () => {
    openChat([msg({ id: 'u1', role: 'user', text: 'Q' }), msg({ id: 'a1', status: 'streaming' })]);
    const before = useChats.getState().messages.u1;
    onChatToken({ chatId: 'c1', messageId: 'a1', version: 1, text: 'Once' });
    onChatToken({ chatId: 'c1', messageId: 'a1', version: 1, text: ' upon' });
    const s = useChats.getState();
    expect(s.messages.a1.text).toBe('Once upon');
    expect(s.messages.u1).toBe(before); // untouched object: its row does not re-render
    expect(s.live.a1.tokens).toBe(2);
    expect(streamingMessage(s, 'c1')?.id).toBe('a1');
    expect(liveUsage(s, 'c1')).toEqual(usage({ conversationTokens: 12 }));
  });

  it('keeps two chats streaming at once apart', () => {
    useChats.setState({
      order: { c1: ['a1'], c2: ['b1'] },
      messages: {
        a1: msg({ id: 'a1', status: 'streaming' }),
        b1: msg({ id: 'b1', chatId: 'c2', status: 'streaming' }),
      },
    });
    onChatToken({ chatId: 'c1', messageId: 'a1', version: 1, text: 'A' });
    onChatToken({ chatId: 'c2', messageId: 'b1', version: 1, text: 'B' });
    onChatToken({ chatId: 'c1', messageId: 'a1', version: 1, text: 'A' });
    expect(useChats.getState().messages.a1.text).toBe('AA');
    expect(useChats.getState().messages.b1.text).toBe('B');
  });

  it('tokens that arrive before the send call returns are kept, in order after the question', async () => {
    openChat();
    const user = msg({ id: 'u1', role: 'user', text: 'Who?' });
    const assistant = msg({ id: 'a1', status: 'streaming' });
    const api = createFakeApi({
      'chats.send': () => {
        // The core streams the first tokens before the answer to the call reaches the UI.
        onChatToken({ chatId: 'c1', messageId: 'a1', version: 1, text: 'Lily' });
        onChatToken({ chatId: 'c1', messageId: 'a1', version: 1, text: ' did' });
        return { user, assistant };
      },
      'chats.get': () => ({
        chat: chat(),
        messages: [user, { ...assistant, text: 'Lily did.', status: 'complete' }],
        usage: usage({ conversationTokens: 20 }),
      }),
    });
    setApi(api);
    expect(await sendQuestion('c1', 'Who?')).toBe(true);
    let s = useChats.getState();
    expect(s.order.c1).toEqual(['u1', 'a1']);
    expect(s.messages.a1.text).toBe('Lily did');
    // The final message replaces the streamed one (final text, status, speed, pages).
    onChatMessage({
      ...assistant,
      text: 'Lily did.',
      status: 'complete',
      tokens: 3,
      tokensPerSecond: 42,
      pageRefs: [1],
    });
    s = useChats.getState();
    expect(s.messages.a1).toMatchObject({ text: 'Lily did.', status: 'complete', tokensPerSecond: 42, pageRefs: [1] });
    expect(s.live.a1).toBeUndefined();
    await new Promise((r) => setTimeout(r, 0));
    expect(api.callsOf('chats.get')).toEqual([{ chatId: 'c1' }]); // usage refreshed after the answer
    expect(useChats.getState().usage.c1.conversationTokens).toBe(20);
  });

  it('ignores tokens of chats this window has not opened', () => {
    onChatToken({ chatId: 'other', messageId: 'z', version: 1, text: 'x' });
    expect(useChats.getState().messages.z).toBeUndefined();
  });

  it('regenerate drops the last answer; edit drops the question and what followed', async () => {
    openChat([msg({ id: 'u1', role: 'user' }), msg({ id: 'a1' }), msg({ id: 'u2', role: 'user' }), msg({ id: 'a2' })]);
    setApi(
      createFakeApi({
        'chats.regenerate': () => ({ assistant: msg({ id: 'a3', status: 'streaming' }) }),
        'chats.edit': () => ({
          user: msg({ id: 'u4', role: 'user', text: 'new' }),
          assistant: msg({ id: 'a4', status: 'streaming' }),
        }),
      }),
    );
    await regenerateAnswer('c1');
    expect(useChats.getState().order.c1).toEqual(['u1', 'a1', 'u2', 'a3']);
    expect(await editQuestion('c1', 'u2', 'new')).toBe(true);
    expect(useChats.getState().order.c1).toEqual(['u1', 'a1', 'u4', 'a4']);
  });

  it('regenerate rewrites the answer in place as a new version; its first tokens start it empty', async () => {
    openChat([msg({ id: 'u1', role: 'user' }), msg({ id: 'a1', text: 'Old answer.' })]);
    setApi(
      createFakeApi({
        'chats.regenerate': () => ({
          assistant: msg({ id: 'a1', status: 'streaming', version: { index: 2, count: 2 } }),
        }),
      }),
    );
    // A token may come before the call returns: it starts the new version, not the old text.
    onChatToken({ chatId: 'c1', messageId: 'a1', version: 2, text: 'New' });
    expect(useChats.getState().messages.a1).toMatchObject({ text: 'New', status: 'streaming', version: { index: 2 } });
    await regenerateAnswer('c1');
    expect(useChats.getState().order.c1).toEqual(['u1', 'a1']);
    expect(useChats.getState().messages.a1.text).toBe('New');
    // A stale copy of the old version cannot end the stream; the finished new one replaces it.
    onChatMessage(msg({ id: 'a1', text: 'Old answer.', version: { index: 1, count: 2 } }));
    expect(useChats.getState().messages.a1.status).toBe('streaming');
    onChatMessage(msg({ id: 'a1', text: 'New answer.', version: { index: 2, count: 2 } }));
    expect(useChats.getState().messages.a1).toMatchObject({ text: 'New answer.', status: 'complete' });
    // Browsing back to the first version shows it.
    onChatMessage(msg({ id: 'a1', text: 'Old answer.', version: { index: 1, count: 2 } }));
    expect(useChats.getState().messages.a1.text).toBe('Old answer.');
  });

  it('an answer stopped before its first word and regenerated ends when its final copy comes (no endless "Writing")', async () => {
    // The server rewrites an empty stopped answer in place under its own number (nothing to keep as a version).
    openChat([msg({ id: 'u1', role: 'user' }), msg({ id: 'a1', text: '', status: 'cancelled' })]);
    setApi(
      createFakeApi({
        'chats.regenerate': () => ({ assistant: msg({ id: 'a1', text: '', status: 'streaming' }) }),
      }),
    );
    await regenerateAnswer('c1');
    expect(useChats.getState().messages.a1.status).toBe('streaming');
    onChatToken({ chatId: 'c1', messageId: 'a1', version: 1, text: 'Lily' });
    expect(useChats.getState().messages.a1).toMatchObject({ text: 'Lily', version: { index: 1, count: 1 } });
    onChatMessage(msg({ id: 'a1', text: 'Lily ran.' }));
    expect(useChats.getState().messages.a1).toMatchObject({ text: 'Lily ran.', status: 'complete' });
    expect(streamingMessage(useChats.getState(), 'c1')).toBeNull();
  });

  it('a refresh keeps unchanged messages as they were (no re-render) and adopts changed ones', async () => {
    const m1 = msg({ id: 'u1', role: 'user', text: 'Q' });
    openChat([m1, msg({ id: 'a1', text: 'old' })]);
    setApi(
      createFakeApi({
        'chats.get': () => ({
          chat: chat(),
          messages: [{ ...m1 }, msg({ id: 'a1', text: 'new' })],
          usage: usage({ conversationTokens: 2 }),
        }),
      }),
    );
    await refreshChat('c1');
    expect(useChats.getState().messages.u1).toBe(m1);
    expect(useChats.getState().messages.a1.text).toBe('new');
  });

  it('measures tokens per second while streaming', () => {
    expect(liveRate({ firstAt: 0, lastAt: 1000, tokens: 11 })).toBe(10);
    expect(liveRate({ firstAt: 0, lastAt: 0, tokens: 1 })).toBeNull();
  });
});

describe('a chat over a set of documents', () => {
  it('is listed under each of its documents, and leaves each list when deleted', async () => {
    const set = chat({ id: 's1', documentIds: ['d1', 'd2', 'd3'] });
    const api = createFakeApi({
      'chats.create': () => set,
      'chats.get': () => ({ chat: set, messages: [], usage: usage() }),
      'chats.delete': () => ({ ok: true }),
    });
    setApi(api);
    useChats.setState({ byDoc: { d2: ['c9'] }, chats: {}, order: {} });
    expect(await chatOver(['d1', 'd2', 'd3'])).toBe('s1');
    expect(api.callsOf('chats.create')).toEqual([{ documentId: 'd1', others: ['d2', 'd3'] }]);
    const byDoc = useChats.getState().byDoc;
    expect([byDoc.d1, byDoc.d2, byDoc.d3]).toEqual([['s1'], ['s1', 'c9'], ['s1']]);
    await deleteChat('s1');
    expect(useChats.getState().byDoc).toEqual({ d1: [], d2: ['c9'], d3: [] });
  });
});
