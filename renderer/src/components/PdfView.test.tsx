// The PDF view over a stand-in pdf.js (jsdom has no canvas): pages are laid out, those in view are drawn with
// their text layer, and the overlay lands on the text layer's spans: the retention of the passages each
// span's text is part of, the window, a citation's and a search hit's own characters.
import { act, cleanup, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { PDFDocumentProxy } from 'pdfjs-dist';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { createFakeApi, detail, doc } from '../test/fake-api.ts';
import { fetchDocumentFile } from '../lib/document-file.ts';
import { loadPdfjs, openPdf } from '../lib/pdfjs.ts';
import { startApp } from '../wire.ts';
import { DocumentPane } from './DocumentPane.tsx';
import { useUi } from '../stores/ui.ts';
import type { Citation } from '../lib/retention-overlay.ts';

vi.mock('../lib/pdfjs.ts', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../lib/pdfjs.ts')>()),
  openPdf: vi.fn(),
  loadPdfjs: vi.fn(),
}));
vi.mock('../lib/document-file.ts', () => ({ fetchDocumentFile: vi.fn(), fetchDocumentText: vi.fn() }));

/** The text items of each page, as pdf.js would report them: together they make the fixture's page text. */
const ITEMS: Record<number, string[]> = {
  1: ['Once upon a time, ', 'there was a girl.', '', 'She had a kite. The end.'],
  2: ['Page two has more words.'],
};

const viewport = (scale: number) => ({ width: 600 * scale, height: 800 * scale, scale, rotation: 0 });
const fakePdf = {
  numPages: 2,
  getPage: async (n: number) => ({
    getViewport: ({ scale }: { scale: number }) => viewport(scale),
    render: () => ({ promise: Promise.resolve(), cancel() {} }),
    getTextContent: async () => ({ items: ITEMS[n].map((str) => ({ str })) }),
    cleanup() {},
  }),
  destroy: async () => {},
} as unknown as PDFDocumentProxy;

/** pdf.js's TextLayer in miniature: one span per item with text, in order. */
class FakeTextLayer {
  textDivs: HTMLElement[] = [];
  textContentItemsStr: string[] = [];
  constructor(private o: { textContentSource: { items: { str: string }[] }; container: HTMLElement }) {}
  async render() {
    for (const { str } of this.o.textContentSource.items) {
      const span = document.createElement('span');
      span.textContent = str;
      this.textDivs.push(span);
      this.textContentItemsStr.push(str);
      if (str) this.o.container.append(span);
    }
  }
  cancel() {}
}

/** Every observed element is in view. */
class InView {
  constructor(private cb: IntersectionObserverCallback) {}
  observe(target: Element) {
    queueMicrotask(() =>
      this.cb([{ target, isIntersecting: true, intersectionRatio: 1 } as IntersectionObserverEntry], this as never),
    );
  }
  disconnect() {}
  unobserve() {}
}

beforeEach(() => {
  vi.stubGlobal('IntersectionObserver', InView);
  vi.mocked(fetchDocumentFile).mockResolvedValue(new Uint8Array([37, 80, 68, 70]));
  vi.mocked(openPdf).mockResolvedValue(fakePdf);
  vi.mocked(loadPdfjs).mockResolvedValue({ TextLayer: FakeTextLayer } as never);
});
afterEach(() => vi.unstubAllGlobals());

function showPdf(citation: Citation | null = null) {
  const pdf = detail({ kind: 'pdf', hasFile: true, keptWindow: { page: 2, start: 10, tokens: 4 } });
  const stop = startApp(
    createFakeApi({ 'documents.list': () => [doc({ kind: 'pdf' })], 'documents.get': () => pdf }),
    null,
  );
  useUi.setState({ citation });
  render(<DocumentPane documentId="d1" />);
  return stop;
}

const layer = (page: number) =>
  screen.getByRole('region', { name: new RegExp(`^Page ${page}`) }).querySelector('.textLayer')!;

