// A PDF's pages as the file draws them: pdf.js renders each page to a canvas, with its text layer (one
// transparent span per text item) on top, and the retention map, the citations and the search hits are
// drawn on those spans (mapped from the app's page text by lib/text-layer-map.ts). Every page has a
// placeholder of its size, and only the pages near the viewport are drawn (a 200-page PDF stays smooth);
// the thumbnails beside them are drawn the same way. Zoom: steps, or the width of the pane.
import { useCallback, useEffect, useMemo, useRef, useState, type FormEvent } from 'react';
import type { PDFDocumentProxy, PDFPageProxy } from 'pdfjs-dist';

import type { DocumentDetail, DocumentPage } from '../../../electron/api/contract.ts';
import { uncertain } from '../../../electron/shared/ocr.ts';
import { api, errorMessage } from '../api/client.ts';
import { ocrTextContent } from '../lib/ocr-text-layer.ts';
import type { SearchHit } from '../lib/doc-search.ts';
import { fetchDocumentFile } from '../lib/document-file.ts';
import { loadPdfjs, openPdf, PasswordDeclined } from '../lib/pdfjs.ts';
import { pageRetention, retentionColor, shadeOf, windowStartOn, type Citation } from '../lib/retention-overlay.ts';
import { mapItemsToText, offsetsInItem, overlap, type TextRange } from '../lib/text-layer-map.ts';
import { formatPercent } from '../lib/format.ts';
import { pagesRead } from '../../../electron/shared/room.ts';
import type { HtmlDocViewProps } from './HtmlDocView.tsx';

export const ZOOM_STEPS = [0.5, 0.67, 0.8, 1, 1.25, 1.5, 2, 3] as const;
const GAP = 16;
const THUMB_WIDTH = 96;

interface Size {
  width: number;
  height: number;
}

/** What the overlay draws on one page's text layer. */
interface Overlay {
  pageText: string;
  passages: DocumentDetail['passages'];
  windowStart: number | null;
  scaleMax: number;
  shade: boolean;
  cited: Citation['ranges'];
  hits: SearchHit[];
  focus: TextRange | null;
  /** A page read by OCR: its words are its text layer (documents.pageWords). */
  ocrWordsOf: { documentId: string; page: number } | null;
}

/** Passwords the user gave for documents, kept in memory for this session only (never stored). */
const sessionPasswords = new Map<string, string>();

const EMPTY_OVERLAY: Overlay = {
  pageText: '',
  passages: [],
  windowStart: null,
  scaleMax: 1,
  shade: false,
  cited: [],
  hits: [],
  focus: null,
  ocrWordsOf: null,
};

export interface PdfViewProps extends HtmlDocViewProps {
  /** The page to show (the ui store's docPage); changed from outside, the view scrolls to it. */
  page: number;
  /** The page most in view as the user scrolls, and a page the view turned to (a thumbnail, a citation). */
  onPageShown: (page: number) => void;
}

type Opening =
  | { state: 'loading' }
  | { state: 'password'; wrong: boolean; answer: (password: string | null) => void }
  | { state: 'open'; pdf: PDFDocumentProxy; first: Size }
  | { state: 'failed'; message: string };

