import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';

import type { Message } from '../../../electron/api/contract.ts';
import {
  chat,
  createFakeApi,
  detail,
  doc,
  type FakeApi,
  message,
  model,
  rebasedDetail,
  usage,
} from '../test/fake-api.ts';
import { renderApp } from '../test/render-app.tsx';
import { useUi } from '../stores/ui.ts';
import { usageParts } from './ContextMeter.tsx';

const m = message;

/** A chat whose stored messages follow what the fake core does, as the real one's would. */
function chatApi(messages: Message[] = []): FakeApi & { finish(message: Message): void } {
  let stored = [...messages];
  const base = createFakeApi({
    'documents.list': () => [doc()],
    'documents.get': () => detail(),
    'chats.list': () => [chat({ messageCount: stored.length })],
    'chats.get': (p) => ({
      chat: chat({ id: p.chatId }),
      messages: p.chatId === 'c1' ? stored : [],
      usage: usage({ conversationTokens: 12 }),
    }),
    'chats.send': (p) => {
      const user = m({ id: `u${stored.length}`, role: 'user', text: p.text });
      const assistant = m({ id: `a${stored.length}`, status: 'streaming' });
      stored = [...stored, user, assistant];
      return { user, assistant };
    },
    'chats.stop': () => ({ ok: true }),
    'chats.regenerate': () => {
      const assistant = m({ id: 'a-re', status: 'streaming' });
      stored = [...stored.slice(0, stored.at(-1)?.role === 'assistant' ? -1 : undefined), assistant];
      return { assistant };
    },
    // An edit is a new version of the question, in place; what followed it goes with the old version.
    'chats.edit': (p) => {
      const at = stored.findIndex((x) => x.id === p.messageId);
      const v = stored[at].version.count + 1;
      const user = m({ id: p.messageId, role: 'user', text: p.text, version: { index: v, count: v } });
      const assistant = m({ id: 'a-ed', status: 'streaming' });
      stored = [...stored.slice(0, at), user, assistant];
      return { user, assistant };
    },
  });
  return Object.assign(base, {
    finish(message: Message) {
      stored = stored.map((x) => (x.id === message.id ? message : x));
      base.emit('chat.message', message);
    },
  });
}

