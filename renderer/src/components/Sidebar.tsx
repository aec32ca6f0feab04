// The left sidebar: the library (documents with their status, size and memory saved; import; delete), the
// chats of the selected document, the tasks that are running, and the engine's status.
import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';

import type { ChatSummary, SetEstimate } from '../../../electron/api/contract.ts';
import { api } from '../api/client.ts';
import { chatOver, createChat, deleteChat, EMPTY, loadChats, useChats } from '../stores/chats.ts';
import { deleteDocument, useDocuments } from '../stores/documents.ts';
import { useEngine } from '../stores/engine.ts';
import { useModels } from '../stores/models.ts';
import { useSettings } from '../stores/settings.ts';
import { documentTask, runningTasks, useTasks } from '../stores/tasks.ts';
import { askConfirm, go, selectChat, selectDocument, setHelp, useUi } from '../stores/ui.ts';
import { budgetShortLabel } from '../lib/budget-label.ts';
import { readKind } from '../lib/read-kind.ts';
import { formatBytes, formatCount, formatPercent, saving } from '../lib/format.ts';
import { methodLabel } from '../lib/method-label.ts';
import { useImportPicker } from '../hooks/use-import-picker.tsx';
import { clearPicked, renameDocument, togglePicked, useLibrary, wasCancelled, workingIds } from '../stores/library.ts';
import { ChatSearch } from './ChatSearch.tsx';
import { FailedImports } from './FailedImports.tsx';
import { OcrChoiceNotice } from './OcrChoice.tsx';
import { DuplicateDialog, PasswordDialog } from './LibraryDialogs.tsx';
import { TaskProgress } from './Progress.tsx';
import { RenameForm } from './RenameForm.tsx';
import { StatusBadge } from './StatusBadge.tsx';

function DocumentRow({ id, selected }: { id: string; selected: boolean }) {
  const d = useDocuments((s) => s.byId[id]);
  const task = useTasks((s) => documentTask(s, id));
  const picked = useLibrary((s) => s.picked.includes(id));
  const [renaming, setRenaming] = useState(false);
  if (!d) return null;
  const saved = saving(d.kvBytesFull, d.kvBytesKept);
  const askDelete = () =>
    askConfirm({
      title: `Delete “${d.title}”?`,
      body: 'The document, its compressed cache and all its chats are removed from the library. The original file is not touched.',
      confirmLabel: 'Delete',
      danger: true,
      onConfirm: () => void deleteDocument(id),
    });
  return (
    <li
      className={`doc-item${selected ? ' selected' : ''}${picked ? ' picked' : ''}`}
      data-testid="document"
      data-status={d.status}
    >
      <button
        type="button"
        className="doc-select"
        aria-current={selected ? 'true' : undefined}
        onClick={() => selectDocument(id)}
        title={`${d.title} (${d.fileName})`}
      >
        <span className="doc-title">{d.title}</span>
        {d.fileName !== d.title && <span className="doc-file">{d.fileName}</span>}
        <span className="doc-meta">
          {d.pages > 0 && `${d.pages} ${d.pages === 1 ? 'page' : 'pages'} · `}
          {d.tokens > 0 ? `${formatCount(d.tokens)} tokens` : d.kind.toUpperCase()}
        </span>
        <span className="doc-meta">
          <StatusBadge doc={d} />
          {d.compression && d.status !== 'failed' && (
            <span>
              {' '}
              {methodLabel(d.compression.method)}
              {d.compression.method !== 'full' && ` · ${budgetShortLabel(d.compression.budget)}`}
            </span>
          )}
        </span>
        {saved && d.status !== 'failed' && (
          <span className="doc-meta saved">
            saves {formatPercent(saved.fraction)} of the cache ({formatBytes(d.kvBytesKept)} kept)
          </span>
        )}
        {d.status !== 'failed' && readKind(d) === 'rebased' && (
          <span className="doc-note warning" data-testid="doc-long-read">
            ⚠ Longer than the context: read with re-based positions, lower quality
          </span>
        )}
        {d.status !== 'failed' && readKind(d) === 'packed' && (
          <span className="doc-note">Packed positions: more room to talk, citations by shared words</span>
        )}
        {d.status === 'stale' && (
          <span className="doc-note">Compressed for another model or settings; rebuilt when you next ask.</span>
        )}
        {d.status === 'failed' && d.error && (
          <span className={wasCancelled(d) ? 'doc-meta' : 'doc-error'}>{d.error}</span>
        )}
      </button>
      {renaming && (
        <div className="doc-rename">
          <RenameForm
            id={`rename-${id}`}
            label="Document title"
            initial={d.title}
            onSave={(title) => void renameDocument(id, title)}
            onClose={() => setRenaming(false)}
          />
        </div>
      )}
      {(d.status === 'ready' || d.status === 'stale') && (
        <label className="doc-pick" title="Pick for a chat over several documents">
          <input
            type="checkbox"
            checked={picked}
            onChange={() => togglePicked(id)}
            aria-label={`Pick ${d.title} for a chat over several documents`}
          />
        </label>
      )}
      <button
        type="button"
        className="icon-button doc-rename-button"
        aria-label={`Rename ${d.title}`}
        title="Rename"
        onClick={() => setRenaming(true)}
      >
        ✎
      </button>
      <button
        type="button"
        className="icon-button doc-delete"
        aria-label={`Delete ${d.title}`}
        title="Delete"
        onClick={askDelete}
      >
        <TrashIcon />
      </button>
      {/* Waiting before a long OCR: the choice, with its own cancel, in place of a bar that would not move. */}
      {d.ocrChoice ? (
        <div className="doc-task">
          <OcrChoiceNotice doc={d} />
        </div>
      ) : (
        task && (
          <div className="doc-task">
            <TaskProgress task={task} compact />
          </div>
        )
      )}
    </li>
  );
}

