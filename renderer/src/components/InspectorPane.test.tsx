import { act, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';

import type { Result } from '../../../electron/api/contract.ts';
import { chat, createFakeApi, detail, doc, rebasedDetail, settings, stats, usage } from '../test/fake-api.ts';
import type { KeptPositions } from '../../../electron/api/contract.ts';
import { GLOSSARY } from '../lib/glossary.ts';
import { renderApp } from '../test/render-app.tsx';
import { setTab } from '../stores/ui.ts';

describe('the inspector', () => {
  it("shows a set chat's documents' shares of its cache: their entries, before one budget, and a grid each", async () => {
    const over = chat({ documentIds: ['d1', 'd2'], setBudget: 0.5, messageCount: 1 });
    const api = createFakeApi({
      'documents.list': () => [doc(), doc({ id: 'd2', title: 'The second' })],
      'documents.get': () => detail(),
      'chats.list': () => [over],
      'chats.get': () => ({
        chat: over,
        messages: [],
        usage: usage({
          setShares: [
            { documentId: 'd1', entries: [[30, 10]], before: 60 },
            { documentId: 'd2', entries: [[10, 10]], before: 20 },
          ],
        }),
      }),
    });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('inspector'));
    const card = await screen.findByTestId('set-shares');
    expect(card.textContent).toMatch(/One budget over the set: 50% of the entries the documents’ reads chose/);
    expect(
      within(card)
        .getAllByTestId('set-share-line')
        .map((l) => l.textContent?.trim()),
    ).toEqual(['· 40 entries of 60, 67% of the set', '· 20 entries, 33% of the set']);
    expect(within(card).getAllByRole('img').length).toBe(2);
  });

  it("says which rows are sliding-window layers (gemma3's), hatched in the heatmap", async () => {
    const s = stats();
    s.layers = s.layers.map((l, i) => (i < 2 ? { ...l, slidingWindow: 512 } : l));
    const api = createFakeApi({
      'documents.list': () => [doc()],
      'documents.get': () => detail({ stats: s }),
    });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('inspector'));
    await screen.findByTestId('heatmap');
    expect(screen.getByTestId('sliding-note').textContent).toMatch(
      /Hatched rows are sliding-window layers.*newest 512 tokens/,
    );
    await userEvent.click(screen.getByRole('button', { name: 'Show the numbers as a table' }));
    expect(screen.getByRole('rowheader', { name: 'Layer 0, sliding window' })).toBeTruthy();
    expect(screen.getByRole('rowheader', { name: 'Layer 2' })).toBeTruthy();
  });

  it('gives the range of the grid as its lowest and highest cell, and says when every cell is equal', async () => {
    const even = stats([
      [39, 39],
      [39, 39],
    ]);
    const api = createFakeApi({ 'documents.list': () => [doc()], 'documents.get': () => detail({ stats: even }) });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('inspector'));
    await screen.findByTestId('heatmap');
    expect(screen.getByText(/Range of the grid/).textContent).toMatch(/Range of the grid: every cell 39$/);
    expect(screen.getByTestId('heatmap-legend').textContent).toMatch(/every cell 39$/);
  });

  it('shows no sliding-window note for a model without such layers', async () => {
    const api = createFakeApi({ 'documents.list': () => [doc()], 'documents.get': () => detail() });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('inspector'));
    await screen.findByTestId('heatmap');
    expect(screen.queryByTestId('sliding-note')).toBeNull();
  });

  it('shows what eviction and precision each save on a quantized cache, against a full f16 one', async () => {
    // Heads of 8 numbers: a q8_0 key 2 + 8 bytes, a q4_0 value 2 + 4: 16 bytes an entry against f16's 32.
    const base = stats();
    const s = {
      ...base,
      kvType: 'q8_0/q4_0+rot',
      kvBytesFull: 72_000,
      kvBytesKept: 21_600,
      layers: base.layers.map((l) => ({ ...l, bytesFull: 375 * 4 * 16, bytesKept: 7_200 })),
    };
    const api = createFakeApi({ 'documents.list': () => [doc()], 'documents.get': () => detail({ stats: s }) });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('inspector'));
    expect((await screen.findByTestId('memory-saved')).textContent).toBe('saves 85%');
    expect(screen.getByTestId('memory-apart').textContent).toBe(
      'Eviction saves 70% (the entries dropped); precision saves 50%: each kept entry takes 16 bytes in q8_0/q4_0+rot instead of 32 in f16.',
    );
  });

  it('an f16 cache says nothing of precision', async () => {
    const api = createFakeApi({ 'documents.list': () => [doc()], 'documents.get': () => detail() });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('inspector'));
    expect((await screen.findByTestId('memory-saved')).textContent).toBe('saves 70%');
    expect(screen.queryByTestId('memory-apart')).toBeNull();
  });

  it('switches metrics, shows memory saved, and compares two chosen methods on demand with progress', async () => {
    let finish: (r: Result<'documents.compare'>) => void = () => {};
    const api = createFakeApi({
      'documents.list': () => [doc()],
      'documents.get': () => detail(),
      'documents.compare': () => new Promise((resolve) => (finish = resolve)),
    });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('inspector'));
    const heatmap = await screen.findByTestId('heatmap');
    expect(heatmap.dataset.metric).toBe('budget');
    expect(screen.getByTestId('memory-saved').textContent).toBe('saves 70%');
    await userEvent.click(screen.getByRole('radio', { name: 'Retained attention' }));
    expect(screen.getByTestId('heatmap').dataset.metric).toBe('mass');
    await userEvent.click(screen.getByRole('radio', { name: 'Budget' }));
    expect((screen.getByRole('radio', { name: 'Second' }) as HTMLInputElement).disabled).toBe(true);
    // By default the document's method (Ada-SnapKV) against its uniform counterpart.
    const first = screen.getByRole('combobox', { name: 'First method' }) as HTMLSelectElement;
    const second = screen.getByRole('combobox', { name: 'Second method' }) as HTMLSelectElement;
    expect([first.value, second.value]).toEqual(['ada-snapkv', 'snapkv']);
    expect(within(second).getByRole('group', { name: 'CriticalKV' })).toBeTruthy();
    await userEvent.selectOptions(second, 'critical');
    await userEvent.click(screen.getByRole('button', { name: 'Compare' }));
    expect(api.callsOf('documents.compare')).toEqual([
      { documentId: 'd1', budget: 0.3, a: 'ada-snapkv', b: 'critical' },
    ]);
    act(() =>
      api.emit('task.progress', {
        taskId: 'cmp',
        kind: 'compare',
        documentId: 'd1',
        done: 100,
        total: 375,
        etaMs: 500,
        message: 'Ada-SnapKV at 0.3',
      }),
    );
    expect(
      screen.getByRole('progressbar', { name: 'Comparing Ada-SnapKV and CriticalKV' }).getAttribute('aria-valuetext'),
    ).toBe('100 of 375 tokens · 27% · 1 s left');
    const even = stats([
      [113, 113, 113, 113],
      [113, 113, 113, 113],
      [113, 113, 113, 113],
    ]);
    act(() => finish({ budget: 0.3, a: stats(), b: { ...even, method: 'critical' } }));
    await screen.findByTestId('heatmap-a');
    expect(screen.getByTestId('heatmap-b')).toBeTruthy();
    expect(screen.getByRole('columnheader', { name: 'Retained, CriticalKV' })).toBeTruthy();
    expect((screen.getByRole('radio', { name: 'CriticalKV' }) as HTMLInputElement).checked).toBe(true);
    await userEvent.click(screen.getByRole('radio', { name: 'Ada-SnapKV' }));
    await waitFor(() =>
      expect(screen.getByRole('heading', { name: /Budget by layer and KV head · Ada-SnapKV$/ })).toBeTruthy(),
    );
    // The two grids side by side share one domain, from their own data, so colours compare across them; the
    // main grid's legend is its own data's range (Ada-SnapKV's 61 to 186), not one pooled with the others.
    expect(JSON.parse(screen.getByTestId('heatmap-a').dataset.domain!)).toEqual([61, 186]);
    expect(screen.getByTestId('heatmap-b').dataset.domain).toBe(screen.getByTestId('heatmap-a').dataset.domain);
    expect(JSON.parse(screen.getByTestId('heatmap').dataset.domain!)).toEqual([61, 186]);
    await userEvent.click(screen.getByRole('radio', { name: 'CriticalKV' }));
    // CriticalKV's grid is even (113 everywhere): its legend says so, never runs from Ada-SnapKV's 61.
    expect(JSON.parse(screen.getByTestId('heatmap').dataset.domain!)).toEqual([113, 113]);
    expect(JSON.parse(screen.getByTestId('heatmap-legend').dataset.domain!)).toEqual([113, 113]);
    expect(screen.getByTestId('heatmap-legend').textContent).toMatch(/every cell 113$/);
  });
});

