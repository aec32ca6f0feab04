// The library's and the chats' new pieces, over the fake API: failed imports apart with only the actions
// that help, the password prompt (again when wrong), the duplicate question, renaming a document; search
// across chats, the versions of an answer, export as a download.
import { act, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';

import { ApiError } from '../../../electron/api/contract.ts';
import { importFiles } from '../stores/documents.ts';
import { useChats } from '../stores/chats.ts';
import { useUi } from '../stores/ui.ts';
import { chat, createFakeApi, detail, doc, message, usage } from '../test/fake-api.ts';
import { renderApp } from '../test/render-app.tsx';

const failed = (id: string, over: Parameters<typeof doc>[0]) =>
  doc({ id, status: 'failed', kvBytesFull: null, kvBytesKept: null, compression: null, pages: 0, ...over });

function libraryApi() {
  return createFakeApi({
    'documents.list': () => [
      doc({ id: 'd1', title: 'Lily and the kite', createdAt: '2026-02-01T00:00:00Z' }),
      failed('d2', {
        title: 'scan',
        fileName: 'scan.pdf',
        error: 'scan.pdf is damaged',
        errorCode: 'CORRUPT',
        remedy: null,
        createdAt: '2026-01-03T00:00:00Z',
      }),
      failed('d3', {
        title: 'report',
        fileName: 'report.pdf',
        error: 'the engine stopped',
        errorCode: 'ENGINE_CRASHED',
        remedy: 'import',
        createdAt: '2026-01-02T00:00:00Z',
      }),
    ],
    'documents.get': (p) => detail({ id: p.documentId }),
    'documents.delete': () => ({ ok: true }),
    'documents.import': (p) => ({ documentId: 'documentId' in p ? p.documentId : 'd9', taskId: 't9' }),
    'documents.rename': (p) => doc({ id: p.documentId, title: p.title }),
    'chats.list': () => [chat()],
    'chats.get': () => ({ chat: chat(), messages: [], usage: usage() }),
  });
}

describe('failed imports', () => {
  it('are listed apart, each with only the action that can help, dismissable one by one or all', async () => {
    const api = libraryApi();
    await renderApp(api);
    const section = await screen.findByRole('region', { name: 'Failed imports' });
    expect(screen.getAllByTestId('document')).toHaveLength(1);
    const rows = within(section).getAllByTestId('failed-document');
    expect(rows.map((r) => r.textContent)).toEqual([
      expect.stringMatching(/^scanscan\.pdfscan\.pdf is damagedDismiss$/),
      expect.stringMatching(/^reportreport\.pdfthe engine stoppedTry againDismiss$/),
    ]);
    await userEvent.click(within(rows[1]).getByRole('button', { name: 'Try again' }));
    expect(api.callsOf('documents.import')).toEqual([{ documentId: 'd3' }]);
    // Collapsible.
    await userEvent.click(within(section).getByRole('button', { name: /Failed imports \(2\)/ }));
    expect(within(section).queryAllByTestId('failed-document')).toHaveLength(0);
    await userEvent.click(within(section).getByRole('button', { name: 'Dismiss all' }));
    await waitFor(() => expect(api.callsOf('documents.delete')).toEqual([{ documentId: 'd2' }, { documentId: 'd3' }]));
    await waitFor(() => expect(screen.queryByRole('region', { name: 'Failed imports' })).toBeNull());
  });

  it('leaves out an import its user cancelled: it stays in the library, to be read again', async () => {
    const api = createFakeApi({
      'documents.list': () => [
        doc({ id: 'd1' }),
        failed('d2', {
          title: 'report',
          fileName: 'report.pdf',
          error: 'cancelled',
          errorCode: 'CANCELLED',
          remedy: 'import',
        }),
      ],
      'documents.get': (p) => detail({ id: p.documentId }),
      'documents.import': (p) => ({ documentId: 'documentId' in p ? p.documentId : 'd9', taskId: 't9' }),
      'chats.list': () => [],
    });
    await renderApp(api);
    await waitFor(() => expect(screen.getAllByTestId('document')).toHaveLength(2));
    expect(screen.queryByRole('region', { name: 'Failed imports' })).toBeNull();
    const row = screen.getAllByTestId('document')[1];
    expect(row.textContent).toMatch(/^reportreport\.pdf.*Cancelledcancelled✎/);
    expect(row.querySelector('.doc-error')).toBeNull();
    await userEvent.click(within(row).getByRole('button', { name: /^report/ }));
    expect(screen.queryByRole('alert')).toBeNull();
    await userEvent.click(await screen.findByRole('button', { name: 'Try again' }));
    expect(api.callsOf('documents.import')).toEqual([{ documentId: 'd2' }]);
  });

  it('asks for a PDF’s password when its import stops for one, and again, saying so, when it was wrong', async () => {
    const api = libraryApi();
    await renderApp(api);
    await screen.findAllByTestId('document');
    const locked = doc({
      id: 'd5',
      title: 'locked',
      fileName: 'locked.pdf',
      status: 'importing',
      createdAt: '2026-03-01T00:00:00Z',
    });
    act(() => api.emit('documents.changed', locked));
    act(() =>
      api.emit('documents.changed', {
        ...locked,
        status: 'failed',
        error: 'locked.pdf: the PDF is password-protected',
        errorCode: 'PASSWORD_REQUIRED',
        remedy: 'password',
      }),
    );
    let dialog = await screen.findByRole('dialog', { name: 'Password needed' });
    expect(dialog.textContent).toMatch(/locked\.pdf is protected by a password/);
    await userEvent.type(within(dialog).getByLabelText('Password'), 'not-it{Enter}');
    expect(api.callsOf('documents.import')).toEqual([{ documentId: 'd5', password: 'not-it' }]);
    expect(screen.queryByRole('dialog')).toBeNull();

    act(() => api.emit('documents.changed', { ...locked, status: 'importing' }));
    act(() =>
      api.emit('documents.changed', {
        ...locked,
        status: 'failed',
        error: 'the password given is wrong',
        errorCode: 'PASSWORD_WRONG',
        remedy: 'password',
      }),
    );
    dialog = await screen.findByRole('dialog', { name: 'Password needed' });
    expect(dialog.textContent).toMatch(/The password was wrong/);
    expect((within(dialog).getByLabelText('Password') as HTMLInputElement).value).toBe('');
    await userEvent.click(within(dialog).getByRole('button', { name: 'Cancel' }));
    // The failed import offers the prompt again.
    const row = screen.getAllByTestId('failed-document').find((r) => r.textContent?.includes('locked'))!;
    await userEvent.click(within(row).getByRole('button', { name: 'Enter password…' }));
    expect(screen.getByRole('dialog', { name: 'Password needed' })).toBeTruthy();
  });
});

describe('the library', () => {
  it('asks what to do with a file it has already: open that one, or keep both', async () => {
    const api = libraryApi();
    await renderApp(api);
    await screen.findAllByTestId('document');
    const uploads: RequestInit[] = [];
    vi.stubGlobal('fetch', async (_url: string, init: RequestInit) => {
      uploads.push(init);
      if (!(init.headers as Record<string, string>)['x-folio-keep-duplicate'])
        return new Response(
          JSON.stringify({
            error: {
              code: 'DUPLICATE',
              message: 'kite.txt is already in the library',
              details: { documentId: 'd1', title: 'Lily and the kite' },
            },
          }),
          { status: 409 },
        );
      return new Response(JSON.stringify({ result: { documentId: 'd9', taskId: 't9' } }), { status: 200 });
    });
    try {
      const file = new File(['Once upon a time'], 'kite.txt');
      useUi.setState({ documentId: 'd3' });
      await act(() => importFiles([file]));
      let dialog = await screen.findByRole('dialog', { name: 'Already in the library' });
      expect(dialog.textContent).toMatch(/kite\.txt has the same content as “Lily and the kite”/);
      await userEvent.click(within(dialog).getByRole('button', { name: 'Open the existing one' }));
      expect(useUi.getState().documentId).toBe('d1');
      expect(uploads).toHaveLength(1);

      await act(() => importFiles([file]));
      dialog = await screen.findByRole('dialog', { name: 'Already in the library' });
      await userEvent.click(within(dialog).getByRole('button', { name: 'Keep both' }));
      await waitFor(() => expect(uploads).toHaveLength(3));
      expect((uploads[2].headers as Record<string, string>)['x-folio-keep-duplicate']).toBe('1');
      expect(useUi.getState().documentId).toBe('d9');
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('renames a document in place; the file name stays beside the title', async () => {
    const api = libraryApi();
    await renderApp(api);
    const [item] = await screen.findAllByTestId('document');
    expect(item.textContent).toMatch(/^Lily and the kitelily\.txt/);
    await userEvent.click(within(item).getByRole('button', { name: 'Rename Lily and the kite' }));
    const box = within(item).getByRole('textbox', { name: 'Document title' });
    await userEvent.clear(box);
    await userEvent.type(box, 'The red kite{Enter}');
    expect(api.callsOf('documents.rename')).toEqual([{ documentId: 'd1', title: 'The red kite' }]);
    await waitFor(() => expect(screen.getAllByTestId('document')[0].textContent).toMatch(/^The red kitelily\.txt/));
    // Escape leaves the title as it was.
    await userEvent.click(within(screen.getAllByTestId('document')[0]).getByRole('button', { name: /^Rename/ }));
    await userEvent.type(screen.getByRole('textbox', { name: 'Document title' }), 'x{Escape}');
    expect(api.callsOf('documents.rename')).toHaveLength(1);
  });
});

const m = message;

function chatApi() {
  let messages = [
    m({ id: 'u1', role: 'user', text: 'Who had a kite?' }),
    m({ id: 'a1', text: 'Lily had it.', version: { index: 2, count: 3 } }),
  ];
  return createFakeApi({
    'documents.list': () => [doc()],
    'documents.get': () => detail(),
    'chats.list': () => [chat({ messageCount: 2 }), chat({ id: 'c2', title: 'Other', messageCount: 2 })],
    'chats.get': (p) => ({ chat: chat({ id: p.chatId }), messages: p.chatId === 'c1' ? messages : [], usage: usage() }),
    'chats.selectVersion': (p) => {
      const shown = m({ id: p.messageId, text: 'Tom had it.', version: { index: p.version, count: 3 } });
      messages = messages.map((x) => (x.id === shown.id ? shown : x));
      return shown;
    },
    'chats.search': (p) => [
      {
        chatId: 'c2',
        documentId: 'd1',
        chatTitle: 'Other',
        messageId: 'm7',
        role: 'user',
        snippet: `…the red ${p.query} flew…`,
        matchStart: 9,
        matchEnd: 9 + p.query.length,
        createdAt: '2026-01-01T00:00:00.000Z',
      },
    ],
    'chats.export': (p) => ({
      fileName: p.format === 'json' ? 'Chat 1.json' : 'Chat 1.md',
      mimeType: p.format === 'json' ? 'application/json' : 'text/markdown',
      text: '# Chat 1\n',
    }),
  });
}

describe('chats', () => {
  it('lists the empty chat "New chat" reuses only while it is open: leaving it unused leaves no entry behind', async () => {
    const empty = chat({ id: 'c9', title: 'New chat', updatedAt: '2026-01-03T00:00:00.000Z', messageCount: 0 });
    const said = chat({ id: 'c1', title: 'Who had a kite?', updatedAt: '2026-01-02T00:00:00.000Z', messageCount: 2 });
    // As the core lists them: the newest empty chat first, then the chats with messages.
    const api = createFakeApi({
      'documents.list': () => [doc()],
      'documents.get': () => detail(),
      'chats.list': () => [empty, said],
      'chats.create': () => empty,
      'chats.get': (p) => ({ chat: p.chatId === 'c9' ? empty : said, messages: [], usage: usage() }),
    });
    await renderApp(api);
    const list = await screen.findByRole('region', { name: 'Chats' });
    const entries = () =>
      within(list)
        .queryAllByRole('listitem')
        .map((li) => li.textContent);
    // The document opens on its conversation, not on the empty chat.
    await waitFor(() => expect(useUi.getState().chatId).toBe('c1'));
    expect(entries()).toEqual(['Who had a kite?2']);
    await userEvent.click(within(list).getByRole('button', { name: 'New chat' }));
    await waitFor(() => expect(entries()).toEqual(['New chat0', 'Who had a kite?2']));
    await userEvent.click(within(list).getByRole('button', { name: /^Who had a kite/ }));
    expect(entries()).toEqual(['Who had a kite?2']);
  });

  it('browses the versions of a regenerated answer', async () => {
    const api = chatApi();
    await renderApp(api);
    const answer = await screen.findByRole('article', { name: 'Answer' });
    const pager = within(answer).getByRole('group', { name: 'Versions of this answer' });
    expect(pager.textContent).toMatch(/2\/3/);
    await userEvent.click(within(pager).getByRole('button', { name: 'Earlier version' }));
    expect(api.callsOf('chats.selectVersion')).toEqual([{ chatId: 'c1', messageId: 'a1', version: 1 }]);
    await waitFor(() => expect(within(answer).getByText('Tom had it.')).toBeTruthy());
    expect(within(answer).getByRole('group').textContent).toMatch(/1\/3/);
    expect((within(answer).getByRole('button', { name: 'Earlier version' }) as HTMLButtonElement).disabled).toBe(true);
  });

  it('searches the chats, this document’s or all, and opens a hit at its message', async () => {
    const api = chatApi();
    await renderApp(api);
    const box = await screen.findByRole('searchbox', { name: 'Search chats' });
    await userEvent.type(box, 'kite');
    const hits = await screen.findByRole('list', { name: 'Search results' });
    expect(api.callsOf('chats.search').at(-1)).toEqual({ query: 'kite', documentId: 'd1' });
    expect(within(hits).getByText('kite').tagName).toBe('MARK');
    await userEvent.click(screen.getByRole('checkbox', { name: /all documents/ }));
    await waitFor(() => expect(api.callsOf('chats.search').at(-1)).toEqual({ query: 'kite' }));
    await userEvent.click(within(hits).getByRole('button', { name: /Other · question/ }));
    expect(useUi.getState().chatId).toBe('c2');
    expect(useChats.getState().focus).toBe('m7');
  });

  it('exports a chat as Markdown or JSON, saved as a download', async () => {
    const api = chatApi();
    const created: Blob[] = [];
    const clicks: string[] = [];
    vi.stubGlobal(
      'URL',
      Object.assign(URL, { createObjectURL: (b: Blob) => (created.push(b), 'blob:x'), revokeObjectURL: () => {} }),
    );
    const click = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(function (this: HTMLAnchorElement) {
      clicks.push(this.download);
    });
    try {
      await renderApp(api);
      await screen.findByRole('article', { name: 'Answer' });
      await userEvent.click(screen.getByRole('button', { name: 'Export' }));
      await userEvent.click(screen.getByRole('button', { name: 'Markdown' }));
      await waitFor(() => expect(clicks).toEqual(['Chat 1.md']));
      expect(api.callsOf('chats.export')).toEqual([{ chatId: 'c1', format: 'markdown' }]);
      expect(
        await new Promise((resolve) => {
          const r = new FileReader();
          r.onload = () => resolve(r.result);
          r.readAsText(created[0]);
        }),
      ).toBe('# Chat 1\n');
      expect(created[0].type).toMatch(/^text\/markdown/);
      await userEvent.click(screen.getByRole('button', { name: 'Export' }));
      await userEvent.click(screen.getByRole('button', { name: 'JSON' }));
      await waitFor(() => expect(clicks).toEqual(['Chat 1.md', 'Chat 1.json']));
    } finally {
      click.mockRestore();
      vi.unstubAllGlobals();
    }
  });

  it('a refused export says why', async () => {
    const api = chatApi();
    api.handlers['chats.export'] = () => {
      throw new ApiError('NOT_FOUND', 'no chat c1');
    };
    await renderApp(api);
    await screen.findByRole('article', { name: 'Answer' });
    await userEvent.click(screen.getByRole('button', { name: 'Export' }));
    await userEvent.click(screen.getByRole('button', { name: 'JSON' }));
    expect(await screen.findByText(/The chat was not exported: no chat c1/)).toBeTruthy();
  });
});
