// How a document was read into the model (the app core's read plan, DocumentSummary.readNote), shown in the
// document view and the inspector. A document longer than the model's context was read with re-based
// positions, which answers less accurately: that is a quality warning, with the way out beside it, compressing
// only the pages that fit. Those pages are computed here from the page list, never read back from the note.
import type { DocumentDetail } from '../../../electron/api/contract.ts';
import { recompressDocument } from '../stores/documents.ts';
import { useSettings } from '../stores/settings.ts';
import { documentTask, useTasks } from '../stores/tasks.ts';
import { askConfirm } from '../stores/ui.ts';
import { fittingPages } from '../../../electron/services/room.ts';

const pageRange = ([a, b]: [number, number]) => (a === b ? `page ${a}` : `pages ${a} to ${b}`);

export function ReadNote({ detail }: { detail: DocumentDetail }) {
  const roomSetting = useSettings((s) => s.settings?.conversationRoom ?? null);
  const busy = useTasks((s) => !!documentTask(s, detail.id));
  if (!detail.readNote) return null;
  const rebased = !!detail.stats?.rebased;
  if (!rebased)
    return (
      <p className="read-note muted small" data-testid="read-note">
        {detail.readNote}
      </p>
    );
  const range = detail.contextTokens ? fittingPages(detail.pageList, detail.contextTokens, roomSetting) : null;
  const compressRange = (r: [number, number]) =>
    askConfirm({
      title: `Compress ${pageRange(r)} only?`,
      body:
        `The document is read again, only ${pageRange(r)}, at its own positions: answers are more accurate, ` +
        'but know nothing of the other pages until the whole document is compressed again.',
      confirmLabel: `Compress ${pageRange(r)}`,
      onConfirm: () => void recompressDocument(detail.id, r),
    });
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
      {range ? (
        <button
          type="button"
          className="button small"
          onClick={() => compressRange(range)}
          disabled={busy || detail.status === 'compressing' || detail.status === 'importing'}
        >
          Compress {pageRange(range)} only
        </button>
      ) : (
        <p className="small">Not even the first page fits the context with room for the conversation.</p>
      )}
    </section>
  );
}
