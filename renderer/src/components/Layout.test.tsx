// The layout's pieces that do not need a real browser: the sidebar's toggle (hide, show, and on its own in a
// narrow window, where it opens over the page), and toasts (they expire, errors later, each with a close
// button; a finished import says so). The widths themselves are checked in Chromium (test/e2e-layout.test.ts).
import { act, render, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { createFakeApi, doc } from '../test/fake-api.ts';
import { renderApp } from '../test/render-app.tsx';
import { NOTICE_MS, notify, useUi } from '../stores/ui.ts';
import { registerTask } from '../stores/tasks.ts';
import { startApp } from '../wire.ts';
import { App } from './App.tsx';
import { NARROW_QUERY } from './SidebarToggle.tsx';

/** jsdom's matchMedia, answering `narrow` for the sidebar's query. */
function setNarrow(narrow: boolean) {
  Object.defineProperty(window, 'matchMedia', {
    configurable: true,
    value: (query: string) => ({
      matches: query === NARROW_QUERY ? narrow : false,
      media: query,
      addEventListener() {},
      removeEventListener() {},
    }),
  });
}

afterEach(() => {
  setNarrow(false);
  vi.useRealTimers();
});

describe('the sidebar', () => {
  it('hides with its toggle and comes back', async () => {
    await renderApp(createFakeApi({ 'documents.list': () => [doc()] }));
    expect(screen.getByRole('complementary', { name: 'Library' })).toBeTruthy();
    await userEvent.click(screen.getByRole('button', { name: 'Hide the library' }));
    expect(screen.queryByRole('complementary', { name: 'Library' })).toBeNull();
    expect(document.querySelector('.app')?.getAttribute('data-sidebar')).toBe('hidden');
    const show = screen.getByRole('button', { name: 'Show the library' });
    expect(show.getAttribute('aria-expanded')).toBe('false');
    await userEvent.click(show);
    expect(screen.getByRole('complementary', { name: 'Library' })).toBeTruthy();
    expect(useUi.getState().sidebar).toBe('auto');
  });

  it('in a narrow window it hides on its own, and its toggle opens it over the page', async () => {
    setNarrow(true);
    startApp(createFakeApi({ 'documents.list': () => [doc()] }), null);
    render(<App />);
    await screen.findByRole('button', { name: 'Show the library' });
    expect(document.querySelector('.app')?.getAttribute('data-sidebar')).toBe('hidden');
    expect(screen.queryByRole('complementary', { name: 'Library' })).toBeNull();
    await userEvent.click(screen.getByRole('button', { name: 'Show the library' }));
    expect(document.querySelector('.app')?.getAttribute('data-sidebar')).toBe('overlay');
    expect(screen.getByRole('complementary', { name: 'Library' })).toBeTruthy();
  });
});

describe('toasts', () => {
  it('expire by kind, errors later; each has a close button', async () => {
    await renderApp(createFakeApi());
    vi.useFakeTimers();
    act(() => {
      notify('Settings saved', 'success');
      notify('The engine did not start: no memory');
    });
    expect(screen.getByText('Settings saved')).toBeTruthy();
    expect(screen.getAllByRole('button', { name: 'Dismiss' })).toHaveLength(2);
    act(() => vi.advanceTimersByTime(NOTICE_MS.success + 10));
    expect(screen.queryByText('Settings saved')).toBeNull();
    expect(screen.getByText('The engine did not start: no memory')).toBeTruthy();
    act(() => vi.advanceTimersByTime(NOTICE_MS.error - NOTICE_MS.success));
    expect(screen.queryByText('The engine did not start: no memory')).toBeNull();
    expect(NOTICE_MS.error).toBeGreaterThan(NOTICE_MS.success);
  });

  it('a finished import says so; a failed document task does not add a toast over the document’s own error', async () => {
    const api = createFakeApi({ 'documents.list': () => [doc()] });
    await renderApp(api);
    act(() => registerTask('t1', 'import', 'd1', 'lily.txt'));
    act(() =>
      api.emit('task.done', {
        taskId: 't1',
        kind: 'import',
        documentId: 'd1',
        ok: true,
        cancelled: false,
        error: null,
      }),
    );
    await waitFor(() => expect(screen.getByText('lily.txt is read and compressed: ask away')).toBeTruthy());
    expect(document.querySelector('.toast.success')).toBeTruthy();
    act(() =>
      api.emit('task.done', {
        taskId: 't2',
        kind: 'compress',
        documentId: 'd1',
        ok: false,
        cancelled: false,
        error: 'boom',
      }),
    );
    expect(screen.queryByText(/boom/, { selector: '.toast span' })).toBeNull();
  });
});
