// A Word or Markdown document as written: a Word document's HTML (mammoth's, kept at import) or the
// Markdown original rendered by lib/markdown.ts, both sanitised, with the same overlay as a PDF's text layer
// (retention, the window, citations, search hits). The page text the overlay's ranges refer to is aligned
// with the rendered text (lib/html-overlay.ts), and the ranges are drawn as spans around the characters
// they map to. Each change of the overlay draws the HTML afresh (a new key), so spans never nest.
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';

import type { DocumentDetail } from '../../../electron/api/contract.ts';
import { errorMessage } from '../api/client.ts';
import { fetchDocumentText } from '../lib/document-file.ts';
import type { SearchHit } from '../lib/doc-search.ts';
import { formatPercent } from '../lib/format.ts';
import { alignTexts, joinPages, mapRange } from '../lib/html-overlay.ts';
import { renderMarkdown, sanitizeHtml, type SafeHtml } from '../lib/markdown.ts';
import { retentionColor, type Citation } from '../lib/retention-overlay.ts';
import { SanitizedHtml } from './SanitizedHtml.tsx';
import { pagesRead } from '../../../electron/shared/room.ts';

export interface HtmlDocViewProps {
  detail: DocumentDetail;
  /** The page to bring into view (the ui store's docPage). */
  page: number;
  shade: boolean;
  scaleMax: number;
  citation: Citation | null;
  hits: SearchHit[];
  currentHit: number;
}

/** The document's HTML, sanitised: a Word document's stored HTML, or its Markdown original rendered. */
function useDocumentHtml(detail: DocumentDetail): { html: SafeHtml | null; error: string | null } {
  const [state, setState] = useState<{ html: SafeHtml | null; error: string | null }>({ html: null, error: null });
  const { id, kind } = detail;
  useEffect(() => {
    let alive = true;
    setState({ html: null, error: null });
    fetchDocumentText(id, kind === 'docx' ? 'html' : 'file').then(
      (text) => alive && setState({ html: kind === 'docx' ? sanitizeHtml(text) : renderMarkdown(text), error: null }),
      (e: unknown) => alive && setState({ html: null, error: errorMessage(e) }),
    );
    return () => {
      alive = false;
    };
  }, [id, kind]);
  return state;
}

/** Per character of the rendered text: what the overlay draws there. */
interface CharMarks {
  retention: Float32Array; // NaN: no passage
  window: Uint8Array;
  cited: Float32Array; // NaN: not cited
  hit: Uint8Array; // 1: a hit, 2: the current hit
  unread: Uint8Array; // 1: on a page the model did not read (a range of pages was read)
}

let drawCount = 0;

