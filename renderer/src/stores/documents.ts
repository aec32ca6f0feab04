// The library: document summaries (kept current by documents.changed / documents.deleted events) and, for
// the documents the user opens, their detail (pages, compression statistics, retention passages).
import { DOCUMENT_EXTENSIONS } from '../../../electron/shared/document-extensions.ts';
import { create } from 'zustand';

import type { DocumentDetail, DocumentSummary } from '../../../electron/api/contract.ts';
import { api, errorCode, errorMessage } from '../api/client.ts';
import { fileToBase64 } from '../lib/base64.ts';
import { uploadDocument } from '../lib/upload.ts';
import { askDuplicate, duplicateOf } from './duplicate.ts';
import { registerTask } from './tasks.ts';
import { clearCitation, notify, selectDocument, useUi } from './ui.ts';

export interface DocumentsState {
  byId: Record<string, DocumentSummary>;
  /** Newest first. */
  order: string[];
  loaded: boolean;
  details: Record<string, DocumentDetail>;
  detailError: Record<string, string>;
}

const initial: DocumentsState = { byId: {}, order: [], loaded: false, details: {}, detailError: {} };
export const useDocuments = create<DocumentsState>()(() => ({ ...initial }));

export function resetDocuments(): void {
  useDocuments.setState({ ...initial }, true);
}

function ordered(byId: Record<string, DocumentSummary>): string[] {
  return Object.values(byId)
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || a.title.localeCompare(b.title))
    .map((d) => d.id);
}

export function setDocuments(list: DocumentSummary[]): void {
  const byId = Object.fromEntries(list.map((d) => [d.id, d]));
  useDocuments.setState((s) => ({
    byId,
    order: ordered(byId),
    loaded: true,
    details: Object.fromEntries(Object.entries(s.details).filter(([id]) => byId[id])),
  }));
}

/** A changed document: its summary is replaced; an open detail is fetched again once the work settles. */
export function upsertDocument(d: DocumentSummary): void {
  const prev = useDocuments.getState();
  const hadDetail = !!prev.details[d.id];
  useDocuments.setState((s) => {
    const byId = { ...s.byId, [d.id]: d };
    const detail = s.details[d.id];
    return {
      byId,
      order: s.byId[d.id] ? s.order : ordered(byId),
      details: detail ? { ...s.details, [d.id]: { ...detail, ...d } } : s.details,
    };
  });
  if (hadDetail && (d.status === 'ready' || d.status === 'failed' || d.status === 'stale')) void loadDetail(d.id);
  // A document read again: an answer's highlights were measured on the old cache, so they go.
  if (d.status === 'compressing' && useUi.getState().citation?.documentId === d.id) clearCitation();
}

export function removeDocument(documentId: string): void {
  useDocuments.setState((s) => {
    if (!s.byId[documentId]) return s;
    const byId = { ...s.byId };
    delete byId[documentId];
    const details = { ...s.details };
    delete details[documentId];
    return { byId, order: s.order.filter((id) => id !== documentId), details };
  });
  if (useUi.getState().documentId === documentId) selectDocument(useDocuments.getState().order[0] ?? null);
}

export async function loadDocuments(): Promise<void> {
  setDocuments(await api().call('documents.list', {}));
  const ui = useUi.getState();
  const { order } = useDocuments.getState();
  if (!ui.documentId || !order.includes(ui.documentId)) selectDocument(order[0] ?? null);
}

const inflight = new Map<string, Promise<void>>();
export function loadDetail(documentId: string): Promise<void> {
  const running = inflight.get(documentId);
  if (running) return running;
  const p = (async () => {
    try {
      const d = await api().call('documents.get', { documentId });
      useDocuments.setState((s) => {
        const detailError = { ...s.detailError };
        delete detailError[documentId];
        return {
          details: { ...s.details, [documentId]: d },
          byId: s.byId[documentId] ? { ...s.byId, [documentId]: stripDetail(d) } : s.byId,
          detailError,
        };
      });
    } catch (e) {
      useDocuments.setState((s) => ({ detailError: { ...s.detailError, [documentId]: errorMessage(e) } }));
    } finally {
      inflight.delete(documentId);
    }
  })();
  inflight.set(documentId, p);
  return p;
}