/**
 * The documents picked for a chat over a set: what they take (the core's SetEstimate: their caches' memory, their
 * positions against the model's context, and so whether they keep their own positions or are packed), how many
 * more like them fit, and the chat over them.
 */
function PickedBar() {
  // A picked document deleted meanwhile is no longer picked.
  const all = useLibrary((s) => s.picked);
  const picked = useDocuments(useShallow((s) => all.filter((id) => s.byId[id])));
  // The estimate follows the picks and their reads (a pick read again has another cache): "id:kept bytes" each.
  const reads = useDocuments((s) => picked.map((id) => `${id}:${s.byId[id]?.kvBytesKept ?? ''}`).join(','));
  const [estimate, setEstimate] = useState<SetEstimate | null>(null);
  useEffect(() => {
    let live = true;
    const documentIds = reads ? reads.split(',').map((r) => r.slice(0, r.lastIndexOf(':'))) : [];
    if (documentIds.length === 0) setEstimate(null);
    else
      api()
        .call('documents.setEstimate', { documentIds })
        .then((e) => live && setEstimate(e))
        .catch(() => live && setEstimate(null));
    return () => {
      live = false;
    };
  }, [reads]);
  if (picked.length === 0) return null;
  const start = async () => {
    if (await chatOver(picked)) clearPicked();
  };
  const more = estimate && moreFit(estimate);
  return (
    <section className="picked-bar small" aria-label="Documents picked for one chat" data-testid="picked-bar">
      <span>
        {picked.length} picked
        {estimate && (
          <>
            {' '}
            · caches {formatBytes(estimate.keptBytes)} · about {formatCount(estimate.positions)} of{' '}
            {formatCount(estimate.contextTokens)} positions:{' '}
            {estimate.placement === 'own' ? 'at their own positions' : 'packed to fit (answers cite by shared words)'}
            {more && ` · ${more}`}
          </>
        )}
      </span>
      <span className="picked-actions">
        <button
          type="button"
          className="button small primary"
          disabled={picked.length < 2}
          title={picked.length < 2 ? 'Pick at least two documents' : 'One chat that reads all of them'}
          onClick={() => void start()}
        >
          Chat over {picked.length > 1 ? `these ${picked.length}` : 'several'}
        </button>
        <button type="button" className="button small" onClick={clearPicked}>
          Clear
        </button>
      </span>
    </section>
  );
}

