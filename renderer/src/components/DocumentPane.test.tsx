import { act, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';

import { createFakeApi, detail, doc } from '../test/fake-api.ts';
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