export function HtmlDocView({ detail, page, shade, scaleMax, citation, hits, currentHit }: HtmlDocViewProps) {
  const { html, error } = useDocumentHtml(detail);
  const ref = useRef<HTMLDivElement>(null);
  const joined = useMemo(() => joinPages(detail.pageList), [detail.pageList]);
  const current = currentHit >= 0 ? hits[currentHit] : undefined;
  // A new key for every change of what is drawn: the HTML is put in afresh, then drawn on.
  // biome-ignore lint/correctness/useExhaustiveDependencies: the key must change with each input the overlay draws
  const key = useMemo(() => ++drawCount, [html, detail, shade, scaleMax, citation, hits, current]);
  const align = useRef<{ html: SafeHtml; map: Int32Array } | null>(null);

  useLayoutEffect(() => {
    const root = ref.current?.firstElementChild;
    if (!root || !html || key < 0) return;
    const nodes: Text[] = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n as Text);
    const rendered = nodes.map((n) => n.data).join('');
    if (align.current?.html !== html) align.current = { html, map: alignTexts(joined.text, rendered) };
    const { map } = align.current;
    const marks: CharMarks = {
      retention: new Float32Array(rendered.length).fill(NaN),
      window: new Uint8Array(rendered.length),
      cited: new Float32Array(rendered.length).fill(NaN),
      hit: new Uint8Array(rendered.length),
      unread: new Uint8Array(rendered.length),
    };
    const fill = (pageNo: number, start: number, end: number, set: (a: number, b: number) => void) => {
      const base = joined.base.get(pageNo);
      const r = base === undefined ? null : mapRange(map, base + start, base + end);
      if (r) set(r[0], r[1]);
    };
    if (shade) {
      for (const p of detail.passages) fill(p.page, p.start, p.end, (a, b) => marks.retention.fill(p.retention, a, b));
      const w = detail.keptWindow;
      if (w) {
        const last = detail.pageList[detail.pageList.length - 1];
        const base = joined.base.get(w.page);
        if (base !== undefined && last) {
          const r = mapRange(map, base + w.start, joined.text.length);
          if (r) marks.window.fill(1, r[0], r[1]);
        }
      }
    }
    if (citation?.documentId === detail.id)
      for (const c of citation.ranges)
        fill(citation.page, c.start, c.end, (a, b) => {
          for (let k = a; k < b; k++)
            marks.cited[k] = Math.max(Number.isNaN(marks.cited[k]) ? 0 : marks.cited[k], c.share);
        });
    // Pages the model did not read are dimmed, as in the page text and the PDF.
    const read = new Set(pagesRead(detail.pageList, detail.readPages).map((p) => p.page));
    for (const p of detail.pageList)
      if (!read.has(p.page)) fill(p.page, 0, p.text.length, (a, b) => marks.unread.fill(1, a, b));
    for (const h of hits) fill(h.page, h.start, h.end, (a, b) => marks.hit.fill(h === current ? 2 : 1, a, b));
    drawMarks(nodes, marks, scaleMax);
    const target =
      root.querySelector('.search-current') ??
      (citation?.documentId === detail.id ? root.querySelector('.cited') : null);
    target?.scrollIntoView({ block: 'center' });
  }, [key, html, joined, detail, shade, scaleMax, citation, hits, current]);

  // A page asked for (the pager, the page strip): the first of its characters that the HTML shows.
  useEffect(() => {
    const root = ref.current?.firstElementChild;
    const base = joined.base.get(page);
    const map = align.current?.map;
    if (!root || base === undefined || !map) return;
    const text = detail.pageList.find((p) => p.page === page)?.text ?? '';
    const r = mapRange(map, base, base + text.length);
    if (!r) return;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    let at = 0;
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const len = (n as Text).data.length;
      if (at + len > r[0]) {
        n.parentElement?.scrollIntoView({ block: 'start' });
        break;
      }
      at += len;
    }
  }, [page, joined, detail.pageList]);

  if (error)
    return (
      <p className="notice small" role="alert">
        The document could not be shown as written: {error}.
      </p>
    );
  if (!html) return <p className="muted small">Opening the document…</p>;
  return (
    <article className="page html-doc" aria-label="The document as written" data-testid="html-doc" ref={ref}>
      <SanitizedHtml key={key} html={html} className="html-doc-body" />
    </article>
  );
}

/** Wraps each run of characters drawn alike in a span, node by node (the HTML was just put in afresh). */
function drawMarks(nodes: Text[], m: CharMarks, scaleMax: number): void {
  let at = 0;
  const same = (a: number, b: number) =>
    (m.retention[a] === m.retention[b] || (Number.isNaN(m.retention[a]) && Number.isNaN(m.retention[b]))) &&
    m.window[a] === m.window[b] &&
    (m.cited[a] === m.cited[b] || (Number.isNaN(m.cited[a]) && Number.isNaN(m.cited[b]))) &&
    m.hit[a] === m.hit[b] &&
    m.unread[a] === m.unread[b];
  for (const node of nodes) {
    const start = at;
    const text = node.data;
    at += text.length;
    if (!/\S/.test(text)) continue; // whitespace between blocks (inside a table row, say) stays as it is
    const parts: Node[] = [];
    let drawn = false;
    for (let a = 0; a < text.length; ) {
      let b = a + 1;
      while (b < text.length && same(start + a, start + b)) b++;
      const k = start + a;
      const kept = !Number.isNaN(m.retention[k]) && !m.window[k];
      const cls = [
        kept && 'passage',
        m.window[k] && 'kept-window',
        !Number.isNaN(m.cited[k]) && 'cited',
        m.hit[k] && 'search-hit',
        m.hit[k] === 2 && 'search-current',
        m.unread[k] && 'unread-text',
      ].filter(Boolean) as string[];
      if (!cls.length) parts.push(document.createTextNode(text.slice(a, b)));
      else {
        drawn = true;
        const span = document.createElement('span');
        span.className = cls.join(' ');
        span.textContent = text.slice(a, b);
        if (kept) {
          span.dataset.retention = m.retention[k].toFixed(3);
          span.style.backgroundColor = retentionColor(m.retention[k], scaleMax);
          span.title = `Kept by ${formatPercent(m.retention[k])} of the cache’s heads`;
        } else if (m.window[k]) span.title = 'Always kept (the observation window)';
        else if (m.unread[k]) span.title = 'Not read: the model knows nothing of this page';
        if (!Number.isNaN(m.cited[k])) span.style.setProperty('--cited-share', m.cited[k].toFixed(3));
        parts.push(span);
      }
      a = b;
    }
    if (drawn) node.replaceWith(...parts);
  }
}
