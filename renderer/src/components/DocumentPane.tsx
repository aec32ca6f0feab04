// The document view: the document itself with the retention map folded onto it. A PDF whose original is
// stored shows its pages (PdfView: canvas and text layer), a Word or Markdown document its formatted text
// (HtmlDocView); plain text, and documents imported before originals were kept, show each page's text.
// Each passage is shaded by how much of the model's cache kept it (the share of (layer, KV head) slots that
// kept its tokens), on a scale topped by the highest value outside the observation window; the window,
// which every method keeps whole, is drawn apart and labelled. Citations (ranges of a page's text) are
// drawn over it in their own style, and search finds words on every page. After a range of pages was
// read, every page is still shown; those the model did not read are dimmed and labelled so.
import { useCallback, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';

import type { DocumentDetail, KeptWindow } from '../../../electron/api/contract.ts';
import { loadDetail, useDocuments } from '../stores/documents.ts';
import { clearCitation, setDocPage, useUi } from '../stores/ui.ts';
import { formatCount, formatPercent } from '../lib/format.ts';
import { searchPages, stepHit, type SearchHit } from '../lib/doc-search.ts';
import {
  pageRetention,
  retentionColor,
  scaleMax as scaleMaxOf,
  segmentsOf,
  windowStartOn,
  type CitedRange,
} from '../lib/retention-overlay.ts';
import { ReadNote } from './ReadNote.tsx';
import { HtmlDocView, type HtmlDocViewProps } from './HtmlDocView.tsx';
import { PdfView } from './PdfView.tsx';
import { pagesRead } from '../../../electron/shared/room.ts';

/** What the shading means, its scale (from the data shown) and the window drawn apart. */
export function RetentionLegend({ max, window }: { max: number; window: KeptWindow | null }) {
  return (
    <div className="retention-legend" role="note" aria-label="Legend" data-testid="retention-legend">
      <span className="small">
        Shading: the share of the model’s cache (every layer’s KV heads) that kept each sentence.
      </span>
      {/* How to read the scale, on hover: on a small window the legend must not push the page off screen. */}
      <span
        className="retention-scale-wrap"
        title="No tint: no head kept it. The top is the highest share outside the window; a square-root scale, so faint tints are small shares"
      >
        <span className="small">0% (not kept)</span>
        <span className="retention-scale" aria-hidden="true" />
        <span className="small">{formatPercent(max, max < 0.1 ? 1 : 0)} (the most kept)</span>
      </span>
      {window && (
        <span className="small window-key" data-testid="window-label">
          <span className="window-swatch" aria-hidden="true" /> Always kept: the last {formatCount(window.tokens)}{' '}
          tokens, from which the scores were computed (not on the scale)
        </span>
      )}
    </div>
  );
}

function PageText({
  text,
  passages,
  windowStart,
  scaleMax,
  shade,
  cited,
  hits,
}: {
  text: string;
  passages: DocumentDetail['passages'];
  windowStart: number | null;
  scaleMax: number;
  shade: boolean;
  cited: CitedRange[];
  hits: SearchHit[];
}) {
  const parts: ReactNode[] = useMemo(
    () =>
      segmentsOf(text, shade ? passages : [], shade ? windowStart : null, cited, hits).map((s, i) => {
        const kept = s.retention !== null && !s.window;
        const cls = [
          kept && 'passage',
          s.window && 'kept-window',
          s.cited !== null && 'cited',
          s.hit && 'search-hit',
        ].filter(Boolean);
        if (!cls.length) return <span key={i}>{text.slice(s.start, s.end)}</span>;
        return (
          <span
            key={i}
            className={cls.join(' ')}
            data-retention={kept ? s.retention!.toFixed(3) : undefined}
            style={kept ? { backgroundColor: retentionColor(s.retention!, scaleMax) } : undefined}
            title={
              kept
                ? `Kept by ${formatPercent(s.retention!)} of the cache’s heads`
                : s.window
                  ? 'Always kept (the observation window)'
                  : undefined
            }
          >
            {text.slice(s.start, s.end)}
          </span>
        );
      }),
    [text, passages, windowStart, scaleMax, shade, cited, hits],
  );
  return <div className="page-text">{parts}</div>;
}

/** Search in the document: a field, the count, previous / next. */
function DocSearch({
  query,
  onQuery,
  count,
  current,
  onStep,
}: {
  query: string;
  onQuery: (q: string) => void;
  count: number;
  current: number;
  onStep: (step: 1 | -1) => void;
}) {
  return (
    <search className="doc-search">
      <input
        type="search"
        value={query}
        placeholder="Search the document"
        aria-label="Search in the document"
        onChange={(e) => onQuery(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter') {
            e.preventDefault();
            onStep(e.shiftKey ? -1 : 1);
          }
        }}
      />
      {query.trim() && (
        <span className="small muted" aria-live="polite" data-testid="search-count">
          {count === 0 ? 'not found' : `${current >= 0 ? current + 1 : 0} of ${count}`}
        </span>
      )}
      <button
        type="button"
        className="button small"
        aria-label="Previous match"
        disabled={count === 0}
        onClick={() => onStep(-1)}
      >
        ↑
      </button>
      <button
        type="button"
        className="button small"
        aria-label="Next match"
        disabled={count === 0}
        onClick={() => onStep(1)}
      >
        ↓
      </button>
    </search>
  );
}