describe('the inspector: how the document was read', () => {
  it('one pass: the note, and the positions against the context', async () => {
    await renderApp(createFakeApi({ 'documents.list': () => [doc()], 'documents.get': () => detail() }));
    await screen.findAllByTestId('document');
    act(() => setTab('inspector'));
    const reading = await screen.findByTestId('reading');
    expect(reading.textContent).toBe('ReadingReadin one passPositions375 of 512');
    expect(screen.getByTestId('read-note').textContent).toBe('Read in one pass, then compressed.');
  });

  it('chunks and re-based positions: chunk size, the peak against its bound, and the warning with its remedy', async () => {
    const api = createFakeApi({
      'documents.list': () => [rebasedDetail()],
      'documents.get': () => rebasedDetail(),
      'documents.recompress': () => ({ taskId: 't1' }),
    });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('inspector'));
    const reading = await screen.findByTestId('reading');
    // 150,000 and 160,000 bytes in the app's byte format (binary units).
    expect(reading.textContent).toBe(
      'ReadingReadin 3 chunks of 224 tokensCache peak146.5 KiB of 156.3 KiB boundPositions380 of 512 · re-based',
    );
    const warning = screen.getByRole('region', { name: /^Lower quality/ });
    await userEvent.click(within(warning).getByRole('button', { name: 'Compress pages 1 to 3' }));
    await userEvent.click(
      within(screen.getByRole('dialog', { name: 'Compress pages 1 to 3 only?' })).getByRole('button', {
        name: 'Compress pages 1 to 3',
      }),
    );
    await waitFor(() => expect(api.callsOf('documents.recompress')).toEqual([{ documentId: 'd1', pages: [1, 3] }]));
  });
});

