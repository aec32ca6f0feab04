import { act, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';

import type { Result } from '../../../electron/api/contract.ts';
import { createFakeApi, detail, doc, rebasedDetail, stats } from '../test/fake-api.ts';
import { renderApp } from '../test/render-app.tsx';
import { setTab } from '../stores/ui.ts';

describe('the inspector', () => {
  it('switches metrics, shows memory saved, and compares uniform with Ada on demand with progress', async () => {
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
    expect((screen.getByRole('radio', { name: 'Uniform' }) as HTMLInputElement).disabled).toBe(true);
    await userEvent.click(screen.getByRole('button', { name: 'Compare' }));
    expect(api.callsOf('documents.compare')).toEqual([{ documentId: 'd1', budget: 0.3 }]);
    act(() =>
      api.emit('task.progress', {
        taskId: 'cmp',
        kind: 'compare',
        documentId: 'd1',
        done: 100,
        total: 375,
        etaMs: 500,
        message: 'snapkv at 0.3',
      }),
    );
    expect(screen.getByRole('progressbar', { name: 'Comparing uniform and Ada' }).getAttribute('aria-valuetext')).toBe(
      '100 of 375 tokens · 27% · 1 s left',
    );
    const uniform = stats([
      [113, 113, 113, 113],
      [113, 113, 113, 113],
      [113, 113, 113, 113],
    ]);
    act(() => finish({ uniform: { ...uniform, method: 'snapkv' }, ada: stats() }));
    await screen.findByTestId('heatmap-uniform');
    expect(screen.getByTestId('heatmap-ada')).toBeTruthy();
    expect((screen.getByRole('radio', { name: 'Ada' }) as HTMLInputElement).checked).toBe(true);
    await userEvent.click(screen.getByRole('radio', { name: 'Uniform' }));
    await waitFor(() =>
      expect(screen.getByRole('heading', { name: /Budget by layer and KV head · Uniform \(SnapKV\)/ })).toBeTruthy(),
    );
    // One colour domain for the three grids, so colours compare across them.
    const domains = ['heatmap', 'heatmap-uniform', 'heatmap-ada'].map((id) => screen.getByTestId(id).dataset.domain);
    expect(new Set(domains).size).toBe(1);
    expect(JSON.parse(domains[0]!)).toEqual([61, 186]);
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
    // 150,000 and 160,000 bytes in the app's byte format.
    expect(reading.textContent).toBe(
      'ReadingReadin 3 chunks of 224 tokensCache peak146 KB of 156 KB boundPositions380 of 512 · re-based',
    );
    const warning = screen.getByRole('region', { name: /^Lower quality/ });
    await userEvent.click(within(warning).getByRole('button', { name: 'Compress pages 1 to 3 only' }));
    await userEvent.click(
      within(screen.getByRole('dialog', { name: 'Compress pages 1 to 3 only?' })).getByRole('button', {
        name: 'Compress pages 1 to 3',
      }),
    );
    await waitFor(() => expect(api.callsOf('documents.recompress')).toEqual([{ documentId: 'd1', pages: [1, 3] }]));
  });
});