/** How many more documents like the picked ones fit: by positions where they keep their own, and by memory. */
function moreFit(e: SetEstimate): string | null {
  const memory = e.moreByMemory === null ? null : `memory for ${formatCount(e.moreByMemory)} more`;
  if (e.placement !== 'own') return memory;
  const positions = `room for ${formatCount(e.moreByPositions)} more like these`;
  return memory && e.moreByMemory! < e.moreByPositions ? `${positions}, ${memory}` : positions;
}

/** A chat with something said in it. */
const said = (c: ChatSummary | undefined) => !!c && c.messageCount > 0;

function ChatList({ documentId }: { documentId: string }) {
  const ids = useChats((s) => s.byDoc[documentId] ?? EMPTY);
  const chatId = useUi((s) => s.chatId);
  // The core lists the document's empty chat (the one "New chat" reuses) as its most recent: listed, and
  // opened with the document, only while it is the open one, so that leaving a new chat unused leaves no
  // "New chat (0)" behind and the document opens on a conversation.
  const chats = useChats(
    useShallow((s) =>
      ids.map((id) => s.chats[id]).filter((c): c is ChatSummary => !!c && (said(c) || c.id === chatId)),
    ),
  );
  const firstSaid = useChats((s) => ids.find((id) => said(s.chats[id])) ?? null);
  useEffect(() => {
    void loadChats(documentId);
  }, [documentId]);
  // The most recent conversation opens with its document (the empty chat when there is none), unless the chat
  // the user was in (remembered over a reload, ui.ts) is one of its chats.
  useEffect(() => {
    if (ids.length && (!chatId || !ids.includes(chatId))) useUi.setState({ chatId: firstSaid ?? ids[0] });
  }, [chatId, ids, firstSaid]);
  return (
    <section className="chat-list" aria-labelledby="chats-heading">
      <div className="section-head">
        <h2 id="chats-heading">Chats</h2>
        <button
          type="button"
          className="button small"
          onClick={() => void createChat(documentId)}
          title="New chat (Ctrl/⌘ + Shift + O)"
        >
          New chat
        </button>
      </div>
      <ChatSearch documentId={documentId} />
      {chats.length === 0 ? (
        <p className="muted small">No chats yet: ask a question to start one.</p>
      ) : (
        <ul>
          {chats.map((c) => (
            <li key={c.id} className={c.id === chatId ? 'selected' : ''}>
              <button
                type="button"
                className="chat-select"
                aria-current={c.id === chatId ? 'true' : undefined}
                onClick={() => selectChat(c.id)}
              >
                <span className="chat-title">{c.title}</span>
                {c.documentIds.length > 1 && (
                  <span className="chat-set muted" title="A chat over several documents">
                    {c.documentIds.length} docs
                  </span>
                )}
                <span className="chat-count">{c.messageCount}</span>
              </button>
              <button
                type="button"
                className="icon-button"
                aria-label={`Delete chat ${c.title}`}
                title="Delete chat"
                onClick={() =>
                  askConfirm({
                    title: `Delete “${c.title}”?`,
                    body: 'Its messages are removed. The document stays.',
                    confirmLabel: 'Delete chat',
                    danger: true,
                    onConfirm: () => void deleteChat(c.id),
                  })
                }
              >
                <TrashIcon />
              </button>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function OtherTasks() {
  // Tasks not shown on a document row: model loads, downloads.
  const tasks = useTasks(useShallow((s) => runningTasks(s).filter((t) => !t.documentId)));
  if (!tasks.length) return null;
  return (
    <section className="task-list" aria-label="Running tasks">
      {tasks.map((t) => (
        <TaskProgress key={t.taskId} task={t} compact />
      ))}
    </section>
  );
}

export function EngineBadge() {
  const status = useEngine((s) => s.status);
  const modelId = useSettings((s) => s.settings?.modelId ?? null);
  const model = useModels((s) => s.list.find((m) => m.id === modelId));
  const state = status?.state ?? 'stopped';
  // A crashed engine either comes back by itself or waits for Retry (the banner has it, with the error).
  const crashed = status?.willRestart ? 'stopped unexpectedly, restarting' : 'stopped unexpectedly, waiting for Retry';
  const text = { stopped: 'idle', starting: 'starting', ready: 'ready', busy: 'working', crashed }[state];
  return (
    <div className="engine-badge" role="status" aria-label={`Engine ${text}`}>
      <span className={`dot engine-${state}`} aria-hidden="true" />
      <span className="engine-text">
        <span>{model ? model.name : modelId ? 'model' : 'No model chosen'}</span>
        <span
          className="muted small"
          title={(state === 'crashed' ? status?.message : status?.backendReason) || undefined}
        >
          Engine {text}
          {status?.backend ? ` · ${status.backend}` : ''}
        </span>
      </span>
    </div>
  );
}

export function Sidebar() {
  const order = useDocuments((s) => s.order);
  // Failed imports are listed apart (FailedImports).
  const working = useDocuments(useShallow(workingIds));
  const loaded = useDocuments((s) => s.loaded);
  const { documentId, route } = useUi(useShallow((s) => ({ documentId: s.documentId, route: s.route })));
  const hasModel = useSettings((s) => !!s.settings?.modelId);
  const picker = useImportPicker();
  return (
    <aside className="sidebar" aria-label="Library">
      <div className="brand">
        <span className="logo" aria-hidden="true">
          F
        </span>
        <span className="brand-name">Folio</span>
      </div>
      <section className="library" aria-labelledby="library-heading">
        <div className="section-head">
          <h2 id="library-heading">Library</h2>
          <button type="button" className="button small primary" onClick={picker.open}>
            Import…
          </button>
          {picker.input}
        </div>
        <PickedBar />
        {!hasModel && loaded && (
          <p className="callout small">
            Choose a model first.{' '}
            <button type="button" className="link-button" onClick={() => go('models')}>
              Models
            </button>
          </p>
        )}
        {loaded && order.length === 0 ? (
          <p className="muted small">
            No documents yet. Import a PDF, Word, Markdown or text file or an image of a page, or drop one anywhere in
            the window.
          </p>
        ) : (
          <ul className="doc-list">
            {working.map((id) => (
              <DocumentRow key={id} id={id} selected={id === documentId && route === 'main'} />
            ))}
          </ul>
        )}
        <FailedImports />
      </section>
      {documentId && <ChatList documentId={documentId} />}
      <DuplicateDialog />
      <PasswordDialog />
      <div className="sidebar-foot">
        <OtherTasks />
        <EngineBadge />
        <nav className="foot-nav" aria-label="App">
          <button
            type="button"
            className={`nav-button${route !== 'main' ? ' active' : ''}`}
            aria-current={route !== 'main' ? 'page' : undefined}
            onClick={() => go(route === 'main' ? 'models' : 'main')}
            title="Models and settings (Ctrl/⌘ + ,)"
          >
            {route === 'main' ? 'Models & settings' : '← Back to library'}
          </button>
          <button
            type="button"
            className="icon-button"
            aria-label="Keyboard shortcuts"
            title="Keyboard shortcuts (Ctrl/⌘ + /)"
            onClick={() => setHelp(true)}
          >
            ?
          </button>
        </nav>
      </div>
    </aside>
  );
}

export function TrashIcon() {
  return (
    <svg width="14" height="14" viewBox="0 0 16 16" aria-hidden="true" focusable="false">
      <path d="M6 2h4l.5 1H13v1.5H3V3h2.5L6 2zm-1.5 4h7l-.6 8H5.1l-.6-8z" fill="currentColor" />
    </svg>
  );
}