describe('the inspector: never stale', () => {
  it('a comparison computed before a recompress is marked out of date, left out of the main grid, and computed again in one click', async () => {
    let current = doc();
    const api = createFakeApi({
      'documents.list': () => [current],
      'documents.get': () => detail(current),
      'documents.compare': (p) => ({
        budget: p.budget ?? 0.3,
        a: stats(),
        b: {
          ...stats([
            [50, 60, 70, 80],
            [50, 60, 70, 80],
            [50, 60, 70, 80],
          ]),
          method: 'snapkv',
        },
      }),
    });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('inspector'));
    await userEvent.click(await screen.findByRole('button', { name: 'Compare' }));
    await screen.findByTestId('heatmap-b');
    expect(screen.getByRole('heading', { name: /Budget by layer and KV head · SnapKV$/ })).toBeTruthy();
    expect(screen.queryByTestId('compare-stale')).toBeNull();
    // The document is compressed again at 50%: the comparison at 30% is the old cache's.
    current = doc({ compression: { ...doc().compression!, budget: 0.5 }, kvBytesKept: 120_000 });
    act(() => api.emit('documents.changed', current));
    const stale = await screen.findByTestId('compare-stale');
    expect(stale.textContent).toMatch(/Out of date: computed at 30% .* \(now 50%\)/);
    // The main grid shows the saved cache, and the comparison's runs cannot be picked for it.
    expect(screen.getByRole('heading', { name: /Saved cache \(Ada-SnapKV\)/ })).toBeTruthy();
    expect((screen.getByRole('radio', { name: 'Second' }) as HTMLInputElement).disabled).toBe(true);
    expect(screen.getByTestId('heatmap-b').closest('[data-stale]')).toBeTruthy();
    await userEvent.click(within(stale).getByRole('button', { name: 'Compute for the cache now' }));
    await waitFor(() => expect(screen.queryByTestId('compare-stale')).toBeNull());
    expect(api.callsOf('documents.compare').at(-1)).toEqual({
      documentId: 'd1',
      budget: 0.5,
      a: 'ada-snapkv',
      b: 'snapkv',
    });
    // Another safeguard α in the settings: the comparison ran with the old one.
    act(() => api.emit('settings.changed', settings({ compression: { ...settings().compression, alpha: 0.5 } })));
    await screen.findByTestId('compare-stale');
  });

  it('a saved cache made with other settings says so, with a way to compress it now', async () => {
    const api = createFakeApi({
      'documents.list': () => [doc({ status: 'stale' })],
      'documents.get': () => detail({ status: 'stale' }),
      'documents.recompress': () => ({ taskId: 't1' }),
    });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('inspector'));
    const note = await screen.findByTestId('cache-stale');
    await userEvent.click(within(note).getByRole('button', { name: 'Compress now' }));
    await waitFor(() => expect(api.callsOf('documents.recompress')).toEqual([{ documentId: 'd1' }]));
  });
});

