import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';

import type { WsApi } from '../../../electron/api/ws-client.ts';
import { chat, createFakeApi, detail, doc, engine, usage } from '../test/fake-api.ts';
import { renderApp } from '../test/render-app.tsx';
import { useUi } from '../stores/ui.ts';
import { ApiError } from '../../../electron/api/contract.ts';

function libraryApi() {
  return createFakeApi({
    'documents.list': () => [
      doc({ id: 'd1', title: 'Lily and the kite', createdAt: '2026-02-01T00:00:00Z' }),
      doc({
        id: 'd2',
        title: 'Broken scan',
        status: 'failed',
        error: 'the PDF has no text layer',
        kvBytesFull: null,
        kvBytesKept: null,
        createdAt: '2026-01-01T00:00:00Z',
      }),
      doc({ id: 'd3', title: 'Old settings', status: 'stale', createdAt: '2025-12-01T00:00:00Z' }),
    ],
    'documents.get': (p) => detail({ id: p.documentId }),
    'documents.delete': () => ({ ok: true }),
    'documents.import': () => ({ documentId: 'd9', taskId: 't9' }),
    'chats.list': () => [chat()],
    'chats.get': () => ({
      chat: chat(),
      messages: [],
      usage: usage(),
    }),
    'chats.create': () => chat({ id: 'c2', title: 'Chat 2' }),
  });
}

