// A document's status as a coloured badge (the library list and the document's header).
import type { DocumentSummary } from '../../../electron/api/contract.ts';
import { wasCancelled } from '../stores/library.ts';

export const STATUS_TEXT: Record<DocumentSummary['status'], string> = {
  importing: 'Reading the file',
  compressing: 'Compressing',
  ready: 'Ready',
  stale: 'Stale',
  failed: 'Failed',
};

export function StatusBadge({ doc }: { doc: Pick<DocumentSummary, 'status' | 'errorCode'> }) {
  if (wasCancelled(doc)) return <span className="badge status-cancelled">Cancelled</span>;
  return <span className={`badge status-${doc.status}`}>{STATUS_TEXT[doc.status]}</span>;
}
