// Failed imports, apart from the documents that work: one collapsible section of the library, each with
// only the action that can help it (its remedy: compress again, read the file again, give the PDF's
// password; none for a damaged or unsupported file), dismissable one by one or all at once.
import { useShallow } from 'zustand/react/shallow';

import type { DocumentSummary } from '../../../electron/api/contract.ts';
import { useDocuments } from '../stores/documents.ts';
import { dismissFailed, failedIds, runRemedy, setFailedOpen, useLibrary } from '../stores/library.ts';
import { selectDocument } from '../stores/ui.ts';

const REMEDY_LABEL: Record<NonNullable<DocumentSummary['remedy']>, string> = {
  compress: 'Try again',
  import: 'Try again',
  password: 'Enter password…',
};

/** The action that can help a failed document, if any. */
export function FailureAction({ doc, className = 'link-button' }: { doc: DocumentSummary; className?: string }) {
  if (doc.status !== 'failed' || !doc.remedy) return null;
  return (
    <button type="button" className={className} onClick={() => runRemedy(doc)}>
      {REMEDY_LABEL[doc.remedy]}
    </button>
  );
}

function FailedRow({ id }: { id: string }) {
  const d = useDocuments((s) => s.byId[id]);
  if (!d) return null;
  return (
    <li className="failed-item" data-testid="failed-document">
      <button type="button" className="failed-name link-button" onClick={() => selectDocument(id)} title={d.fileName}>
        {d.title}
      </button>
      {d.fileName !== d.title && <span className="doc-file">{d.fileName}</span>}
      {d.error && <span className="doc-error">{d.error}</span>}
      <span className="failed-actions">
        <FailureAction doc={d} />
        <button
          type="button"
          className="link-button"
          aria-label={`Dismiss ${d.title}`}
          onClick={() => void dismissFailed([id])}
        >
          Dismiss
        </button>
      </span>
    </li>
  );
}

export function FailedImports() {
  const ids = useDocuments(useShallow(failedIds));
  const open = useLibrary((s) => s.failedOpen);
  if (!ids.length) return null;
  return (
    <section className="failed-imports" aria-label="Failed imports">
      <div className="failed-head">
        <button
          type="button"
          className="link-button failed-toggle"
          aria-expanded={open}
          onClick={() => setFailedOpen(!open)}
        >
          {open ? '▾' : '▸'} Failed imports ({ids.length})
        </button>
        <button type="button" className="link-button" onClick={() => void dismissFailed(ids)}>
          Dismiss all
        </button>
      </div>
      {open && (
        <ul className="failed-list">
          {ids.map((id) => (
            <FailedRow key={id} id={id} />
          ))}
        </ul>
      )}
    </section>
  );
}