describe('the PDF view', () => {
  it('draws the pages in view and shades the text layer’s spans by the passages they hold', async () => {
    const stop = showPdf();
    await waitFor(() => expect(layer(1).querySelectorAll('span')).toHaveLength(3));
    const spans = [...layer(1).querySelectorAll<HTMLElement>('span')];
    await waitFor(() => expect(spans.map((s) => s.dataset.retention)).toEqual(['0.200', '0.200', '0.900']));
    expect(spans[2].title).toBe('Kept by 90% of the cache’s heads');
    // Page 2 holds the window from character 10: the span is mostly in it, so it is drawn as the window.
    await waitFor(() => expect(layer(2).querySelector('span')?.classList.contains('kept-window')).toBe(true));
    expect(layer(2).querySelector<HTMLElement>('span')!.dataset.retention).toBeUndefined();
    // Thumbnails, one per page, name their page's share (beside the page strip, which narrow windows show instead).
    expect(screen.getAllByRole('button', { name: 'Page 1, 41% kept' }).map((b) => b.className.split(' ')[0])).toEqual([
      'page-chip',
      'pdf-thumb',
    ]);
    stop();
  });

  it('marks a citation’s characters and a search hit’s, inside their spans', async () => {
    const stop = showPdf({ documentId: 'd1', page: 1, ranges: [{ start: 46, end: 50, share: 0.7 }] });
    await waitFor(() => expect(layer(1).querySelectorAll('mark.cited')).toHaveLength(1));
    expect(layer(1).querySelector('mark.cited')!.textContent).toBe('kite');
    expect(layer(1).querySelectorAll('span')[2].textContent).toBe('She had a kite. The end.');
    await userEvent.type(screen.getByRole('searchbox', { name: 'Search in the document' }), 'there was');
    await userEvent.click(screen.getByRole('button', { name: 'Next match' }));
    await waitFor(() =>
      expect([...layer(1).querySelectorAll('mark.search-current')].map((m) => m.textContent)).toEqual(['there was']),
    );
    stop();
  });

  it('zooms by steps and back to the pane’s width', async () => {
    const stop = showPdf();
    await waitFor(() => expect(layer(1)).toBeTruthy());
    const page1 = screen.getByRole('region', { name: /^Page 1/ });
    const before = page1.style.width;
    await userEvent.click(screen.getByRole('button', { name: 'Zoom in' }));
    expect(page1.style.width).not.toBe(before);
    expect(screen.getByRole('button', { name: 'Fit width' }).getAttribute('aria-pressed')).toBe('false');
    await userEvent.click(screen.getByRole('button', { name: 'Fit width' }));
    expect(page1.style.width).toBe(before);
    stop();
  });

  it('keeps the page box on the page in view: scrolled to, turned to by a thumbnail, opened at', async () => {
    // An IntersectionObserver the test moves: `inView(n)` puts page n most in view.
    const observers: { cb: IntersectionObserverCallback; targets: HTMLElement[] }[] = [];
    class Moved {
      targets: HTMLElement[] = [];
      constructor(public cb: IntersectionObserverCallback) {
        observers.push(this);
      }
      observe(t: HTMLElement) {
        this.targets.push(t);
      }
      disconnect() {}
      unobserve() {}
    }
    vi.stubGlobal('IntersectionObserver', Moved);
    const inView = (page: number) =>
      act(() => {
        for (const o of observers) {
          const pages = o.targets.filter((t) => t.dataset.page);
          const at = (t: HTMLElement) => Number(t.dataset.page) === page;
          const entries = pages.map((t) => ({ target: t, isIntersecting: at(t), intersectionRatio: at(t) ? 0.8 : 0 }));
          if (entries.length) o.cb(entries as unknown as IntersectionObserverEntry[], o as never);
        }
      });
    const scrolled = vi.spyOn(Element.prototype, 'scrollIntoView');
    const scrolledTo = () => scrolled.mock.contexts.map((el) => (el as HTMLElement).dataset.page).filter(Boolean);
    const box = () => (screen.getByRole('spinbutton', { name: /^Page number/ }) as HTMLInputElement).value;

    let stop = showPdf();
    await screen.findByRole('navigation', { name: /^Page thumbnails/ });
    inView(2);
    expect(box()).toBe('2');
    inView(1);
    expect(box()).toBe('1');
    const thumbs = screen.getByRole('navigation', { name: /^Page thumbnails/ });
    await userEvent.click(within(thumbs).getByRole('button', { name: /^Page 2/ }));
    expect(scrolledTo()).toEqual(['2']);
    expect(box()).toBe('2');
    cleanup();
    stop();

    // Opened again on page 2 (back from another tab): the view turns to it rather than showing page 1.
    scrolled.mockClear();
    act(() => useUi.setState({ docPage: 2 }));
    stop = showPdf();
    await screen.findByRole('navigation', { name: /^Page thumbnails/ });
    await waitFor(() => expect(scrolledTo()).toEqual(['2']));
    expect(box()).toBe('2');
    stop();
  });

  it('asks a protected PDF’s password once a session, and opens it with it', async () => {
    const given: string[] = [];
    vi.mocked(openPdf).mockImplementation(async (_bytes, askPassword) => {
      const password = await askPassword(false);
      if (password === null) throw new Error('declined');
      given.push(password);
      return fakePdf;
    });
    const stop = showPdf();
    await userEvent.type(await screen.findByLabelText('Password'), 'secret');
    await userEvent.click(screen.getByRole('button', { name: 'Open' }));
    await waitFor(() => expect(layer(1).querySelectorAll('span')).toHaveLength(3));
    cleanup();
    stop();
    const again = showPdf();
    await waitFor(() => expect(layer(1).querySelectorAll('span')).toHaveLength(3));
    expect(screen.queryByLabelText('Password')).toBeNull();
    expect(given).toEqual(['secret', 'secret']);
    again();
  });
});
