import { act, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';

import type { Result } from '../../../electron/api/contract.ts';
import { createFakeApi, detail, doc, rebasedDetail, stats } from '../test/fake-api.ts';
import { renderApp } from '../test/render-app.tsx';
import { setTab } from '../stores/ui.ts';

describe('the inspector', () => {
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
    // One colour domain for the three grids, so colours compare across them.
    const domains = ['heatmap', 'heatmap-a', 'heatmap-b'].map((id) => screen.getByTestId(id).dataset.domain);
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
