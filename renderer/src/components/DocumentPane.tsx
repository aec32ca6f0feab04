// The document view: a page's text with the retention map folded onto it. Each passage is shaded by how
// much of the model's cache kept it (the share of (layer, KV head) slots that kept its tokens), so the
// user sees what the model remembers of the document. Pages are navigated with buttons, a page number,
// and a strip of all pages shaded by their mean retention. After a range of pages was read, every page is
// still shown; those the model did not read are dimmed and labelled so. An answer's page chip opens its page
// with the sentences the answer looked at highlighted (ui.ts citation).
import { useEffect, useMemo, useRef, useState, type ReactNode } from 'react';

import type { DocumentDetail, RetainedPassage } from '../../../electron/api/contract.ts';
import { loadDetail, useDocuments } from '../stores/documents.ts';
import { clearCitation, setDocPage, useUi } from '../stores/ui.ts';
import { formatPercent } from '../lib/format.ts';
import { ReadNote } from './ReadNote.tsx';
import { pagesRead } from '../../../electron/services/room.ts';

/** Background alpha of a passage kept by `retention` of the cache (0: barely tinted, 1: strong). */
export function retentionAlpha(retention: number): number {
  return 0.06 + 0.64 * Math.min(1, Math.max(0, retention));
}

export interface Segment {
  start: number;
  end: number;
  retention: number | null;
}

/** Splits a page's text into runs: passages with their retention, and the text between them (null). */
export function segmentsOf(text: string, passages: RetainedPassage[]): Segment[] {
  const sorted = [...passages].filter((p) => p.end > p.start).sort((a, b) => a.start - b.start);
  const out: Segment[] = [];
  let at = 0;
  for (const p of sorted) {
    const start = Math.max(p.start, at);
    const end = Math.min(p.end, text.length);
    if (end <= start) continue;
    if (start > at) out.push({ start: at, end: start, retention: null });
    out.push({ start, end, retention: p.retention });
    at = end;
  }
  if (at < text.length) out.push({ start: at, end: text.length, retention: null });
  return out;
}

export interface CitedSegment extends Segment {
  /** The share of the answer's attention of the cited sentence this run is part of; null: not cited. */
  cited: number | null;
}

/** Splits runs further at the cited ranges (an answer's sentences, ui.ts CitationView), marking those inside one. */
export function citedSegments(segments: Segment[], ranges: readonly { start: number; end: number; share: number }[]) {
  const sorted = [...ranges].filter((r) => r.end > r.start).sort((a, b) => a.start - b.start);
  const out: CitedSegment[] = [];
  for (const s of segments) {
    let at = s.start;
    for (const r of sorted) {
      const start = Math.max(r.start, at),
        end = Math.min(r.end, s.end);
      if (end <= start) continue;
      if (start > at) out.push({ ...s, start: at, end: start, cited: null });
      out.push({ ...s, start, end, cited: r.share });
      at = end;
    }
    if (at < s.end) out.push({ ...s, start: at, end: s.end, cited: null });
  }
  return out;
}

/** Mean retention of each page, weighted by passage length (null: nothing known). */
export function pageRetention(detail: DocumentDetail): Map<number, number> {
  const sum = new Map<number, number>(),
    len = new Map<number, number>();
  for (const p of detail.passages) {
    const n = p.end - p.start;
    sum.set(p.page, (sum.get(p.page) ?? 0) + p.retention * n);
    len.set(p.page, (len.get(p.page) ?? 0) + n);
  }
  const out = new Map<number, number>();
  for (const [page, s] of sum) out.set(page, s / Math.max(1, len.get(page) ?? 1));
  return out;
}

export function RetentionLegend() {
  return (
    <div
      className="retention-legend"
      role="note"
      aria-label="Legend: shading shows the share of the model's cache that kept a passage"
    >
      <span className="muted small">Kept by</span>
      <span className="retention-scale" aria-hidden="true" />
      <span className="small">
        0% <span className="muted">→</span> 100%
      </span>
      <span className="muted small">of the cache’s heads</span>
    </div>
  );
}

