// The choice before a long OCR, over the fake API: an import waiting with its pages (DocumentSummary.ocrChoice)
// shows how many pages and about how long, offers them all or a range whose time follows the range (by default as
// far as a minute's recognition goes from the first page), and sends the choice.
import { screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';

import { createFakeApi, doc } from '../test/fake-api.ts';
import { renderApp } from '../test/render-app.tsx';

const pages = Array.from({ length: 40 }, (_, i) => i + 1);
const waiting = doc({
  id: 'd1',
  title: 'book scan',
  fileName: 'book scan.pdf',
  status: 'importing',
  compression: null,
  kvBytesFull: null,
  kvBytesKept: null,
  // Pages 1 and 2 were recognised by an earlier try: 38 left at 5 s a page.
  ocrChoice: { pages: 40, ocrPages: pages, pending: pages.slice(2), secondsPerPage: 5, measured: true },
});

describe('the choice before a long OCR', () => {
  it('says how many pages and how long, and sends all of them or the range chosen', async () => {
    const api = createFakeApi({
      'documents.list': () => [waiting],
      'documents.chooseOcrPages': () => ({ ok: true }),
    });
    await renderApp(api);
    const card = (await screen.findAllByTestId('document'))[0];
    expect(within(card).getByText('Waiting for your choice')).toBeTruthy();
    const choice = within(card).getByTestId('ocr-choice');
    expect(choice.textContent).toMatch(
      /40 pages without a text layer to read by OCR \(about 3 min on this computer; 2 recognised already\)/,
    );
    // By default from page 1 as far as a minute goes: pages 3 to 14 are 12 pages of 5 s.
    await userEvent.click(within(choice).getByRole('button', { name: 'Read pages 1 to 14 (about 1 min)' }));
    expect(api.callsOf('documents.chooseOcrPages')).toEqual([{ documentId: 'd1', pages: [1, 14] }]);
    // Another first page: the end follows it, and the time follows the range.
    await userEvent.selectOptions(within(choice).getByLabelText('From page'), '30');
    await userEvent.selectOptions(within(choice).getByLabelText('to page'), '31');
    await userEvent.click(within(choice).getByRole('button', { name: 'Read pages 30 to 31 (about 10 s)' }));
    await userEvent.click(within(choice).getByRole('button', { name: 'Read all 40 pages' }));
    expect(api.callsOf('documents.chooseOcrPages').slice(1)).toEqual([
      { documentId: 'd1', pages: [30, 31] },
      { documentId: 'd1', pages: 'all' },
    ]);
  });
});