export function DocumentPane({ documentId }: { documentId: string }) {
  const detail = useDocuments((s) => s.details[documentId]);
  const error = useDocuments((s) => s.detailError[documentId]);
  const page = useUi((s) => s.docPage);
  const citation = useUi((s) => s.citation);
  const [shade, setShade] = useState(true);
  // The search belongs to the document it was typed in, and the current hit to the hits it was chosen
  // among: another document, or new hits (another query, the document read again), start afresh.
  const [search, setSearch] = useState({ documentId, query: '' });
  const query = search.documentId === documentId ? search.query : '';
  const [cursor, setCursor] = useState<{ hits: SearchHit[]; index: number }>({ hits: [], index: -1 });
  useEffect(() => {
    if (!detail) void loadDetail(documentId);
  }, [documentId, detail]);
  const perPage = useMemo(() => (detail ? pageRetention(detail.passages) : new Map<number, number>()), [detail]);
  const max = useMemo(() => scaleMaxOf(detail?.passages ?? []), [detail]);
  const read = useMemo(
    () => new Set(detail ? pagesRead(detail.pageList, detail.readPages).map((p) => p.page) : []),
    [detail],
  );
  const hits = useMemo(() => (detail ? searchPages(detail.pageList, query) : []), [detail, query]);
  const current = cursor.hits === hits ? cursor.index : -1;
  // A citation opened (ui.ts openCitation, which also turns to its page): on the page text, its first
  // highlighted sentence is brought into view (a long page may hide it); the PDF and HTML views do their own.
  const article = useRef<HTMLElement>(null);
  useEffect(() => {
    if (citation && detail) article.current?.querySelector('.cited')?.scrollIntoView?.({ block: 'center' });
  }, [citation, detail]);
  const onStep = useCallback(
    (step: 1 | -1) => {
      const next = stepHit(hits.length, current, step);
      setCursor({ hits, index: next });
      if (next >= 0) setDocPage(hits[next].page);
    },
    [hits, current],
  );
  if (!detail)
    return (
      <div className="pane-pad muted">{error ? `Could not open the document: ${error}` : 'Opening the document…'}</div>
    );
  const pages = detail.pageList;
  if (pages.length === 0) return <div className="pane-pad muted">The document has no text yet.</div>;
  const index = Math.min(pages.length, Math.max(1, page)) - 1;
  const currentPage = pages[index];
  const go = (i: number) => setDocPage(Math.min(pages.length, Math.max(1, i + 1)));
  const mean = perPage.get(currentPage.page);
  const unread = !read.has(currentPage.page);
  // An image is shown as the page it was put on at import (with its recognised words).
  const showPdf = (detail.kind === 'pdf' && detail.hasFile) || (detail.kind === 'image' && detail.hasPdf);
  // Word and Markdown as written; plain text (and anything imported before files were kept) as page text.
  const showHtml = (detail.kind === 'docx' && detail.hasHtml) || (detail.kind === 'markdown' && detail.hasFile);
  const citedHere = citation?.documentId === detail.id ? citation : null;
  // What the PDF and the HTML views draw, the same for both.
  const view: HtmlDocViewProps = {
    detail,
    page: index + 1,
    shade,
    scaleMax: max,
    citation: citedHere,
    hits,
    currentHit: current,
  };
  return (
    <div className={`document-pane${showPdf ? ' with-pdf' : ''}`}>
      <div className="doc-toolbar">
        <nav className="pager" aria-label="Pages">
          <button
            type="button"
            className="button small"
            onClick={() => go(index - 1)}
            disabled={index === 0}
            aria-label="Previous page"
          >
            ←
          </button>
          <label className="page-input">
            <span>Page</span>
            <input
              type="number"
              min={1}
              max={pages.length}
              value={index + 1}
              onChange={(e) => {
                const v = Number(e.target.value);
                if (Number.isFinite(v) && v >= 1) go(v - 1);
              }}
              aria-label={`Page number, 1 to ${pages.length}`}
            />
            <span>of {pages.length}</span>
          </label>
          <button
            type="button"
            className="button small"
            onClick={() => go(index + 1)}
            disabled={index === pages.length - 1}
            aria-label="Next page"
          >
            →
          </button>
        </nav>
        <DocSearch
          query={query}
          onQuery={(q) => setSearch({ documentId, query: q })}
          count={hits.length}
          current={current}
          onStep={onStep}
        />
        <label className="checkbox">
          <input type="checkbox" checked={shade} onChange={(e) => setShade(e.target.checked)} />
          Show what the model kept
        </label>
      </div>
      {detail.passages.length > 0 && shade && <RetentionLegend max={max} window={detail.keptWindow} />}
      <ReadNote detail={detail} />
      {pages.length > 1 && (
        <nav
          className={`page-strip${showPdf ? ' beside-thumbnails' : ''}`}
          aria-label="All pages, shaded by how much of each the model kept"
        >
          {pages.map((p, i) => {
            const r = perPage.get(p.page);
            const notRead = !read.has(p.page);
            return (
              <button
                key={p.page}
                type="button"
                className={`page-chip${i === index ? ' current' : ''}${notRead ? ' unread' : ''}`}
                style={r !== undefined && shade ? { backgroundColor: retentionColor(r, max) } : undefined}
                onClick={() => go(i)}
                aria-label={`Page ${p.page}${notRead ? ', not read' : r !== undefined ? `, ${formatPercent(r)} kept` : ''}`}
                aria-current={i === index ? 'page' : undefined}
              >
                {p.page}
              </button>
            );
          })}
        </nav>
      )}
      {detail.passages.length === 0 ? (
        <p className="notice small">
          {detail.status === 'ready' || detail.status === 'stale'
            ? 'This cache keeps every token (no compression), so there is nothing to shade.'
            : 'The retention map appears once the document is compressed.'}
        </p>
      ) : (
        detail.status === 'stale' && (
          <p className="notice small">
            The shading shows the saved cache, made with other settings than the current ones.
          </p>
        )
      )}
      {!showPdf && !showHtml && detail.kind !== 'text' && (
        <p className="muted small" data-testid="no-original">
          This document was imported before Folio kept the original file, so its text is shown instead of the
          {detail.kind === 'pdf' ? ' pages' : ' formatted document'}. Import it again to see{' '}
          {detail.kind === 'pdf' ? 'them' : 'it'}.
        </p>
      )}
      {citedHere && (
        <p className="notice small cited-note" role="status">
          <mark className="cited">Highlighted</mark>: the sentences the answer looked at most on page {citedHere.page}.{' '}
          <button type="button" className="link-button" onClick={clearCitation}>
            Clear
          </button>
        </p>
      )}
      {showPdf ? (
        <PdfView {...view} onPageShown={setDocPage} />
      ) : showHtml ? (
        <HtmlDocView {...view} />
      ) : (
        <article
          ref={article}
          className={`page${unread ? ' unread' : ''}`}
          aria-label={`Page ${currentPage.page}`}
          data-testid="page"
        >
          <header className="page-head muted small">
            Page {currentPage.page}
            {unread && ' · not read: the model knows nothing of this page'}
            {mean !== undefined && ` · on average kept by ${formatPercent(mean)} of the cache’s heads`}
          </header>
          <PageText
            text={currentPage.text}
            passages={detail.passages.filter((p) => p.page === currentPage.page)}
            windowStart={windowStartOn(currentPage.page, detail.keptWindow)}
            scaleMax={max}
            shade={shade}
            cited={citedHere?.page === currentPage.page ? citedHere.ranges : NO_RANGES}
            hits={hits.filter((h) => h.page === currentPage.page)}
          />
        </article>
      )}
    </div>
  );
}

const NO_RANGES: CitedRange[] = [];
