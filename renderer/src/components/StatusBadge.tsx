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

export function StatusBadge({ doc }: { doc: Pick<DocumentSummary, 'status' | 'errorCode' | 'ocrChoice'> }) {
  if (wasCancelled(doc)) return <span className="badge status-cancelled">Cancelled</span>;
  // An import stopped before a long OCR waits for its user, not for the file.
  if (doc.ocrChoice) return <span className="badge status-importing">Waiting for your choice</span>;
  return <span className={`badge status-${doc.status}`}>{STATUS_TEXT[doc.status]}</span>;
}