describe('the library', () => {
  it('shows each document with its file, size, status, method, budget and memory saved; failures apart, in words', async () => {
    await renderApp(libraryApi());
    const items = await screen.findAllByTestId('document');
    expect(items).toHaveLength(2);
    expect(items[0].textContent).toMatch(
      /Lily and the kitelily\.txt1 page · 375 tokensReady Ada-SnapKV · 30%saves 70% of the cache/,
    );
    expect(items[1].textContent).toMatch(/Stale/);
    expect(items[1].textContent).toMatch(/rebuilt when you next ask/);
    const failed = screen.getAllByTestId('failed-document');
    expect(failed).toHaveLength(1);
    expect(failed[0].textContent).toMatch(/Broken scan/);
    expect(failed[0].textContent).toMatch(/the PDF has no text layer/);
  });

  it('deletes only after a confirmation', async () => {
    const api = libraryApi();
    await renderApp(api);
    await userEvent.click(await screen.findByRole('button', { name: 'Delete Old settings' }));
    const dialog = screen.getByRole('dialog', { name: 'Delete “Old settings”?' });
    await userEvent.click(within(dialog).getByRole('button', { name: 'Keep it' }));
    expect(api.callsOf('documents.delete')).toEqual([]);
    await userEvent.click(screen.getByRole('button', { name: 'Delete Old settings' }));
    await userEvent.click(within(screen.getByRole('dialog')).getByRole('button', { name: 'Delete' }));
    expect(api.callsOf('documents.delete')).toEqual([{ documentId: 'd3' }]);
    await waitFor(() => expect(screen.getAllByTestId('document')).toHaveLength(1));
  });

  it('imports files dropped on the window', async () => {
    const api = libraryApi();
    const { container } = await renderApp(api);
    const file = new File(['Once upon a time'], 'dropped.md');
    const dataTransfer = { types: ['Files'], files: [file], dropEffect: 'none' };
    fireEvent.dragOver(container.firstElementChild!, { dataTransfer });
    expect(screen.getByText('Drop to import into the library')).toBeTruthy();
    // In a browser the dropped file is uploaded to the web host as it is (POST /api/upload).
    const uploads: { url: string; init: RequestInit }[] = [];
    vi.stubGlobal('fetch', async (url: string, init: RequestInit) => {
      uploads.push({ url, init });
      return new Response(JSON.stringify({ result: { documentId: 'd9', taskId: 't9' } }), { status: 200 });
    });
    try {
      fireEvent.drop(container.firstElementChild!, { dataTransfer });
      await waitFor(() => expect(uploads.map((u) => [u.url, u.init.body])).toEqual([['/api/upload', file]]));
      expect(api.callsOf('documents.import')).toEqual([]);
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('shows an import’s progress on its document', async () => {
    const api = libraryApi();
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() =>
      api.emit('task.progress', {
        taskId: 't1',
        kind: 'prefill',
        documentId: 'd1',
        done: 50,
        total: 200,
        etaMs: 4000,
        message: 'reading',
      }),
    );
    const bars = screen.getAllByRole('progressbar', { name: 'Reading into the model' });
    expect(bars.length).toBeGreaterThan(0);
    expect(bars[0].getAttribute('aria-valuetext')).toBe('50 of 200 tokens · 25% · 4 s left');
    expect(screen.getAllByRole('button', { name: 'Cancel: Reading into the model' }).length).toBeGreaterThan(0);
  });
});

describe('keyboard shortcuts', () => {
  it('new chat, tabs, focus, settings and the help overlay', async () => {
    const api = libraryApi();
    await renderApp(api);
    await screen.findAllByTestId('document');
    fireEvent.keyDown(window, { key: '#', code: 'Digit3', ctrlKey: true, shiftKey: true });
    expect(useUi.getState().tab).toBe('inspector');
    expect(screen.getByRole('tab', { name: 'Inspector' }).getAttribute('aria-selected')).toBe('true');
    fireEvent.keyDown(window, { key: '@', code: 'Digit2', ctrlKey: true, shiftKey: true });
    expect(useUi.getState().tab).toBe('document');
    fireEvent.keyDown(window, { key: 'O', ctrlKey: true, shiftKey: true });
    await waitFor(() => expect(api.callsOf('chats.create')).toEqual([{ documentId: 'd1' }]));
    fireEvent.keyDown(window, { key: '/' });
    await waitFor(() => expect(document.activeElement?.id).toBe('question'));
    fireEvent.keyDown(window, { key: '/', ctrlKey: true });
    const help = screen.getByRole('dialog', { name: 'Keyboard shortcuts' });
    expect(help.textContent).toMatch(/New chat over the selected document/);
    fireEvent.keyDown(help, { key: 'Escape' });
    expect(screen.queryByRole('dialog')).toBeNull();
    // A click inside the dialog keeps it; a click outside it closes it.
    fireEvent.keyDown(window, { key: '/', ctrlKey: true });
    await userEvent.click(screen.getByRole('heading', { name: 'Keyboard shortcuts' }));
    expect(screen.getByRole('dialog', { name: 'Keyboard shortcuts' })).toBeTruthy();
    await userEvent.click(document.querySelector('.backdrop-close') as HTMLElement);
    expect(screen.queryByRole('dialog')).toBeNull();
    fireEvent.keyDown(window, { key: ',', ctrlKey: true });
    expect(useUi.getState().route).toBe('settings');
  });
});

describe('engine and connection', () => {
  it('says when the engine crashed and is restarting', async () => {
    const api = libraryApi();
    await renderApp(api);
    act(() =>
      api.emit('engine.status', engine({ state: 'crashed', message: 'killed by signal SIGKILL', willRestart: true })),
    );
    expect(screen.getByTestId('engine-crashed').textContent).toMatch(
      /stopped unexpectedly \(killed by signal SIGKILL\)/,
    );
    expect(screen.queryByRole('button', { name: 'Retry' })).toBeNull();
    expect(screen.getByRole('status', { name: 'Engine stopped unexpectedly, restarting' })).toBeTruthy();
    act(() => api.emit('engine.status', engine({ state: 'starting', restarts: 1 })));
    expect(screen.getByText('Restarting the engine (restart 1)…')).toBeTruthy();
    act(() => api.emit('engine.status', engine({ state: 'ready', restarts: 1 })));
    expect(screen.queryByText(/Restarting/)).toBeNull();
  });

  it('an engine that crashed too often: the last error, a Retry that starts it again, and why when it does not', async () => {
    const message =
      'the engine stopped unexpectedly 4 times in a minute (last: killed by signal SIGSEGV), so it is not restarted by itself: retry, or choose a model, to start it again';
    let fail = true;
    const api = createFakeApi({
      'engine.restart': () => {
        if (fail) throw new ApiError('ENGINE_UNAVAILABLE', 'the native engine did not load');
        return engine({ state: 'ready', restarts: 4 });
      },
    });
    await renderApp(api);
    act(() => api.emit('engine.status', engine({ state: 'crashed', message, restarts: 3, willRestart: false })));
    const banner = screen.getByTestId('engine-down');
    expect(banner.textContent).toContain(`The engine is stopped: ${message}. Your chats are safe.`);
    expect(screen.queryByTestId('engine-crashed')).toBeNull(); // it is not "being restarted"
    const badge = screen.getByRole('status', { name: 'Engine stopped unexpectedly, waiting for Retry' });
    expect(within(badge).getByTitle(message)).toBeTruthy();

    await userEvent.click(within(banner).getByRole('button', { name: 'Retry' }));
    expect(api.callsOf('engine.restart')).toEqual([{}]);
    expect(await screen.findByText('The engine did not start: the native engine did not load')).toBeTruthy();
    expect(screen.getByTestId('engine-down')).toBeTruthy();

    fail = false;
    await userEvent.click(within(screen.getByTestId('engine-down')).getByRole('button', { name: 'Retry' }));
    await waitFor(() => expect(screen.queryByTestId('engine-down')).toBeNull());
    expect(api.callsOf('engine.restart')).toHaveLength(2);
    expect(screen.getByRole('status', { name: 'Engine ready' })).toBeTruthy();
  });

  it('in a browser: connection lost, then restored (and everything loaded again)', async () => {
    const api = libraryApi();
    const listeners = new Set<(c: boolean) => void>();
    const ws = {
      ...api,
      connected: false,
      onConnection: (l: (c: boolean) => void) => (listeners.add(l), () => listeners.delete(l)),
      close() {},
    } as unknown as WsApi;
    await renderApp(api, ws);
    const set = (c: boolean) => act(() => listeners.forEach((l) => l(c)));
    set(true);
    expect(screen.queryByTestId('connection-lost')).toBeNull(); // the first connection is not a restore
    const before = api.callsOf('documents.list').length;
    set(false);
    expect(screen.getByTestId('connection-lost').textContent).toMatch(/connection to Folio was lost/);
    set(true);
    expect(screen.queryByTestId('connection-lost')).toBeNull();
    expect(screen.getByText('Connected again.')).toBeTruthy();
    await waitFor(() => expect(api.callsOf('documents.list').length).toBe(before + 1));
  });
});

describe('accessibility basics', () => {
  it('every control has a name, tabs are a tab list, the sidebar and main are landmarks', async () => {
    await renderApp(libraryApi());
    await screen.findAllByTestId('document');
    for (const b of screen.getAllByRole('button'))
      expect(b.textContent?.trim() || b.getAttribute('aria-label'), b.outerHTML).toBeTruthy();
    for (const t of screen.getAllByRole('textbox'))
      expect(t.id && document.querySelector(`label[for="${t.id}"]`), t.outerHTML).toBeTruthy();
    expect(screen.getByRole('complementary', { name: 'Library' })).toBeTruthy();
    expect(screen.getByRole('main')).toBeTruthy();
    const tabs = within(screen.getByRole('tablist', { name: 'Views of the document' })).getAllByRole('tab');
    expect(tabs.map((t) => t.textContent)).toEqual(['Chat', 'Document', 'Inspector']);
    expect(tabs.filter((t) => t.tabIndex === 0)).toHaveLength(1); // one tab stop; arrows move between tabs
    tabs[0].focus();
    fireEvent.keyDown(tabs[0], { key: 'ArrowRight' });
    expect(useUi.getState().tab).toBe('document');
    expect(document.activeElement?.textContent).toBe('Document');
    expect(screen.getByRole('tabpanel').getAttribute('aria-labelledby')).toBe('tab-document');
    expect(screen.getByText('Skip to the main content').getAttribute('href')).toBe('#main');
  });
});

describe('the desktop shell', () => {
  it('menu commands, documents opened from the OS, and the native open dialog', async () => {
    const { fakeShell } = await import('../test/fake-api.ts');
    const shell = fakeShell({ openFileDialog: async () => ['/home/me/paper.pdf'] });
    const api = libraryApi();
    api.shell = shell;
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => shell.menu('inspector'));
    expect(useUi.getState().tab).toBe('inspector');
    act(() => shell.menu('settings'));
    expect(useUi.getState().route).toBe('settings');
    act(() => shell.menu('new-chat'));
    await waitFor(() => expect(api.callsOf('chats.create')).toHaveLength(1));
    act(() => shell.menu('open-document'));
    await waitFor(() => expect(api.callsOf('documents.import')).toEqual([{ path: '/home/me/paper.pdf' }]));
    act(() => shell.opened({ path: '/home/me/notes.md', ok: true, documentId: 'd7', taskId: 't7' }));
    expect(useUi.getState().documentId).toBe('d7');
    act(() =>
      shell.opened({ path: '/home/me/x.exe', ok: false, error: { code: 'UNSUPPORTED', message: 'not a document' } }),
    );
    expect(screen.getByText('x.exe was not imported: not a document')).toBeTruthy();
    // The Import button uses the native dialog, not the page's file input.
    act(() => useUi.setState({ route: 'main' }));
    await userEvent.click(screen.getByRole('button', { name: 'Import…' }));
    await waitFor(() => expect(api.callsOf('documents.import')).toHaveLength(2));
    fireEvent.keyDown(window, { key: '/', ctrlKey: true });
    expect(screen.getByRole('dialog', { name: 'Keyboard shortcuts' }).textContent).toMatch(/Import a document/);
  });
});