describe('the chat', () => {
  it('sends a question with Enter and streams the answer into its message as Markdown', async () => {
    const api = chatApi();
    await renderApp(api);
    const box = await screen.findByRole('textbox', { name: 'Ask about Lily and the kite' });
    await waitFor(() => expect(box.hasAttribute('disabled')).toBe(false));
    await userEvent.type(box, 'Who had a kite?{Enter}');
    await waitFor(() => expect(api.callsOf('chats.send')).toEqual([{ chatId: 'c1', text: 'Who had a kite?' }]));
    expect((box as HTMLTextAreaElement).value).toBe('');
    const answer = await screen.findByRole('article', { name: 'Answer' });
    expect(answer.getAttribute('aria-busy')).toBe('true');
    expect(screen.getByRole('button', { name: 'Stop' })).toBeTruthy();
    act(() => {
      api.emit('chat.token', { chatId: 'c1', messageId: 'a0', version: 1, text: '**Lily**' });
      api.emit('chat.token', { chatId: 'c1', messageId: 'a0', version: 1, text: ' had it.' });
    });
    await waitFor(() => expect(answer.querySelector('strong')?.textContent).toBe('Lily'));
    expect(answer.textContent).toMatch(/Lily had it\./);
    // The stored answer replaces the streamed one: speed and the pages with the evidence.
    act(() => api.finish(m({ id: 'a0', text: '**Lily** had it.', tokens: 4, tokensPerSecond: 20, pageRefs: [2] })));
    await waitFor(() => expect(screen.getByText('4 tokens · 20.0 tokens/s')).toBeTruthy());
    expect(screen.queryByRole('button', { name: 'Stop' })).toBeNull();
    await userEvent.click(screen.getByRole('button', { name: 'Open page 2' }));
    expect(useUi.getState()).toMatchObject({ tab: 'document', docPage: 2 });
    expect(await screen.findByRole('article', { name: 'Page 2' })).toBeTruthy();
  });

  it("ranks an answer's page chips by its attention; a chip opens the page with the sentences it looked at", async () => {
    const api = chatApi([
      m({ id: 'u1', role: 'user', text: 'Who had a kite?' }),
      m({
        id: 'a1',
        text: 'The girl.',
        pageRefs: [1, 2],
        citations: [
          { page: 1, share: 0.8, sentences: [{ start: 36, end: 51, share: 0.6 }] },
          { page: 2, share: 0.2, sentences: [{ start: 0, end: 24, share: 0.2 }] },
        ],
      }),
    ]);
    await renderApp(api);
    const answer = await screen.findByRole('article', { name: 'Answer' });
    // The chips in the citations' order, each saying its share; the label says where they come from.
    const chips = within(answer).getAllByRole('button', { name: /^Open page/ });
    expect(chips.map((c) => c.textContent)).toEqual(['p. 1', 'p. 2']);
    expect(chips[0].getAttribute('aria-label')).toBe(
      "Open page 1, where 80% of the answer's attention to the document went",
    );
    expect(within(answer).getByText('Looked at')).toBeTruthy();
    await userEvent.click(chips[0]);
    expect(useUi.getState()).toMatchObject({
      tab: 'document',
      docPage: 1,
      citation: { documentId: 'd1', page: 1, ranges: [{ start: 36, end: 51, share: 0.6 }] },
    });
    // The document view highlights exactly the cited sentence.
    const page = await screen.findByRole('article', { name: 'Page 1' });
    const marks = page.querySelectorAll('.cited');
    expect([...marks].map((x) => x.textContent)).toEqual(['She had a kite.']);
    expect(screen.getByText(/the sentences the answer looked at most on page 1/)).toBeTruthy();
    await userEvent.click(screen.getByRole('button', { name: 'Clear' }));
    expect(useUi.getState().citation).toBeNull();
    expect(page.querySelectorAll('.cited')).toHaveLength(0);
  });

  it('an answer without citations keeps the lexical chips, which open the page without highlights', async () => {
    const api = chatApi([m({ id: 'u1', role: 'user', text: 'Q' }), m({ id: 'a1', text: 'A kite.', pageRefs: [2] })]);
    await renderApp(api);
    const answer = await screen.findByRole('article', { name: 'Answer' });
    expect(within(answer).getByText('Evidence on')).toBeTruthy();
    await userEvent.click(within(answer).getByRole('button', { name: 'Open page 2' }));
    expect(useUi.getState()).toMatchObject({ tab: 'document', docPage: 2, citation: null });
    const page = await screen.findByRole('article', { name: 'Page 2' });
    expect(page.querySelectorAll('.cited')).toHaveLength(0);
  });

  it('stop (button and Esc), regenerate, edit and copy', async () => {
    const api = chatApi([
      m({ id: 'u1', role: 'user', text: 'Q1' }),
      m({ id: 'a1', text: 'A1' }),
      m({ id: 'u2', role: 'user', text: 'Q2' }),
      m({ id: 'a2', status: 'streaming', text: 'partial' }),
    ]);
    await renderApp(api);
    await screen.findByText('partial');
    await userEvent.click(screen.getByRole('button', { name: 'Stop' }));
    expect(api.callsOf('chats.stop')).toEqual([{ chatId: 'c1' }]);
    fireEvent.keyDown(window, { key: 'Escape' });
    expect(api.callsOf('chats.stop')).toHaveLength(2);
    act(() => api.finish(m({ id: 'a2', text: 'partial', status: 'cancelled' })));
    expect(await screen.findByText('Stopped')).toBeTruthy();
    await userEvent.click(screen.getByRole('button', { name: 'Regenerate answer' }));
    expect(api.callsOf('chats.regenerate')).toEqual([{ chatId: 'c1' }]);
    act(() => api.finish(m({ id: 'a-re', text: 'again' })));
    await screen.findByText('again');
    await userEvent.click(screen.getAllByRole('button', { name: 'Copy answer' })[0]);
    expect(navigator.clipboard.writeText).toHaveBeenCalledWith('A1');
    await userEvent.click(screen.getAllByRole('button', { name: 'Edit question' })[0]);
    const edit = screen.getByRole('textbox', { name: 'Edit your question' });
    // Editing puts the cursor in the question box.
    expect(document.activeElement).toBe(edit);
    await userEvent.clear(edit);
    await userEvent.type(edit, 'Where did Lily go?');
    await userEvent.click(screen.getByRole('button', { name: 'Ask again' }));
    expect(api.callsOf('chats.edit')).toEqual([{ chatId: 'c1', messageId: 'u1', text: 'Where did Lily go?' }]);
    // The edited question replaces the conversation on screen, and offers its earlier version (a branch).
    await screen.findByText('Where did Lily go?');
    expect(screen.queryByText('Q2')).toBeNull();
    const pager = screen.getByRole('group', { name: 'Versions of this question' });
    expect(pager.textContent).toContain('2/2');
    // Renaming the chat puts the cursor in the name box.
    await userEvent.click(screen.getByTitle('Rename this chat'));
    expect(document.activeElement).toBe(screen.getByRole('textbox', { name: 'Chat name' }));
  });

  it('shows interrupted and failed answers as such', async () => {
    await renderApp(
      chatApi([
        m({ id: 'u1', role: 'user', text: 'Q' }),
        m({
          id: 'a1',
          text: 'half',
          status: 'interrupted',
          error: 'the engine stopped while answering; the answer was interrupted',
        }),
        m({ id: 'u2', role: 'user', text: 'Q' }),
        m({ id: 'a2', status: 'failed', error: 'out of memory' }),
      ]),
    );
    const answers = await screen.findAllByRole('article', { name: 'Answer' });
    expect(within(answers[0]).getByText('Interrupted')).toBeTruthy();
    expect(within(answers[0]).getByText(/engine stopped/)).toBeTruthy();
    expect(within(answers[1]).getByText('Failed')).toBeTruthy();
    expect(within(answers[1]).getByRole('alert').textContent).toBe('out of memory');
  });

  it('shows how full the context is in positions: system prompt, document and conversation; and the memory kept', async () => {
    await renderApp(chatApi([m({ id: 'u1', role: 'user', text: 'Q' })]));
    const meter = await screen.findByRole('meter', { name: 'Context used' });
    await waitFor(() =>
      expect(meter.getAttribute('aria-valuetext')).toBe(
        '387 of 512 positions (76%): system prompt 24, document 351, conversation 12',
      ),
    );
    expect((meter as HTMLMeterElement).value).toBe(387);
    expect((meter as HTMLMeterElement).max).toBe(512);
    const bar = screen.getByTestId('context-meter');
    expect(within(bar).getByText('387 / 512')).toBeTruthy();
    // The cache as kept against full, in the app's byte format (72,000 and 240,000 bytes).
    expect(screen.getByTestId('context-cache').textContent).toBe('memory 70.3 KiB kept of 234.4 KiB');
    // Each part of the bar is its share of the context.
    const widths = ['sys', 'doc', 'conv'].map((k) => bar.querySelector<HTMLElement>(`.meter-${k}`)?.style.width);
    expect(widths.map((w) => Number.parseFloat(w ?? '')).map((w) => w.toFixed(2))).toEqual(['4.69', '68.55', '2.34']);
  });

  it('never reads above its maximum, and says when the document takes only the positions of what it kept', () => {
    // The walk: a regenerate refused on a full context once showed "606 / 512, nearly full".
    const over = usageParts(usage({ documentTokens: 369, conversationTokens: 213 }));
    expect([over.used, over.fraction, over.level]).toEqual([512, 1, 'full']);
    expect(over.text).toMatch(/^512 of 512 positions \(100%\)/);
    const packed = usageParts(usage({ documentTokens: 74, documentPacked: true, conversationTokens: 60 }));
    expect(packed.text).toBe(
      '158 of 512 positions (31%): system prompt 24, document 74 (packed: its kept entries only), conversation 60',
    );
  });

  it('a document longer than the context says so on the chat, its library card and its header, with the budget kept', async () => {
    // Six stories (630 tokens) in 512 positions, read re-based keeping 96 per head: not the settings' 30%.
    const api = chatApi();
    api.handlers['documents.list'] = () => [rebasedDetail()];
    api.handlers['documents.get'] = () => rebasedDetail();
    await renderApp(api);
    const warning = await screen.findByTestId('chat-long-read');
    expect(warning.textContent).toBe(
      '⚠ Lower quality: the document (630 tokens) is longer than the model’s context of 512 positions, so it was read ' +
        'with re-based positions, keeping 96 per head ≈ 15%. Compress a range of pages that fits for better answers.',
    );
    expect(screen.getByTestId('doc-long-read').textContent).toMatch(
      /Longer than the context: read with re-based positions/,
    );
    const budget = screen.getByTestId('doc-budget');
    expect(budget.textContent).toBe('Ada-SnapKV · 96 per head ≈ 15% (not the settings’ 30% budget)');
    expect(budget.getAttribute('title')).toMatch(/the context's positions hold no more than 96 per head/);
    // The way out is one click away: the Document tab, where the ranges that fit are offered.
    await userEvent.click(within(warning).getByRole('button', { name: 'Compress a range of pages that fits' }));
    expect(useUi.getState().tab).toBe('document');
  });

  it('before any chat, meters the document against the context it was read into', async () => {
    const api = chatApi();
    api.handlers['chats.list'] = () => [];
    await renderApp(api);
    const meter = await screen.findByRole('meter', { name: 'Context used' });
    // The split comes with the document's detail: its pages hold 30 of its 375 tokens, the rest is the prompt.
    await waitFor(() =>
      expect(meter.getAttribute('aria-valuetext')).toBe(
        '375 of 512 positions (73%): system prompt 345, document 30, conversation 0',
      ),
    );
    expect(screen.getByTestId('context-cache').textContent).toBe('memory 70.3 KiB kept of 234.4 KiB');
  });

  it('an answer stopped by a full context offers a new chat over the same document', async () => {
    const api = chatApi([
      m({ id: 'u1', role: 'user', text: 'Tell me everything' }),
      m({ id: 'a1', text: 'Once upon', error: 'the answer stopped because the context is full' }),
    ]);
    api.handlers['chats.create'] = (p) => chat({ id: 'c2', documentId: p.documentId, title: 'Chat 2' });
    await renderApp(api);
    const answer = await screen.findByRole('article', { name: 'Answer' });
    expect(within(answer).getByText('Stopped: the context is full')).toBeTruthy();
    // The core's sentence is replaced by the UI's, not shown beside it.
    expect(within(answer).queryByText(/because the context is full/)).toBeNull();
    await userEvent.click(within(answer).getByRole('button', { name: 'New chat over this document' }));
    expect(api.callsOf('chats.create')).toEqual([{ documentId: 'd1' }]);
    await waitFor(() => expect(useUi.getState()).toMatchObject({ chatId: 'c2', tab: 'chat' }));
  });

  it('other errors are shown as the core words them, with no new-chat offer', async () => {
    await renderApp(
      chatApi([m({ id: 'u1', role: 'user', text: 'Q' }), m({ id: 'a1', text: 'A', error: 'something else' })]),
    );
    const answer = await screen.findByRole('article', { name: 'Answer' });
    expect(within(answer).getByText('something else')).toBeTruthy();
    expect(within(answer).queryByRole('button', { name: 'New chat over this document' })).toBeNull();
  });

  it('the question box waits while the document is still being read', async () => {
    const api = chatApi();
    api.handlers['documents.list'] = () => [doc({ status: 'compressing' })];
    await renderApp(api);
    const box = await screen.findByRole('textbox', { name: /Ask about/ });
    await waitFor(() => expect(box.getAttribute('placeholder')).toBe('The document is being compressed.'));
    expect(box.hasAttribute('disabled')).toBe(true);
  });

  it('a base model continues text by default; a chat can be asked as a conversation instead', async () => {
    const api = chatApi([m({ id: 'u1', role: 'user', text: 'Q' })]);
    api.handlers['models.list'] = () => [model({ chatTemplate: false })];
    api.handlers['chats.setStyle'] = (p) => chat({ id: p.chatId, style: p.style, messageCount: 1 });
    await renderApp(api);
    const box = await screen.findByRole('textbox', { name: /Ask about/ });
    const style = screen.getByRole('combobox', { name: 'Answers:' }) as HTMLSelectElement;
    await waitFor(() =>
      expect(style.selectedOptions[0].textContent).toBe('By the model (continue text: it has no chat template)'),
    );
    expect(box.getAttribute('placeholder')).toMatch(/^Write the start of a sentence/);
    // Text to continue is sent as typed: a trailing space asks for the next word.
    await userEvent.type(box, 'The secret code is {Enter}');
    expect(api.callsOf('chats.send')).toEqual([{ chatId: 'c1', text: 'The secret code is ' }]);
    await userEvent.selectOptions(style, 'chat');
    expect(api.callsOf('chats.setStyle')).toEqual([{ chatId: 'c1', style: 'chat' }]);
    await waitFor(() => expect(box.getAttribute('placeholder')).toMatch(/^Ask about/));
  });

  it('a failed document offers only what can help: nothing for a damaged file', async () => {
    const api = chatApi();
    const failed = { status: 'failed' as const, error: 'broken.pdf is damaged', errorCode: 'CORRUPT' };
    api.handlers['documents.list'] = () => [doc({ ...failed, remedy: null })];
    await renderApp(api);
    const hint = await screen.findByText(/Enter to send/);
    // The walk: a corrupt PDF offered "Try reading it again" under the question box, which could not work.
    expect(screen.queryByRole('button', { name: /Try/ })).toBeNull();
    api.emit('documents.changed', doc({ ...failed, errorCode: 'ENGINE_CRASHED', remedy: 'compress' }));
    // What can help is offered where the failure is shown (the header, the failed imports), not again here.
    await waitFor(() => expect(screen.getAllByRole('button', { name: 'Try again' }).length).toBeGreaterThan(0));
    expect(within(hint).queryByRole('button')).toBeNull();
  });
});