function PageText({
  text,
  passages,
  shade,
  cited,
}: {
  text: string;
  passages: RetainedPassage[];
  shade: boolean;
  cited: readonly { start: number; end: number; share: number }[];
}) {
  const parts: ReactNode[] = useMemo(
    () =>
      citedSegments(segmentsOf(text, passages), cited).map((s, i) => {
        const run = text.slice(s.start, s.end);
        const inner =
          s.retention === null || !shade ? (
            <span key={i}>{run}</span>
          ) : (
            <span
              key={i}
              className="passage"
              data-retention={s.retention.toFixed(3)}
              style={{ backgroundColor: `rgb(var(--keep-rgb) / ${retentionAlpha(s.retention).toFixed(3)})` }}
              title={`Kept by ${formatPercent(s.retention)} of the cache’s heads`}
            >
              {run}
            </span>
          );
        return s.cited === null ? (
          inner
        ) : (
          <mark
            key={i}
            className="cited"
            data-share={s.cited.toFixed(3)}
            title={`The answer looked here: ${formatPercent(s.cited, 1)} of its attention to the document`}
          >
            {inner}
          </mark>
        );
      }),
    [text, passages, shade, cited],
  );
  return <div className="page-text">{parts}</div>;
}

const NO_RANGES: { start: number; end: number; share: number }[] = [];

export function DocumentPane({ documentId }: { documentId: string }) {
  const detail = useDocuments((s) => s.details[documentId]);
  const error = useDocuments((s) => s.detailError[documentId]);
  const page = useUi((s) => s.docPage);
  const citation = useUi((s) => s.citation);
  const [shade, setShade] = useState(true);
  useEffect(() => {
    if (!detail) void loadDetail(documentId);
  }, [documentId, detail]);
  // A citation opened: its first highlighted sentence is brought into view (a long page may hide it).
  const article = useRef<HTMLElement>(null);
  useEffect(() => {
    if (citation && detail) article.current?.querySelector('mark.cited')?.scrollIntoView?.({ block: 'center' });
  }, [citation, detail]);
  const perPage = useMemo(() => (detail ? pageRetention(detail) : new Map<number, number>()), [detail]);
  const read = useMemo(
    () => new Set(detail ? pagesRead(detail.pageList, detail.readPages).map((p) => p.page) : []),
    [detail],
  );
  if (!detail)
    return (
      <div className="pane-pad muted">{error ? `Could not open the document: ${error}` : 'Opening the document…'}</div>
    );
  const pages = detail.pageList;
  if (pages.length === 0) return <div className="pane-pad muted">The document has no text yet.</div>;
  const index = Math.min(pages.length, Math.max(1, page)) - 1;
  const current = pages[index];
  const passages = detail.passages.filter((p) => p.page === current.page);
  const go = (i: number) => setDocPage(Math.min(pages.length, Math.max(1, i + 1)));
  const mean = perPage.get(current.page);
  const unread = !read.has(current.page);
  const cited = citation && citation.documentId === documentId && citation.page === current.page ? citation : null;
  return (
    <div className="document-pane">
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
        <label className="checkbox">
          <input type="checkbox" checked={shade} onChange={(e) => setShade(e.target.checked)} />
          Show what the model kept
        </label>
        {detail.passages.length > 0 && shade && <RetentionLegend />}
      </div>
      <ReadNote detail={detail} />
      {pages.length > 1 && (
        <nav className="page-strip" aria-label="All pages, shaded by how much of each the model kept">
          {pages.map((p, i) => {
            const r = perPage.get(p.page);
            const notRead = !read.has(p.page);
            return (
              <button
                key={p.page}
                type="button"
                className={`page-chip${i === index ? ' current' : ''}${notRead ? ' unread' : ''}`}
                style={
                  r !== undefined && shade
                    ? { backgroundColor: `rgb(var(--keep-rgb) / ${retentionAlpha(r).toFixed(3)})` }
                    : undefined
                }
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
      {cited && (
        <p className="notice small cited-note" role="status">
          <mark className="cited">Highlighted</mark>: the sentences the answer looked at most on this page.{' '}
          <button type="button" className="link-button" onClick={clearCitation}>
            Clear
          </button>
        </p>
      )}
      <article
        ref={article}
        className={`page${unread ? ' unread' : ''}`}
        aria-label={`Page ${current.page}`}
        data-testid="page"
      >
        <header className="page-head muted small">
          Page {current.page}
          {unread && ' · not read: the model knows nothing of this page'}
          {mean !== undefined && ` · on average kept by ${formatPercent(mean)} of the cache’s heads`}
        </header>
        <PageText text={current.text} passages={passages} shade={shade} cited={cited?.ranges ?? NO_RANGES} />
      </article>
    </div>
  );
}
