import { act, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';

import { createFakeApi, detail, doc, rebasedDetail, settings } from '../test/fake-api.ts';
import { renderApp } from '../test/render-app.tsx';
import { openCitation, setTab } from '../stores/ui.ts';
import { startApp } from '../wire.ts';
import { openPdf, PasswordDeclined } from '../lib/pdfjs.ts';
import { fetchDocumentFile, fetchDocumentText } from '../lib/document-file.ts';
import { DocumentPane } from './DocumentPane.tsx';

// pdf.js needs a canvas jsdom does not have: the loader is replaced, the rest of the view is real.
vi.mock('../lib/pdfjs.ts', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../lib/pdfjs.ts')>()),
  openPdf: vi.fn(),
}));
// The stored files come from the web host in the app; here, from the test.
vi.mock('../lib/document-file.ts', () => ({ fetchDocumentFile: vi.fn(), fetchDocumentText: vi.fn() }));

async function openDocumentTab(d = detail()) {
  await renderApp(createFakeApi({ 'documents.list': () => [doc()], 'documents.get': () => d }));
  await screen.findAllByTestId('document');
  act(() => setTab('document'));
}

describe('the document view', () => {
  it('shades each passage by how much of the cache kept it, with a legend; pages navigate', async () => {
    await openDocumentTab();
    const page = await screen.findByRole('article', { name: 'Page 1' });
    const passages = page.querySelectorAll<HTMLElement>('.passage');
    expect([...passages].map((p) => p.dataset.retention)).toEqual(['0.200', '0.900']);
    expect(passages[0].style.backgroundColor).not.toBe(passages[1].style.backgroundColor);
    expect(passages[1].title).toBe('Kept by 90% of the cache’s heads');
    expect(page.textContent).toBe(
      'Page 1 · on average kept by 41% of the cache’s headsOnce upon a time, there was a girl. She had a kite. The end.',
    );
    // The legend says what the shading means, and its scale ends at the highest value shown.
    const legend = screen.getByTestId('retention-legend');
    expect(legend.textContent).toMatch(/share of the model’s cache .* kept each sentence/);
    expect(legend.textContent).toContain('0% (not kept)90% (the most kept)');
    expect(screen.queryByTestId('window-label')).toBeNull();
    await userEvent.click(screen.getByRole('button', { name: 'Next page' }));
    expect(await screen.findByRole('article', { name: 'Page 2' })).toBeTruthy();
    await userEvent.click(screen.getByRole('button', { name: 'Page 1, 41% kept' }));
    expect(await screen.findByRole('article', { name: 'Page 1' })).toBeTruthy();
    await userEvent.click(screen.getByRole('checkbox', { name: 'Show what the model kept' }));
    await waitFor(() =>
      expect(screen.getByRole('article', { name: 'Page 1' }).querySelectorAll('.passage')).toHaveLength(0),
    );
  });

  it('draws the always-kept window apart, labelled, and off the scale; low values still show', async () => {
    await openDocumentTab(
      detail({
        passages: [
          { page: 1, start: 0, end: 35, retention: 0.03 },
          { page: 1, start: 36, end: 45, retention: 0.06 },
        ],
        keptWindow: { page: 1, start: 45, tokens: 16 },
      }),
    );
    const page = await screen.findByRole('article', { name: 'Page 1' });
    const windowSpans = page.querySelectorAll<HTMLElement>('.kept-window');
    expect([...windowSpans].map((s) => s.textContent).join('')).toBe(' kite. The end.');
    expect(windowSpans[0].dataset.retention).toBeUndefined();
    expect(screen.getByTestId('window-label').textContent).toBe(
      ' Always kept: the last 16 tokens, from which the scores were computed (not on the scale)',
    );
    // The scale's top is 6%, not the window's 100%: the 3% sentence is well tinted.
    expect(screen.getByTestId('retention-legend').textContent).toContain('0% (not kept)6.0% (the most kept)');
    const low = page.querySelector<HTMLElement>('.passage[data-retention="0.030"]')!;
    const alpha = Number(/([\d.]+)\)$/.exec(low.style.backgroundColor)?.[1]);
    expect(alpha).toBeGreaterThan(0.4);
  });

  it('searches every page: counts the hits, steps to the next on another page and marks it', async () => {
    await openDocumentTab();
    await screen.findByRole('article', { name: 'Page 1' });
    await userEvent.type(screen.getByRole('searchbox', { name: 'Search in the document' }), 'words');
    expect(screen.getByTestId('search-count').textContent).toBe('0 of 1');
    await userEvent.click(screen.getByRole('button', { name: 'Next match' }));
    const page2 = await screen.findByRole('article', { name: 'Page 2' });
    expect(screen.getByTestId('search-count').textContent).toBe('1 of 1');
    expect([...page2.querySelectorAll('.search-hit')].map((s) => s.textContent)).toEqual(['words']);
    await userEvent.clear(screen.getByRole('searchbox', { name: 'Search in the document' }));
    await userEvent.type(screen.getByRole('searchbox', { name: 'Search in the document' }), 'dragon');
    expect(screen.getByTestId('search-count').textContent).toBe('not found');
  });

  it('starts the search afresh in another document', async () => {
    const api = createFakeApi({
      'documents.list': () => [doc()],
      'documents.get': (p) => detail({ id: p.documentId }),
    });
    const stop = startApp(api, null);
    const { rerender } = render(<DocumentPane documentId="d1" />);
    await screen.findByRole('article', { name: 'Page 1' });
    await userEvent.type(screen.getByRole('searchbox', { name: 'Search in the document' }), 'words');
    await userEvent.click(screen.getByRole('button', { name: 'Next match' }));
    expect(screen.getByTestId('search-count').textContent).toBe('1 of 1');
    rerender(<DocumentPane documentId="d2" />);
    await waitFor(() =>
      expect((screen.getByRole('searchbox', { name: 'Search in the document' }) as HTMLInputElement).value).toBe(''),
    );
    expect(screen.queryByTestId('search-count')).toBeNull();
    stop();
  });

  it('opens a citation’s page and draws its ranges in their own style', async () => {
    const api = createFakeApi({ 'documents.list': () => [doc()], 'documents.get': () => detail() });
    const stop = startApp(api, null);
    render(<DocumentPane documentId="d1" />);
    await screen.findByRole('article', { name: 'Page 1' });
    act(() => openCitation({ documentId: 'd1', page: 2, ranges: [{ start: 0, end: 8, share: 0.8 }] }));
    const page2 = await screen.findByRole('article', { name: 'Page 2' });
    expect([...page2.querySelectorAll('.cited')].map((s) => s.textContent)).toEqual(['Page two']);
    stop();
  });

  it('says why a PDF imported before originals were kept shows its text', async () => {
    await openDocumentTab(detail({ kind: 'pdf', hasFile: false }));
    expect((await screen.findByTestId('no-original')).textContent).toMatch(
      /imported before Folio kept the original file, so its text is shown instead of the pages/,
    );
    expect(screen.getByRole('article', { name: 'Page 1' })).toBeTruthy();
  });

  it('shows a stored PDF’s pages, asking for its password when pdf.js needs one', async () => {
    vi.mocked(fetchDocumentFile).mockResolvedValue(new Uint8Array([1, 2, 3]));
    vi.mocked(openPdf).mockImplementation(async (_bytes, askPassword) => {
      if ((await askPassword(false)) === 'wrong' && (await askPassword(true)) === null) throw new PasswordDeclined();
      throw new Error('unreachable');
    });
    await openDocumentTab(detail({ kind: 'pdf', hasFile: true }));
    const form = await screen.findByRole('form', { name: 'PDF password' });
    expect(vi.mocked(fetchDocumentFile)).toHaveBeenCalledWith('d1', 'file');
    expect(screen.queryByRole('article', { name: 'Page 1' })).toBeNull();
    await userEvent.type(within(form).getByLabelText('Password'), 'wrong');
    await userEvent.click(within(form).getByRole('button', { name: 'Open' }));
    expect((await screen.findByText(/That password is not the right one/)).textContent).toMatch(/password-protected/);
    await userEvent.click(screen.getByRole('button', { name: 'Cancel' }));
    expect((await screen.findByRole('alert')).textContent).toBe(
      'This PDF is password-protected: the pages are shown once its password is given.',
    );
  });
});

