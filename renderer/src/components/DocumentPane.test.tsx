import { act, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';

import { createFakeApi, detail, doc, rebasedDetail, settings } from '../test/fake-api.ts';
import { renderApp } from '../test/render-app.tsx';
import { setTab } from '../stores/ui.ts';
import { citedSegments, retentionAlpha, segmentsOf } from './DocumentPane.tsx';

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

  it('splits the runs further at the cited ranges, marking those inside one', () => {
    const runs = segmentsOf('abcdefghij', [{ page: 1, start: 2, end: 8, retention: 0.5 }]);
    expect(citedSegments(runs, [{ start: 6, end: 10, share: 0.4 }])).toEqual([
      { start: 0, end: 2, retention: null, cited: null },
      { start: 2, end: 6, retention: 0.5, cited: null },
      { start: 6, end: 8, retention: 0.5, cited: 0.4 },
      { start: 8, end: 10, retention: null, cited: 0.4 },
    ]);
    expect(citedSegments(runs, [])).toEqual(runs.map((r) => ({ ...r, cited: null })));
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

  it('warns of re-based positions and offers the pages that fit from the first, computed from the page list', async () => {
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
    // 512 positions less the default room of 128 (a quarter) and the prompt's 30: pages 1 to 3 take 300 tokens,
    // page 4 would make 400. Any page may start a range: each fits on its own.
    const from = within(warning).getByRole('combobox', { name: 'From page' }) as HTMLSelectElement;
    const to = within(warning).getByRole('combobox', { name: 'to page' }) as HTMLSelectElement;
    expect(optionsOf(from)).toEqual(['1', '2', '3', '4', '5', '6']);
    expect([from.value, to.value]).toEqual(['1', '3']);
    expect(optionsOf(to)).toEqual(['1', '2', '3']);
    await userEvent.click(within(warning).getByRole('button', { name: 'Compress pages 1 to 3' }));
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

  it('compresses a range from a later page: the end goes as far as fits from there, or shorter', async () => {
    const api = createFakeApi({
      'documents.list': () => [rebasedDetail()],
      'documents.get': () => rebasedDetail(),
      'documents.recompress': () => ({ taskId: 't1' }),
    });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('document'));
    const warning = await screen.findByRole('region', { name: /^Lower quality/ });
    const from = within(warning).getByRole('combobox', { name: 'From page' }) as HTMLSelectElement;
    const to = within(warning).getByRole('combobox', { name: 'to page' }) as HTMLSelectElement;
    // From page 4 the rest of the document fits (300 tokens).
    await userEvent.selectOptions(from, '4');
    expect(optionsOf(to)).toEqual(['4', '5', '6']);
    expect(to.value).toBe('6');
    // From page 3: pages 3 to 5; page 6 would make 400 tokens of 354.
    await userEvent.selectOptions(from, '3');
    expect(optionsOf(to)).toEqual(['3', '4', '5']);
    expect(to.value).toBe('5');
    within(warning).getByRole('button', { name: 'Compress pages 3 to 5' });
    await userEvent.selectOptions(to, '4');
    await userEvent.click(within(warning).getByRole('button', { name: 'Compress pages 3 to 4' }));
    const dialog = screen.getByRole('dialog', { name: 'Compress pages 3 to 4 only?' });
    expect(dialog.textContent).toMatch(/The document is read again, only pages 3 to 4, at its own positions/);
    await userEvent.click(within(dialog).getByRole('button', { name: 'Compress pages 3 to 4' }));
    await waitFor(() => expect(api.callsOf('documents.recompress')).toEqual([{ documentId: 'd1', pages: [3, 4] }]));
  });

  it('offers as first pages only those that fit on their own', async () => {
    // Page 2 takes 400 tokens: it fits nowhere, and a range from page 1 ends before it.
    const pageList = rebasedDetail().pageList.map((p) =>
      p.page === 1 ? p : { ...p, tokenStart: p.tokenStart + (p.page === 2 ? 0 : 300), tokenEnd: p.tokenEnd + 300 },
    );
    await renderApp(
      createFakeApi({
        'documents.list': () => [rebasedDetail()],
        'documents.get': () => rebasedDetail({ pageList, tokens: 930 }),
      }),
    );
    await screen.findAllByTestId('document');
    act(() => setTab('document'));
    const warning = await screen.findByRole('region', { name: /^Lower quality/ });
    expect(optionsOf(within(warning).getByRole('combobox', { name: 'From page' }) as HTMLSelectElement)).toEqual([
      '1',
      '3',
      '4',
      '5',
      '6',
    ]);
    expect(within(warning).getByRole('button', { name: /^Compress/ }).textContent).toBe('Compress page 1');
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
    // 512 − 50 − 30 = 432: page 4 (400 tokens with pages 1 to 3) fits too.
    expect(await within(warning).findByRole('button', { name: 'Compress pages 1 to 4' })).toBeTruthy();
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
    expect(within(warning).queryByRole('combobox')).toBeNull();
  });
});

describe('after a range of pages was read', () => {
  /** Six pages of which 2 to 3 were read, at their own positions: the others keep their text, no tokens. */
  const rangeDetail = () =>
    rebasedDetail({
      tokens: 230,
      readPages: [2, 3],
      readNote: 'Read in one pass, then compressed.',
      pageList: rebasedDetail().pageList.map((p) =>
        p.page === 2 || p.page === 3
          ? { ...p, tokenStart: 30 + 100 * (p.page - 2), tokenEnd: 130 + 100 * (p.page - 2) }
          : { ...p, tokenStart: -1, tokenEnd: -1 },
      ),
      stats: { ...rebasedDetail().stats!, rebased: false, chunks: 1, positions: 230, prefixTokens: 230 },
      passages: [{ page: 2, start: 0, end: 8, retention: 0.5 }],
    });

  it('shows every page, says which were read, and marks the others as not read', async () => {
    await renderApp(createFakeApi({ 'documents.list': () => [rangeDetail()], 'documents.get': () => rangeDetail() }));
    await screen.findAllByTestId('document');
    act(() => setTab('document'));
    const note = await screen.findByTestId('read-pages');
    expect(note.textContent).toBe(
      'Read: pages 2 to 3 of 6. Answers know nothing of the other pages. Compress the whole document',
    );
    expect(screen.getByTestId('read-note').textContent).toBe('Read in one pass, then compressed.');
    const strip = screen.getByRole('navigation', { name: /^All pages/ });
    expect(
      within(strip)
        .getAllByRole('button')
        .map((b) => b.getAttribute('aria-label')),
    ).toEqual([
      'Page 1, not read',
      'Page 2, 50% kept',
      'Page 3',
      'Page 4, not read',
      'Page 5, not read',
      'Page 6, not read',
    ]);
    const page = await screen.findByRole('article', { name: 'Page 1' });
    expect(page.textContent).toBe(
      'Page 1 · not read: the model knows nothing of this pageStory 1. Once upon a time there was a little bird.',
    );
    expect(page.classList.contains('unread')).toBe(true);
    await userEvent.click(within(strip).getByRole('button', { name: 'Page 3' }));
    const read = await screen.findByRole('article', { name: 'Page 3' });
    expect(read.classList.contains('unread')).toBe(false);
    expect(read.textContent).toMatch(/^Page 3Story 3/);
  });

  it('compresses the whole document again on request, without a range', async () => {
    const api = createFakeApi({
      'documents.list': () => [rangeDetail()],
      'documents.get': () => rangeDetail(),
      'documents.recompress': () => ({ taskId: 't1' }),
    });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('document'));
    const note = await screen.findByTestId('read-pages');
    await userEvent.click(within(note).getByRole('button', { name: 'Compress the whole document' }));
    const dialog = screen.getByRole('dialog', { name: 'Compress the whole document?' });
    expect(dialog.textContent).toMatch(/All 6 pages are read again/);
    expect(api.callsOf('documents.recompress')).toEqual([]);
    await userEvent.click(within(dialog).getByRole('button', { name: 'Compress the whole document' }));
    await waitFor(() => expect(api.callsOf('documents.recompress')).toEqual([{ documentId: 'd1' }]));
  });

  it('offers ranges only within the pages read: the others were not measured', async () => {
    // Pages 2 to 5 were read (and re-based), 100 tokens each after the prompt's 30: 354 positions for pages.
    const pageList = rebasedDetail().pageList.map((p) =>
      p.page >= 2 && p.page <= 5
        ? { ...p, tokenStart: 30 + 100 * (p.page - 2), tokenEnd: 130 + 100 * (p.page - 2) }
        : { ...p, tokenStart: -1, tokenEnd: -1 },
    );
    const ranged = () => rebasedDetail({ tokens: 430, readPages: [2, 5], pageList });
    await renderApp(createFakeApi({ 'documents.list': () => [ranged()], 'documents.get': () => ranged() }));
    await screen.findAllByTestId('document');
    act(() => setTab('document'));
    const warning = await screen.findByRole('region', { name: /^Lower quality/ });
    within(warning).getByText(/^Read: pages 2 to 5 of 6\./);
    const from = within(warning).getByRole('combobox', { name: 'From page' }) as HTMLSelectElement;
    const to = within(warning).getByRole('combobox', { name: 'to page' }) as HTMLSelectElement;
    expect(optionsOf(from)).toEqual(['2', '3', '4', '5']);
    expect([from.value, to.value]).toEqual(['2', '4']);
    // From page 4 the rest of what was read fits; page 6 was not measured, so it is not offered.
    await userEvent.selectOptions(from, '4');
    expect(optionsOf(to)).toEqual(['4', '5']);
  });
});

function optionsOf(select: HTMLSelectElement): string[] {
  return [...select.options].map((o) => o.value);
}
