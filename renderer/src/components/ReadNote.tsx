// How a document was read into the model (the app core's read plan, DocumentSummary.readNote), shown in the
// document view and the inspector. A document longer than the model's context was read with re-based
// positions, which answers less accurately: that is a quality warning, with the way out beside it, compressing
// only a range of pages that fits, from any page. The ranges are computed here from the page list (the rule
// the app core checks them by, room.ts), never read back from the note. After a range was read, the note says
// which pages the model knows, with the way back: compressing the whole document.
import { useMemo } from 'react';

import type { DocumentDetail } from '../../../electron/api/contract.ts';
import { recompressDocument } from '../stores/documents.ts';
import { useSettings } from '../stores/settings.ts';
import { documentTask, useTasks } from '../stores/tasks.ts';
import { askConfirm } from '../stores/ui.ts';
import { ocrNotes, uncertain } from '../../../electron/shared/ocr.ts';
import { fittingEnds } from '../../../electron/shared/room.ts';
import { readKind } from '../lib/read-kind.ts';
import { formatBytes, formatCount, formatPercent } from '../lib/format.ts';
import { PageRangeFields, pageRangeText as pageRange, usePageRange } from './PageRange.tsx';

/**
 * What the read bought and what limits the chat, apart: the positions the document takes of the context (its
 * length, or with packed positions only what it kept) and so what is left to talk in; the memory its cache
 * takes, kept against full. Null before the document was read.
 */
export function readSummary(d: DocumentDetail): string | null {
  const st = d.stats;
  if (!st || !d.contextTokens) return null;
  const kind = readKind(d);
  const packed =
    kind === 'rebased' || kind === 'packed'
      ? ` (${kind === 'rebased' ? 're-based' : 'packed'}: only what it kept)`
      : '';
  const left = Math.max(0, d.contextTokens - st.positions);
  let text =
    `Positions: the document takes ${formatCount(st.positions)} of ${formatCount(d.contextTokens)}${packed}, ` +
    `leaving ${formatCount(left)} for the conversation.`;
  if (d.kvBytesKept !== null && d.kvBytesFull)
    text +=
      ` Memory: ${formatBytes(d.kvBytesKept)} kept of ${formatBytes(d.kvBytesFull)}` +
      ` (saves ${formatPercent(1 - d.kvBytesKept / d.kvBytesFull)}).`;
  return text;
}

export function ReadNote({ detail }: { detail: DocumentDetail }) {
  const roomSetting = useSettings((s) => s.settings?.conversationRoom ?? null);
  const busy = useTasks((s) => !!documentTask(s, detail.id));
  const ocr = <OcrNote detail={detail} />;
  if (!detail.readNote) return ocr;
  const summary = readSummary(detail);
  const summaryLine = summary && (
    <p className="read-summary small" data-testid="read-summary">
      {summary}
    </p>
  );
  // Re-based because the document is longer than the context: a quality warning with the way out. Packed by
  // choice (it fits): the note says so, and why.
  const rebased = readKind(detail) === 'rebased';
  const disabled = busy || detail.status === 'compressing' || detail.status === 'importing';
  if (!rebased)
    return (
      <>
        <p className="read-note muted small" data-testid="read-note">
          {detail.readNote}
        </p>
        {ocr}
        {summaryLine}
        <PagesRead detail={detail} disabled={disabled} />
      </>
    );
  return (
    <section
      className="read-note warning"
      data-testid="read-note"
      aria-label="Lower quality: how the document was read"
    >
      <p>
        <strong>
          <span aria-hidden="true">⚠ </span>Lower quality:
        </strong>{' '}
        {detail.readNote}
      </p>
      {ocr}
      {summaryLine}
      <PagesRead detail={detail} disabled={disabled} />
      <PageRangeOffer detail={detail} roomSetting={roomSetting} disabled={disabled} />
    </section>
  );
}

/** The pages read by OCR, those left unread (outside the pages chosen at import) and those whose recognition is
 * uncertain (marked on their thumbnails too). */
function OcrNote({ detail }: { detail: DocumentDetail }) {
  const notes = ocrNotes(detail.pageList);
  if (!notes.length) return null;
  const text = notes.join('; ');
  const warn = detail.pageList.some((p) => p.ocr && (p.ocr.unread || uncertain(p.ocr)));
  return (
    <p className={`read-note small${warn ? ' uncertain' : ' muted'}`} data-testid="ocr-note">
      {text.charAt(0).toUpperCase() + text.slice(1)}.
    </p>
  );
}

/** After a range was read: the pages the model knows, and the way to read the whole document again. */
function PagesRead({ detail, disabled }: { detail: DocumentDetail; disabled: boolean }) {
  const taken = detail.readPages;
  if (!taken) return null;
  const total = detail.pageList.length;
  const compressWhole = () =>
    askConfirm({
      title: 'Compress the whole document?',
      body:
        `All ${total} pages are read again. A document longer than the model's context is read with re-based ` +
        'positions, which answers less accurately; the ranges of pages that fit are offered then.',
      confirmLabel: 'Compress the whole document',
      onConfirm: () => void recompressDocument(detail.id),
    });
  return (
    <p className="read-pages small" data-testid="read-pages">
      Read: {pageRange(taken)} of {total}. Answers know nothing of the other pages.{' '}
      <button type="button" className="button small" onClick={compressWhole} disabled={disabled}>
        Compress the whole document
      </button>
    </p>
  );
}

/** The first page of a range and its last, among those that fit from there; by default the longest range from
 * the document's first page that fits. */
function PageRangeOffer({
  detail,
  roomSetting,
  disabled,
}: {
  detail: DocumentDetail;
  roomSetting: number | null;
  disabled: boolean;
}) {
  const { pageList, tokens, contextTokens } = detail;
  // Each page that fits on its own may start a range, with the last page that fits after it; pages the last
  // read left out were not measured, so no range holds them (room.ts).
  const starts = useMemo(() => {
    const out = new Map<number, number>();
    if (!contextTokens) return out;
    const ends = fittingEnds({ pages: pageList, prefixTokens: tokens, contextTokens }, roomSetting);
    pageList.forEach((p, i) => {
      const last = ends[i];
      if (last !== null) out.set(p.page, last);
    });
    return out;
  }, [pageList, tokens, contextTokens, roomSetting]);
  const pages = useMemo(() => pageList.map((p) => p.page), [pageList]);
  const chosen = usePageRange(starts, pages);
  if (starts.size === 0)
    return (
      <p className="small">
        {detail.readPages
          ? `Of the pages read (${pageRange(detail.readPages)}), not even one fits the context with room for the conversation.`
          : 'Not even the first page fits the context with room for the conversation.'}
      </p>
    );
  const range = chosen.range;
  const compress = () =>
    askConfirm({
      title: `Compress ${pageRange(range)} only?`,
      body:
        `The document is read again, only ${pageRange(range)}, at its own positions: answers are more accurate, ` +
        'but know nothing of the other pages until the whole document is compressed again.',
      confirmLabel: `Compress ${pageRange(range)}`,
      onConfirm: () => void recompressDocument(detail.id, range),
    });
  return (
    <PageRangeFields legend="A range of pages that fits the context" range={chosen}>
      <button type="button" className="button small" onClick={compress} disabled={disabled}>
        Compress {pageRange(range)}
      </button>
    </PageRangeFields>
  );
}