describe('the inspector: parameters and terms', () => {
  it('shows the safeguard α for an Ada method only, and explains its terms', async () => {
    const api = createFakeApi({ 'documents.list': () => [doc()], 'documents.get': () => detail() });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('inspector'));
    const memory = await screen.findByRole('region', { name: 'Memory' });
    expect(within(memory).getByText('Safeguard α')).toBeTruthy();
    expect(within(memory).getByText('Pooling kernel')).toBeTruthy();
    // Every term carries its one line, the glossary's.
    const term = within(memory).getByText('Safeguard α');
    expect(term.getAttribute('title')).toBe(GLOSSARY.alpha.explain);
    screen.getByTestId('heatmap').focus();
    await userEvent.keyboard('{Enter}');
    const head = await screen.findByTestId('head-detail');
    expect(within(head).getByText('Layer bound ε/C').getAttribute('title')).toBe(GLOSSARY.epsOverC.explain);
  });

  it.each([
    ['snapkv', 'SnapKV: uniform heads, no safeguard'],
    ['streaming', 'StreamingLLM: no scorer, no window or kernel'],
  ] as const)('hides what %s does not read (%s)', async (method, _what) => {
    const s = { ...stats(), method };
    const api = createFakeApi({
      'documents.list': () => [doc({ compression: { ...doc().compression!, method } })],
      'documents.get': () => detail({ compression: { ...doc().compression!, method }, stats: s }),
    });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('inspector'));
    const memory = await screen.findByRole('region', { name: 'Memory' });
    expect(within(memory).queryByText('Safeguard α')).toBeNull();
    if (method === 'streaming') {
      expect(within(memory).queryByText('Pooling kernel')).toBeNull();
      expect(within(memory).queryByText('window')).toBeNull();
    } else expect(within(memory).getByText('Pooling kernel')).toBeTruthy();
  });
});

describe('the inspector: a head’s kept tokens', () => {
  const kept = (over: Partial<KeptPositions> = {}): KeptPositions => ({
    layer: 1,
    head: 2,
    kept: 12,
    prefixTokens: 30,
    window: 4,
    inWindow: 4,
    outsidePages: 1,
    pages: [
      { page: 1, tokens: 20, kept: 5 },
      { page: 2, tokens: 10, kept: 6 },
    ],
    spans: [
      { page: 1, start: 18, end: 34, window: false },
      { page: 2, start: 0, end: 9, window: false },
      { page: 2, start: 13, end: 22, window: true },
    ],
    ...over,
  });

  it('click a cell: the head’s kept tokens, counted and marked on the page’s text', async () => {
    const api = createFakeApi({
      'documents.list': () => [doc()],
      'documents.get': () => detail(),
      'documents.keptPositions': () => kept(),
    });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('inspector'));
    const heatmap = await screen.findByTestId('heatmap');
    heatmap.focus();
    // Layer 1, head 2: down one, right two, Enter.
    await userEvent.keyboard('{ArrowDown}{ArrowRight}{ArrowRight}{Enter}');
    await screen.findByTestId('kept-text');
    expect(api.callsOf('documents.keptPositions')).toEqual([{ documentId: 'd1', layer: 1, head: 2 }]);
    expect(screen.getByTestId('kept-summary').textContent).toBe(
      'Kept 12 of 30 tokens: 7 chosen on the pages, 4 of the observation window (every head keeps it), 1 of the prompt around the pages.',
    );
    // The page it kept the most of comes first: page 1 (16 characters chosen against 9 on page 2).
    const marks = (cls: string) =>
      Array.from(screen.getByTestId('kept-text').querySelectorAll(`mark.${cls}`)).map((m) => m.textContent);
    expect(marks('kept-chosen')).toEqual(['there was a girl']);
    await userEvent.click(screen.getByRole('button', { name: /p\. 2/ }));
    expect(marks('kept-chosen')).toEqual(['Page two ']);
    expect(marks('kept-window')).toEqual(['more word']);
    expect(screen.getByTestId('kept-text').textContent).toBe('Page two has more words.');
  });

  it('a cache that cannot be read says why, and can be read again', async () => {
    let fail = true;
    const api = createFakeApi({
      'documents.list': () => [doc()],
      'documents.get': () => detail(),
      'documents.keptPositions': () => {
        if (fail) throw new Error('the saved cache is damaged: compress it again to rebuild it');
        return kept({ layer: 0, head: 0 });
      },
    });
    await renderApp(api);
    await screen.findAllByTestId('document');
    act(() => setTab('inspector'));
    (await screen.findByTestId('heatmap')).focus();
    await userEvent.keyboard('{Enter}');
    expect((await screen.findByRole('alert')).textContent).toMatch(/the saved cache is damaged/);
    fail = false;
    await userEvent.click(screen.getByRole('button', { name: 'Try again' }));
    await screen.findByTestId('kept-text');
  });
});