describe('a Word document as written', () => {
  const html =
    '<h1>Kites</h1><p>Lily had a red kite.</p><ul><li>Blue tail</li><li>Long string</li></ul><p>The end.</p>';
  // The page text as the importer makes it of that HTML (docx.ts's blocks, pages.ts's rule).
  const text = 'Kites\n\nLily had a red kite.\n\n• Blue tail\n• Long string\n\nThe end.';
  const wordDetail = () =>
    detail({
      kind: 'docx',
      hasFile: true,
      hasHtml: true,
      pageList: [{ page: 1, text, tokenStart: 0, tokenEnd: 30 }],
      passages: [
        { page: 1, start: 0, end: 5, retention: 0.4 },
        { page: 1, start: 7, end: 27, retention: 0.1 },
      ],
      keptWindow: { page: 1, start: text.indexOf('The end.'), tokens: 8 },
    });

  it('shows the sanitised HTML with the passages, the window and the hits drawn on it', async () => {
    vi.mocked(fetchDocumentText).mockResolvedValue(html + '<script>alert(1)</script>');
    await openDocumentTab(wordDetail());
    const doc = await screen.findByTestId('html-doc');
    await waitFor(() => expect(doc.querySelectorAll('.passage')).toHaveLength(2));
    expect(vi.mocked(fetchDocumentText)).toHaveBeenCalledWith('d1', 'html');
    expect(doc.querySelector('script')).toBeNull();
    expect(doc.querySelector('h1')?.textContent).toBe('Kites');
    expect(doc.querySelectorAll('li')).toHaveLength(2);
    const [title, story] = doc.querySelectorAll<HTMLElement>('.passage');
    expect([title.textContent, title.dataset.retention]).toEqual(['Kites', '0.400']);
    expect([story.textContent, story.dataset.retention]).toEqual(['Lily had a red kite.', '0.100']);
    expect([...doc.querySelectorAll('.kept-window')].map((e) => e.textContent).join('')).toBe('The end.');
    await userEvent.type(screen.getByRole('searchbox', { name: 'Search in the document' }), 'string');
    await userEvent.click(screen.getByRole('button', { name: 'Next match' }));
    await waitFor(() =>
      expect([...screen.getByTestId('html-doc').querySelectorAll('.search-current')].map((e) => e.textContent)).toEqual(
        ['string'],
      ),
    );
  });

  it('dims the text of pages the model did not read', async () => {
    vi.mocked(fetchDocumentText).mockResolvedValue('<p>Lily had a red kite.</p><p>The end.</p>');
    await openDocumentTab(
      detail({
        kind: 'docx',
        hasFile: true,
        hasHtml: true,
        readPages: [1, 1],
        pageList: [
          { page: 1, text: 'Lily had a red kite.', tokenStart: 0, tokenEnd: 8 },
          { page: 2, text: 'The end.', tokenStart: -1, tokenEnd: -1 },
        ],
        passages: [{ page: 1, start: 0, end: 20, retention: 0.4 }],
        keptWindow: null,
      }),
    );
    const doc = await screen.findByTestId('html-doc');
    await waitFor(() => expect(doc.querySelectorAll('.unread-text')).toHaveLength(1));
    expect(doc.querySelector('.unread-text')?.textContent).toBe('The end.');
    expect(doc.querySelector('.passage')?.classList.contains('unread-text')).toBe(false);
  });

  it('says so when the HTML cannot be loaded', async () => {
    vi.mocked(fetchDocumentText).mockRejectedValue(new Error('no stored html'));
    await openDocumentTab(wordDetail());
    expect((await screen.findByRole('alert')).textContent).toBe(
      'The document could not be shown as written: no stored html.',
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
      kept: { perHead: 96, positions: 230, placement: 'own' },
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