export function PdfView({ detail, page, onPageShown, shade, scaleMax, citation, hits, currentHit }: PdfViewProps) {
  const [opening, setOpening] = useState<Opening>({ state: 'loading' });
  const [zoom, setZoom] = useState<number | 'fit'>('fit');
  const [width, setWidth] = useState(0);
  const [sizes, setSizes] = useState<Record<number, Size>>({});
  const [pagesEl, setPagesEl] = useState<HTMLDivElement | null>(null);
  const placeholders = useRef(new Map<number, HTMLElement>());
  // The page the view last reported as shown (it opens at the first); a page asked for is reported too, so
  // that the pager always names the page in view.
  const reported = useRef(1);
  const report = useCallback(
    (n: number) => {
      if (n === reported.current) return;
      reported.current = n;
      onPageShown(n);
    },
    [onPageShown],
  );
  const [near, setNear] = useState<ReadonlySet<number>>(new Set());

  useEffect(() => {
    let alive = true;
    let pdf: PDFDocumentProxy | null = null;
    setOpening({ state: 'loading' });
    (async () => {
      const bytes = await fetchDocumentFile(detail.id, detail.kind === 'image' ? 'pdf' : 'file');
      pdf = await openPdf(bytes, (wrong) => {
        // A password given earlier in this session opens the document again without asking.
        const known = sessionPasswords.get(detail.id);
        if (known !== undefined && !wrong) return Promise.resolve(known);
        return new Promise((answer) => {
          if (!alive) return answer(null);
          setOpening({
            state: 'password',
            wrong,
            answer: (password) => {
              if (password === null) sessionPasswords.delete(detail.id);
              else sessionPasswords.set(detail.id, password);
              answer(password);
            },
          });
        });
      });
      const first = (await pdf.getPage(1)).getViewport({ scale: 1 });
      if (alive) setOpening({ state: 'open', pdf, first: { width: first.width, height: first.height } });
      else void pdf.destroy();
    })().catch((e: unknown) => {
      if (!alive) return;
      setOpening({
        state: 'failed',
        message:
          e instanceof PasswordDeclined
            ? 'This PDF is password-protected: the pages are shown once its password is given.'
            : `The PDF could not be shown: ${errorMessage(e)}.`,
      });
    });
    return () => {
      alive = false;
      void pdf?.destroy();
    };
  }, [detail.id, detail.kind]);

  // The width of the pane, for "fit width".
  useEffect(() => {
    const el = pagesEl;
    if (!el) return;
    const measure = () => setWidth(el.clientWidth);
    measure();
    if (typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, [pagesEl]);

  const pdf = opening.state === 'open' ? opening.pdf : null;
  const first = opening.state === 'open' ? opening.first : null;
  const scale =
    zoom === 'fit' ? (first && width > 0 ? Math.min(2, Math.max(0.4, (width - 2) / first.width)) : 1) : zoom;
  const sizeOf = (n: number): Size => sizes[n] ?? first ?? { width: 612, height: 792 };
  const numPages = pdf?.numPages ?? 0;

  // Which pages are near the viewport (drawn), and which one is most in view (reported as the page shown).
  useEffect(() => {
    if (!pdf || typeof IntersectionObserver === 'undefined') return;
    const nearIo = new IntersectionObserver(
      (entries) =>
        setNear((prev) => {
          const next = new Set(prev);
          for (const e of entries) {
            const n = Number((e.target as HTMLElement).dataset.page);
            if (e.isIntersecting) next.add(n);
            else next.delete(n);
          }
          return next;
        }),
      { rootMargin: '100% 0px' },
    );
    const ratios = new Map<number, number>();
    const shownIo = new IntersectionObserver(
      (entries) => {
        for (const e of entries) ratios.set(Number((e.target as HTMLElement).dataset.page), e.intersectionRatio);
        let best = 0,
          bestRatio = 0;
        for (const [n, r] of ratios) if (r > bestRatio) [best, bestRatio] = [n, r];
        if (best) report(best);
      },
      { threshold: [0, 0.25, 0.5, 0.75, 1] },
    );
    for (const el of placeholders.current.values()) {
      nearIo.observe(el);
      shownIo.observe(el);
    }
    return () => {
      nearIo.disconnect();
      shownIo.disconnect();
    };
  }, [pdf, report]);

  // A page asked for from outside (the pager, a thumbnail, a citation, a search hit): scroll to it.
  const scrollTo = useCallback(
    (n: number) => {
      report(n);
      placeholders.current.get(n)?.scrollIntoView({ block: 'start' });
    },
    [report],
  );
  useEffect(() => {
    if (pdf && page !== reported.current) scrollTo(page);
  }, [pdf, page, scrollTo]);
  useEffect(() => {
    if (pdf && citation?.documentId === detail.id) scrollTo(citation.page);
  }, [pdf, citation, detail.id, scrollTo]);
  const hit = currentHit >= 0 ? hits[currentHit] : undefined;
  useEffect(() => {
    if (pdf && hit) scrollTo(hit.page);
  }, [pdf, hit, scrollTo]);

  const perPage = useMemo(() => pageRetention(detail.passages), [detail.passages]);
  const ocrOf = useMemo(
    () => new Map(detail.pageList.flatMap((p) => (p.ocr ? [[p.page, p.ocr] as const] : []))),
    [detail.pageList],
  );
  // After a range was read, the pages the model knows nothing of are dimmed and labelled so; so are the pages of a
  // scan that OCR left unread (outside the pages chosen at import).
  const read = useMemo(
    () =>
      new Set(
        pagesRead(detail.pageList, detail.readPages)
          .filter((p) => !p.ocr?.unread)
          .map((p) => p.page),
      ),
    [detail.pageList, detail.readPages],
  );
  // Each page's overlay, made again only when what it draws changes (a new object redraws the spans).
  const overlays = useMemo(() => {
    const out = new Map<number, Overlay>();
    const byPage = new Map<number, DocumentDetail['passages']>();
    for (const x of detail.passages) {
      const list = byPage.get(x.page);
      if (list) list.push(x);
      else byPage.set(x.page, [x]);
    }
    for (const p of detail.pageList)
      out.set(p.page, {
        pageText: p.text,
        passages: byPage.get(p.page) ?? [],
        windowStart: windowStartOn(p.page, detail.keptWindow),
        scaleMax,
        shade,
        cited: citation?.documentId === detail.id && citation.page === p.page ? citation.ranges : [],
        hits: hits.filter((h) => h.page === p.page),
        focus: hit?.page === p.page ? hit : null,
        ocrWordsOf: p.ocr ? { documentId: detail.id, page: p.page } : null,
      });
    return out;
  }, [detail, scaleMax, shade, citation, hits, hit]);
  const onSize = useCallback(
    (n: number, s: Size) =>
      setSizes((prev) =>
        prev[n] && prev[n].width === s.width && prev[n].height === s.height ? prev : { ...prev, [n]: s },
      ),
    [],
  );

  if (opening.state === 'password') return <PasswordForm wrong={opening.wrong} onAnswer={opening.answer} />;
  if (opening.state === 'failed')
    return (
      <p className="notice small" role="alert">
        {opening.message}
      </p>
    );

  return (
    <div className="pdf-view" data-testid="pdf-view">
      <fieldset className="pdf-zoom">
        <legend className="sr-only">Zoom</legend>
        <button
          type="button"
          className="button small"
          aria-label="Zoom out"
          disabled={!pdf || scale <= ZOOM_STEPS[0]}
          onClick={() => setZoom([...ZOOM_STEPS].reverse().find((z) => z < scale - 0.01) ?? ZOOM_STEPS[0])}
        >
          −
        </button>
        <span className="small pdf-zoom-value" aria-live="polite">
          {Math.round(scale * 100)}%
        </span>
        <button
          type="button"
          className="button small"
          aria-label="Zoom in"
          disabled={!pdf || scale >= ZOOM_STEPS[ZOOM_STEPS.length - 1]}
          onClick={() => setZoom(ZOOM_STEPS.find((z) => z > scale + 0.01) ?? ZOOM_STEPS[ZOOM_STEPS.length - 1])}
        >
          +
        </button>
        <button
          type="button"
          className="button small"
          aria-pressed={zoom === 'fit'}
          disabled={!pdf}
          onClick={() => setZoom('fit')}
        >
          Fit width
        </button>
      </fieldset>
      <div className="pdf-body">
        {pdf && (
          <nav className="pdf-thumbs" aria-label="Page thumbnails, shaded by how much of each page the model kept">
            {Array.from({ length: numPages }, (_, i) => i + 1).map((n) => (
              <PdfThumb
                key={n}
                pdf={pdf}
                page={n}
                size={sizeOf(n)}
                current={n === page}
                unread={!read.has(n)}
                ocr={ocrOf.get(n) ?? null}
                retention={shade ? perPage.get(n) : undefined}
                scaleMax={scaleMax}
                onPick={() => scrollTo(n)}
              />
            ))}
          </nav>
        )}
        <div className="pdf-pages" ref={setPagesEl}>
          {!pdf && <p className="muted small">Opening the PDF…</p>}
          {pdf &&
            Array.from({ length: numPages }, (_, i) => i + 1).map((n) => {
              const s = sizeOf(n);
              return (
                <section
                  key={n}
                  className={`pdf-page${read.has(n) ? '' : ' unread'}`}
                  data-page={n}
                  data-testid="pdf-page"
                  aria-label={`Page ${n}${read.has(n) ? '' : ', not read: the model knows nothing of this page'}`}
                  ref={(el) => {
                    if (el) placeholders.current.set(n, el);
                    else placeholders.current.delete(n);
                  }}
                  style={{
                    width: Math.round(s.width * scale),
                    height: Math.round(s.height * scale),
                    marginBottom: GAP,
                  }}
                >
                  {near.has(n) && (
                    <PdfPage
                      pdf={pdf}
                      page={n}
                      scale={scale}
                      overlay={overlays.get(n) ?? EMPTY_OVERLAY}
                      onSize={onSize}
                    />
                  )}
                </section>
              );
            })}
        </div>
      </div>
    </div>
  );
}

function PasswordForm({ wrong, onAnswer }: { wrong: boolean; onAnswer: (password: string | null) => void }) {
  const [password, setPassword] = useState('');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onAnswer(password);
  };
  return (
    <form className="pdf-password notice" onSubmit={submit} aria-label="PDF password">
      <p>
        {wrong ? 'That password is not the right one. ' : ''}
        This PDF is password-protected: give its password to see its pages.
      </p>
      <label>
        Password{' '}
        <input
          type="password"
          value={password}
          autoComplete="off"
          onChange={(e) => setPassword(e.target.value)}
          // biome-ignore lint/a11y/noAutofocus: the form appears because the user opened this document, and asks one thing
          autoFocus
        />
      </label>{' '}
      <button type="submit" className="button small primary" disabled={!password}>
        Open
      </button>{' '}
      <button type="button" className="button small" onClick={() => onAnswer(null)}>
        Cancel
      </button>
    </form>
  );
}

/** One page: its canvas and text layer, drawn while it is near the viewport, and the overlay on the spans. */
function PdfPage({
  pdf,
  page,
  scale,
  overlay,
  onSize,
}: {
  pdf: PDFDocumentProxy;
  page: number;
  scale: number;
  overlay: Overlay;
  onSize: (page: number, size: Size) => void;
}) {
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const layerRef = useRef<HTMLDivElement>(null);
  const [layer, setLayer] = useState<{
    divs: HTMLElement[];
    strs: string[];
    ranges: (TextRange | null)[];
  } | null>(null);
  const [proxy, setProxy] = useState<PDFPageProxy | null>(null);

  useEffect(() => {
    let alive = true;
    void pdf.getPage(page).then(
      (p) => {
        if (!alive) return;
        const v = p.getViewport({ scale: 1 });
        onSize(page, { width: v.width, height: v.height });
        setProxy(p);
      },
      () => {},
    );
    return () => {
      alive = false;
    };
  }, [pdf, page, onSize]);

  const pageText = overlay.pageText;
  const ocrDoc = overlay.ocrWordsOf?.documentId ?? null;
  useEffect(() => {
    const canvas = canvasRef.current;
    const container = layerRef.current;
    if (!proxy || !canvas || !container) return;
    let alive = true;
    const viewport = proxy.getViewport({ scale });
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.floor(viewport.width * dpr);
    canvas.height = Math.floor(viewport.height * dpr);
    const render = proxy.render({
      canvas,
      viewport,
      transform: dpr !== 1 ? [dpr, 0, 0, dpr, 0, 0] : undefined,
    });
    render.promise.catch(() => {}); // cancelled when the page leaves or the zoom changes
    container.replaceChildren();
    let textLayer: { cancel(): void } | null = null;
    void (async () => {
      const { TextLayer } = await loadPdfjs();
      // A scan's text layer is the words OCR recognised on it, where they are.
      const content = ocrDoc
        ? ocrTextContent((await api().call('documents.pageWords', { documentId: ocrDoc, page })).words, (x, y) =>
            proxy.getViewport({ scale: 1 }).convertToPdfPoint(x, y),
          )
        : await proxy.getTextContent();
      if (!alive) return;
      const tl = new TextLayer({ textContentSource: content as never, container, viewport });
      textLayer = tl;
      await tl.render();
      if (!alive) return;
      const divs = tl.textDivs;
      const strs = tl.textContentItemsStr;
      setLayer({ divs, strs, ranges: mapItemsToText(pageText, strs) });
    })().catch(() => {});
    return () => {
      alive = false;
      render.cancel();
      textLayer?.cancel();
      setLayer(null);
    };
  }, [proxy, scale, pageText, ocrDoc, page]);

  useEffect(
    () => () => {
      proxy?.cleanup();
    },
    [proxy],
  );

  // The overlay: each span drawn by the passages, window, citations and search hits its range meets.
  const { passages, windowStart, scaleMax, shade, cited, hits, focus } = overlay;
  useEffect(() => {
    if (!layer) return;
    layer.divs.forEach((div, i) => {
      const range = layer.ranges[i];
      const s = range ? shadeOf(range, passages, windowStart, cited, hits) : null;
      const kept = shade && s?.retention != null && !s.window;
      div.style.backgroundColor = kept ? retentionColor(s!.retention!, scaleMax) : '';
      if (kept) div.dataset.retention = s!.retention!.toFixed(3);
      else delete div.dataset.retention;
      div.classList.toggle('kept-window', shade && !!s?.window);
      div.title = kept
        ? `Kept by ${formatPercent(s!.retention!)} of the cache’s heads`
        : shade && s?.window
          ? 'Always kept (the observation window)'
          : '';
      // Citations and search hits: marks on their own characters when the offsets are exact, else the span.
      const str = layer.strs[i];
      const marks: Mark[] = [];
      let whole = { cited: null as number | null, hit: false, current: false };
      if (range) {
        const targets: [TextRange, Omit<Mark, 'from' | 'to'>][] = [
          ...cited.map((c): [TextRange, Omit<Mark, 'from' | 'to'>] => [c, { className: 'cited', share: c.share }]),
          ...hits.map((h): [TextRange, Omit<Mark, 'from' | 'to'>] => [
            h,
            { className: h === focus ? 'search-hit search-current' : 'search-hit' },
          ]),
        ];
        for (const [t, m] of targets) {
          if (overlap(range, t) === 0) continue;
          const at = offsetsInItem(range, str, t);
          if (at) marks.push({ ...m, from: at[0], to: at[1] });
          else
            whole = {
              cited: m.share !== undefined ? Math.max(whole.cited ?? 0, m.share) : whole.cited,
              hit: whole.hit || m.className.startsWith('search'),
              current: whole.current || t === focus,
            };
        }
      }
      drawMarks(div, str, marks);
      div.classList.toggle('cited', whole.cited !== null);
      if (whole.cited !== null) div.style.setProperty('--cited-share', whole.cited.toFixed(3));
      div.classList.toggle('search-hit', whole.hit);
      div.classList.toggle('search-current', whole.current);
    });
  }, [layer, passages, windowStart, scaleMax, shade, cited, hits, focus]);

  // The current search hit, else the first cited span, is brought into view (once per hit or citation).
  useEffect(() => {
    if (!layer || (!focus && !cited.length)) return;
    const target = focus ?? cited[0];
    const i = layer.ranges.findIndex((r) => !!r && overlap(r, target) > 0);
    if (i >= 0) (layer.divs[i].querySelector('mark') ?? layer.divs[i]).scrollIntoView({ block: 'center' });
  }, [layer, focus, cited]);

  return (
    <div
      className="pdf-page-inner"
      style={{
        ['--total-scale-factor' as string]: String(scale),
        ['--scale-round-x' as string]: '1px',
        ['--scale-round-y' as string]: '1px',
      }}
    >
      <canvas ref={canvasRef} className="pdf-canvas" />
      <div ref={layerRef} className="textLayer" data-testid="text-layer" />
    </div>
  );
}

interface Mark {
  from: number;
  to: number;
  className: string;
  /** A citation's share of the answer's attention. */
  share?: number;
}

/** A text-layer span's text with `marks` (offsets in its string) wrapped in <mark>s; its plain text without. */
function drawMarks(div: HTMLElement, str: string, marks: Mark[]): void {
  if (!marks.length) {
    if (div.firstElementChild) div.textContent = str;
    return;
  }
  const edges = [...new Set([0, str.length, ...marks.flatMap((m) => [m.from, m.to])])].sort((a, b) => a - b);
  const nodes: Node[] = [];
  for (let k = 0; k + 1 < edges.length; k++) {
    const [a, b] = [edges[k], edges[k + 1]];
    const on = marks.filter((m) => m.from <= a && m.to >= b);
    if (!on.length) {
      nodes.push(document.createTextNode(str.slice(a, b)));
      continue;
    }
    const mark = document.createElement('mark');
    mark.className = [...new Set(on.flatMap((m) => m.className.split(' ')))].join(' ');
    const share = Math.max(-1, ...on.map((m) => m.share ?? -1));
    if (share >= 0) mark.style.setProperty('--cited-share', share.toFixed(3));
    mark.textContent = str.slice(a, b);
    nodes.push(mark);
  }
  div.replaceChildren(...nodes);
}

/** How a page was read by OCR, for people. */
function ocrLabel(ocr: NonNullable<DocumentPage['ocr']>): string {
  if (ocr.unread) return 'not read by OCR: outside the pages chosen at import';
  const sure = `${Math.round(ocr.confidence)}% confident`;
  return uncertain(ocr) ? `read by OCR, uncertain (${sure}): check the text against the page` : `read by OCR (${sure})`;
}

/** A page's thumbnail, drawn when the thumbnail column scrolls near it; its frame shaded by the page's retention. */
function PdfThumb({
  pdf,
  page,
  size,
  current,
  unread,
  ocr,
  retention,
  scaleMax,
  onPick,
}: {
  pdf: PDFDocumentProxy;
  page: number;
  size: Size;
  current: boolean;
  /** Not read by the model (a range of pages was read): dimmed and labelled, as the page strip does. */
  unread: boolean;
  /** Read by OCR: marked, and marked uncertain as the read note says (shared/ocr.ts uncertain). */
  ocr: DocumentPage['ocr'] | null;
  retention: number | undefined;
  scaleMax: number;
  onPick: () => void;
}) {
  const ref = useRef<HTMLButtonElement>(null);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const [visible, setVisible] = useState(false);
  useEffect(() => {
    const el = ref.current;
    if (!el || typeof IntersectionObserver === 'undefined') return;
    const io = new IntersectionObserver(([e]) => setVisible(e.isIntersecting), { rootMargin: '200px 0px' });
    io.observe(el);
    return () => io.disconnect();
  }, []);
  useEffect(() => {
    const canvas = canvasRef.current;
    if (!visible || !canvas) return;
    let alive = true;
    let task: { cancel(): void } | null = null;
    void pdf.getPage(page).then((p) => {
      if (!alive) return;
      const viewport = p.getViewport({ scale: THUMB_WIDTH / p.getViewport({ scale: 1 }).width });
      canvas.width = Math.floor(viewport.width);
      canvas.height = Math.floor(viewport.height);
      const t = p.render({ canvas, viewport });
      task = t;
      t.promise.catch(() => {});
    });
    return () => {
      alive = false;
      task?.cancel();
    };
  }, [visible, pdf, page]);
  const height = Math.round((THUMB_WIDTH * size.height) / size.width);
  return (
    <button
      ref={ref}
      type="button"
      className={`pdf-thumb${current ? ' current' : ''}${unread ? ' unread' : ''}`}
      onClick={onPick}
      aria-label={`Page ${page}${unread ? ', not read' : retention !== undefined ? `, ${formatPercent(retention)} kept` : ''}${ocr ? `, ${ocrLabel(ocr)}` : ''}`}
      aria-current={current ? 'page' : undefined}
      style={retention !== undefined ? { borderColor: retentionColor(retention, scaleMax) } : undefined}
    >
      <canvas ref={canvasRef} style={{ width: THUMB_WIDTH, height }} />
      <span className="small">{page}</span>
      {ocr && (
        <span
          className={`pdf-thumb-ocr${uncertain(ocr) ? ' uncertain' : ''}${ocr.unread ? ' unread' : ''}`}
          title={ocrLabel(ocr)}
          data-testid="thumb-ocr"
        >
          {ocr.unread ? 'no OCR' : uncertain(ocr) ? 'OCR?' : 'OCR'}
        </span>
      )}
      {retention !== undefined && (
        <span className="pdf-thumb-heat" style={{ backgroundColor: retentionColor(retention, scaleMax) }} />
      )}
    </button>
  );
}