function stripDetail(d: DocumentDetail): DocumentSummary {
  const { pageList: _p, stats: _s, passages: _x, ...summary } = d;
  return summary;
}

export const ACCEPTED_EXTENSIONS = DOCUMENT_EXTENSIONS.map((e) => `.${e}`);

/**
 * Imports files picked or dropped by the user. In the desktop app: by path where the shell can tell it (the
 * file is read where it is), otherwise by content over IPC (base64). In a browser: uploaded to the web host
 * (raw bytes, streamed). Each import is a task.
 */
export async function importFiles(files: File[]): Promise<void> {
  for (const file of files) await importFile(file, false);
}

async function importFile(file: File, keepDuplicate: boolean): Promise<void> {
  const bridge = api();
  try {
    let r: { documentId: string; taskId: string };
    if (bridge.shell) {
      // The desktop shell records the dropped file as the user's choice; only then may it be imported by path.
      const path = (await bridge.shell.pathForFile(file)) ?? '';
      const params = path ? { path } : { fileName: file.name, dataBase64: await fileToBase64(file) };
      r = await bridge.call('documents.import', keepDuplicate ? { ...params, keepDuplicate } : params);
    } else {
      r = await uploadDocument(file, fetch, { keepDuplicate });
    }
    registerTask(r.taskId, 'import', r.documentId, file.name);
    selectDocument(r.documentId);
  } catch (e) {
    const code = errorCode(e);
    if (code === 'NO_MODEL')
      notify('Choose a model first: documents are compressed for the model that reads them.', 'error', {
        label: 'Models',
        route: 'models',
      });
    else if (!askAboutDuplicate(e, file.name, () => importFile(file, true)))
      notify(`${file.name} was not imported: ${errorMessage(e)}`);
  }
}

/** A refusal as a duplicate becomes the question "open the existing one, or keep both"; false for other errors. */
function askAboutDuplicate(e: unknown, fileName: string, keepBoth: () => Promise<void>): boolean {
  const existing = duplicateOf(e);
  if (!existing) return false;
  askDuplicate({ fileName, existingId: existing.documentId, existingTitle: existing.title, keepBoth });
  return true;
}

/** Imports by path (the desktop shell's own file dialog). */
export async function importPaths(paths: string[], keepDuplicate = false): Promise<void> {
  for (const path of paths) {
    const name = path.split(/[\\/]/).pop() ?? path;
    try {
      const r = await api().call('documents.import', keepDuplicate ? { path, keepDuplicate } : { path });
      registerTask(r.taskId, 'import', r.documentId, name);
      selectDocument(r.documentId);
    } catch (e) {
      if (!askAboutDuplicate(e, name, () => importPaths([path], true)))
        notify(`${path} was not imported: ${errorMessage(e)}`);
    }
  }
}

/** The desktop's native open dialog (documents), then an import of each chosen path. */
export async function openImportDialog(): Promise<boolean> {
  const shell = api().shell;
  if (!shell) return false;
  const paths = await shell.openFileDialog('document');
  if (paths.length) await importPaths(paths);
  return true;
}

export async function deleteDocument(documentId: string): Promise<void> {
  try {
    await api().call('documents.delete', { documentId });
    removeDocument(documentId);
  } catch (e) {
    notify(`The document was not deleted: ${errorMessage(e)}`);
  }
}

export async function recompressDocument(documentId: string, pages?: [number, number]): Promise<void> {
  try {
    const { taskId } = await api().call('documents.recompress', pages ? { documentId, pages } : { documentId });
    registerTask(taskId, 'compress', documentId, useDocuments.getState().byId[documentId]?.title ?? null);
  } catch (e) {
    notify(`Could not compress again: ${errorMessage(e)}`);
  }
}
