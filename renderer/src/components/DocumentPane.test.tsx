import { act, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';

import { createFakeApi, detail, doc, rebasedDetail, settings } from '../test/fake-api.ts';
import { renderApp } from '../test/render-app.tsx';
import { setTab } from '../stores/ui.ts';
import { retentionAlpha, segmentsOf } from './DocumentPane.tsx';

describe('the document view', () => {
  it('splits a page into passages with their retention and the text between', () => {
    expect(
      segmentsOf('abcdefghij', [
        { page: 1, start: 5, end: 8, retention: 0.5 },
        { page: 1, start: 0, end: 2, retention: 0.1 },
      ]),
    ).toEqual([
      { start: 0, end: 2, retention: 0.1 },
      { start: 2, end: 5, retention: null },
      { start: 5, end: 8, retention: 0.5 },
      { start: 8, end: 10, retention: null },
    ]);
    expect(retentionAlpha(1)).toBeGreaterThan(retentionAlpha(0.5));
    expect(retentionAlpha(0)).toBeGreaterThan(0);
  });

  it('shades each passage by how much of the cache kept it, with a legend; pages navigate', async () => {
    await renderApp(createFakeApi({ 'documents.list': () => [doc()], 'documents.get': () => detail() }));
    await screen.findAllByTestId('document');
    act(() => setTab('document'));
    const page = await screen.findByRole('article', { name: 'Page 1' });
    const passages = page.querySelectorAll<HTMLElement>('.passage');
    expect([...passages].map((p) => p.dataset.retention)).toEqual(['0.200', '0.900']);
    expect(passages[0].style.backgroundColor).not.toBe(passages[1].style.backgroundColor);
    expect(passages[1].title).toBe('Kept by 90% of the cache’s heads');
    expect(page.textContent).toBe(
      'Page 1 · on average kept by 41% of the cache’s headsOnce upon a time, there was a girl. She had a kite. The end.',
    );
    expect(screen.getByLabelText(/Legend: shading shows/)).toBeTruthy();
    await userEvent.click(screen.getByRole('button', { name: 'Next page' }));
    expect(await screen.findByRole('article', { name: 'Page 2' })).toBeTruthy();
    await userEvent.click(screen.getByRole('button', { name: 'Page 1, 41% kept' }));
    expect(await screen.findByRole('article', { name: 'Page 1' })).toBeTruthy();
    await userEvent.click(screen.getByRole('checkbox', { name: 'Show what the model kept' }));
    await waitFor(() =>
      expect(screen.getByRole('article', { name: 'Page 1' }).querySelectorAll('.passage')).toHaveLength(0),
    );
  });
});

describe('how the document was read', () => {
  it('says it in a quiet line when the document fitted', async () => {
    await renderApp(createFakeApi({ 'documents.list': () => [doc()], 'documents.get': () => detail() }));
    await screen.findAllByTestId('document');
    act(() => setTab('document'));
    const note = await screen.findByTestId('read-note');
    expect(note.textContent).toBe('Read in one pass, then compressed.');
    expect(note.classList.contains('warning')).toBe(false);
    expect(screen.queryByRole('button', { name: /^Compress pages/ })).toBeNull();
  });

  it('warns of re-based positions and compresses the pages that fit, computed from the page list', async () => {
    const api = createFakeApi({
      'documents.list': () => [rebasedDetail()],
      'documents.get': () => rebasedDetail(),
      'documents.recompress': () => ({ taskId: 't1' }),
    });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('document'));
    const warning = await screen.findByRole('region', { name: /^Lower quality/ });
    expect(warning.textContent).toMatch(/^⚠ Lower quality: The document \(630 tokens .* re-based positions/);
    // 512 positions less the default room of 128 (a quarter): pages 1 to 3 end by token 330, page 4 at 430.
    await userEvent.click(within(warning).getByRole('button', { name: 'Compress pages 1 to 3 only' }));
    const dialog = screen.getByRole('dialog', { name: 'Compress pages 1 to 3 only?' });
    expect(api.callsOf('documents.recompress')).toEqual([]);
    await userEvent.click(within(dialog).getByRole('button', { name: 'Compress pages 1 to 3' }));
    await waitFor(() => expect(api.callsOf('documents.recompress')).toEqual([{ documentId: 'd1', pages: [1, 3] }]));
    // While that runs, the offer waits.
    await waitFor(() =>
      expect((within(warning).getByRole('button', { name: /^Compress pages/ }) as HTMLButtonElement).disabled).toBe(
        true,
      ),
    );
  });

  it('counts the conversation room from the settings, whatever the note says', async () => {
    const api = createFakeApi({
      'settings.get': () => settings({ conversationRoom: 50 }),
      'documents.list': () => [rebasedDetail()],
      'documents.get': () => rebasedDetail(),
    });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('document'));
    const warning = await screen.findByRole('region', { name: /^Lower quality/ });
    // 512 - 50 = 462: page 4 (ending at 430) fits too.
    expect(await within(warning).findByRole('button', { name: 'Compress pages 1 to 4 only' })).toBeTruthy();
  });

  it('says so when not even the first page fits', async () => {
    const pageList = rebasedDetail().pageList.map((p) => ({
      ...p,
      tokenStart: p.tokenStart + 400,
      tokenEnd: p.tokenEnd + 400,
    }));
    await renderApp(
      createFakeApi({
        'documents.list': () => [rebasedDetail()],
        'documents.get': () => rebasedDetail({ pageList }),
      }),
    );
    await screen.findAllByTestId('document');
    act(() => setTab('document'));
    const warning = await screen.findByRole('region', { name: /^Lower quality/ });
    expect(within(warning).getByText(/Not even the first page fits/)).toBeTruthy();
    expect(within(warning).queryByRole('button')).toBeNull();
  });
});
