// A document's status as a coloured badge (the library list and the document's header).
import type { DocumentSummary } from '../../../electron/api/contract.ts';

export const STATUS_TEXT: Record<DocumentSummary['status'], string> = {
  importing: 'Reading the file',
  compressing: 'Compressing',
  ready: 'Ready',
  stale: 'Stale',
  failed: 'Failed',
};

export function StatusBadge({ status }: { status: DocumentSummary['status'] }) {
  return <span className={`badge status-${status}`}>{STATUS_TEXT[status]}</span>;
}
