// Before a long OCR: the import of a scan whose pages would take long to recognise waits (DocumentSummary.ocrChoice)
// for its user to say which pages to read: all of them, a range (first to last page), or none (cancel the import).
// The estimate is the core's speed of this machine times the pages not recognised yet (shared/ocr.ts ocrSeconds),
// for the range as it is chosen.
import { useMemo } from 'react';

import type { DocumentSummary, OcrChoice } from '../../../electron/api/contract.ts';
import { OCR_ASK_OVER_SECONDS, aboutDuration, ocrSeconds } from '../../../electron/shared/ocr.ts';
import { chooseOcrPages } from '../stores/library.ts';
import { cancelTask, documentTask, useTasks } from '../stores/tasks.ts';
import { PageRangeFields, pageRangeText, usePageRange } from './PageRange.tsx';

export function OcrChoiceNotice({ doc }: { doc: DocumentSummary }) {
  return doc.ocrChoice ? <Choice id={doc.id} fileName={doc.fileName} choice={doc.ocrChoice} /> : null;
}

function Choice({ id, fileName, choice }: { id: string; fileName: string; choice: OcrChoice }) {
  const task = useTasks((s) => documentTask(s, id));
  const pages = useMemo(() => Array.from({ length: choice.pages }, (_, i) => i + 1), [choice.pages]);
  // Any page may start the range, and reach the last; by default from the first page needing OCR as far as a
  // minute's recognition goes.
  const starts = useMemo(() => new Map(pages.map((p) => [p, choice.pages] as const)), [pages, choice.pages]);
  const range = usePageRange(starts, pages, (from) => {
    let to = from;
    for (const p of pages) if (p >= from && ocrSeconds(choice, [from, p]) <= OCR_ASK_OVER_SECONDS) to = p;
    return to;
  });
  const n = choice.ocrPages.length;
  const kept = n - choice.pending.length;
  const textPages = choice.pages - n;
  const estimate = (s: number) => `${aboutDuration(s)}${choice.measured ? '' : ', estimated'}`;
  return (
    <section className="ocr-choice" data-testid="ocr-choice" aria-label={`Pages of ${fileName} to read by OCR`}>
      <p className="small">
        <strong>
          {n} page{n > 1 ? 's' : ''} without a text layer to read by OCR
        </strong>{' '}
        ({estimate(ocrSeconds(choice))} on this computer{kept ? `; ${kept} recognised already` : ''}).
        {textPages > 0 &&
          ` The ${textPages} page${textPages > 1 ? 's' : ''} with text ${textPages > 1 ? 'are' : 'is'} read in any case.`}{' '}
        Pages left out stay in the document, unread.
      </p>
      <div className="ocr-choice-actions">
        <button type="button" className="button small primary" onClick={() => void chooseOcrPages(id, 'all')}>
          Read all {n} page{n > 1 ? 's' : ''}
        </button>
        <PageRangeFields legend="A range of pages to read by OCR" range={range}>
          <button type="button" className="button small" onClick={() => void chooseOcrPages(id, range.range)}>
            Read {pageRangeText(range.range)} ({estimate(ocrSeconds(choice, range.range))})
          </button>
        </PageRangeFields>
        <button
          type="button"
          className="link-button"
          disabled={!task || task.cancelling}
          onClick={() => task && void cancelTask(task.taskId)}
        >
          Cancel the import
        </button>
      </div>
    </section>
  );
}
