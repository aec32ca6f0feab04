// The main pane: the selected document's header (title, status, memory saved) and its three tabs: the
// chat, the document view with the retention map, and the inspector.
import { useEffect, useRef, type KeyboardEvent } from 'react';

import { loadDetail, recompressDocument, useDocuments } from '../stores/documents.ts';
import { wasCancelled } from '../stores/library.ts';
import { documentTask, useTasks } from '../stores/tasks.ts';
import { setTab, useUi, type Tab } from '../stores/ui.ts';
import { budgetLabel } from '../lib/budget-label.ts';
import { keptBudget } from '../lib/read-kind.ts';
import { formatBytes, formatPercent, saving } from '../lib/format.ts';
import { methodLabel } from '../lib/method-label.ts';
import { useImportPicker } from '../hooks/use-import-picker.tsx';
import { ChatPane } from './ChatPane.tsx';
import { DocumentPane } from './DocumentPane.tsx';
import { FailureAction } from './FailedImports.tsx';
import { OcrChoiceNotice } from './OcrChoice.tsx';
import { InspectorPane } from './InspectorPane.tsx';
import { TaskProgress } from './Progress.tsx';
import { StatusBadge } from './StatusBadge.tsx';

const TABS: { id: Tab; label: string }[] = [
  { id: 'chat', label: 'Chat' },
  { id: 'document', label: 'Document' },
  { id: 'inspector', label: 'Inspector' },
];

function Tabs({ tab }: { tab: Tab }) {
  const refs = useRef<Record<string, HTMLButtonElement | null>>({});
  const onKey = (e: KeyboardEvent) => {
    const i = TABS.findIndex((t) => t.id === tab);
    const j =
      e.key === 'ArrowRight'
        ? i + 1
        : e.key === 'ArrowLeft'
          ? i - 1
          : e.key === 'Home'
            ? 0
            : e.key === 'End'
              ? TABS.length - 1
              : -99;
    if (j === -99) return;
    e.preventDefault();
    const next = TABS[(j + TABS.length) % TABS.length];
    setTab(next.id);
    refs.current[next.id]?.focus();
  };
  return (
    <div className="tabs" role="tablist" aria-label="Views of the document" onKeyDown={onKey}>
      {TABS.map((t) => (
        <button
          key={t.id}
          ref={(el) => {
            refs.current[t.id] = el;
          }}
          type="button"
          role="tab"
          id={`tab-${t.id}`}
          aria-selected={tab === t.id}
          aria-controls={`panel-${t.id}`}
          tabIndex={tab === t.id ? 0 : -1}
          onClick={() => setTab(t.id)}
        >
          {t.label}
        </button>
      ))}
    </div>
  );
}

function EmptyLibrary() {
  const picker = useImportPicker();
  return (
    <div className="empty-state">
      <h1>Chat with your documents, on your machine</h1>
      <p>
        Import a PDF, Word, Markdown or text file, or a scan or photo of a page (read by OCR). Folio reads it into the
        local model once, compresses the model’s memory of it with Ada-SnapKV, and keeps that cache so every later
        question starts at once.
      </p>
      <button type="button" className="button primary" onClick={picker.open}>
        Import a document…
      </button>
      {picker.input}
      <p className="muted small">or drop files anywhere in this window</p>
    </div>
  );
}

export function MainPane() {
  const documentId = useUi((s) => s.documentId);
  const tab = useUi((s) => s.tab);
  const doc = useDocuments((s) => (documentId ? s.byId[documentId] : undefined));
  const task = useTasks((s) => (documentId ? documentTask(s, documentId) : undefined));
  const hasDetail = useDocuments((s) => !!(documentId && s.details[documentId]));
  useEffect(() => {
    if (documentId && tab !== 'chat' && !hasDetail) void loadDetail(documentId);
  }, [documentId, tab, hasDetail]);
  if (!documentId || !doc) return <EmptyLibrary />;
  const saved = saving(doc.kvBytesFull, doc.kvBytesKept);
  const kept = keptBudget(doc);
  return (
    <div className="main-pane">
      <header className="doc-header">
        <div className="doc-header-title">
          <h1>{doc.title}</h1>
          <div className="doc-header-meta">
            <StatusBadge doc={doc} />
            <span className="doc-header-file" title="The imported file">
              {doc.fileName}
            </span>
            {doc.compression && (
              <span title={kept?.why ?? undefined} data-testid="doc-budget">
                {methodLabel(doc.compression.method)}
                {doc.compression.method !== 'full' && ` · ${kept ? kept.text : budgetLabel(doc.compression.budget)}`}
                {kept?.why && <span className="muted"> (not the settings’ {budgetLabel(doc.compression.budget)})</span>}
              </span>
            )}
            {saved && (
              <span title="Memory of the model's cache of this document">
                cache {formatBytes(doc.kvBytesKept)} of {formatBytes(doc.kvBytesFull)}: saves{' '}
                {formatPercent(saved.fraction)}
              </span>
            )}
            {doc.status === 'stale' && (
              // The pages the last read took in, read again: a range stays a range.
              <button
                type="button"
                className="link-button"
                onClick={() => void recompressDocument(doc.id, doc.readPages ?? undefined)}
              >
                Compress now
              </button>
            )}
            {/* Only what can help a failure: compress again, read the file again, its password. */}
            <FailureAction doc={doc} />
          </div>
        </div>
        <Tabs tab={tab} />
      </header>
      {doc.status === 'failed' && doc.error && (
        <div className={wasCancelled(doc) ? 'banner' : 'banner error'} role={wasCancelled(doc) ? 'status' : 'alert'}>
          {doc.error}
        </div>
      )}
      {doc.ocrChoice ? (
        <div className="doc-header-task">
          <OcrChoiceNotice doc={doc} />
        </div>
      ) : (
        task && (
          <div className="doc-header-task">
            <TaskProgress task={task} />
          </div>
        )
      )}
      <div className="tab-panel" role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`}>
        {tab === 'chat' && <ChatPane documentId={documentId} />}
        {tab === 'document' && <DocumentPane documentId={documentId} />}
        {tab === 'inspector' && <InspectorPane documentId={documentId} />}
      </div>
    </div>
  );
}
