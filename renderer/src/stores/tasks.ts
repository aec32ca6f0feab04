// Long operations (import, prefill, compression, saving, model load, downloads, comparisons) keyed by task
// id, fed by task.progress / task.done events. A task's phase changes as it goes (an import reads the
// file, then prefills, then saves); `kind` is what it was started as.
import { create } from 'zustand';

import type { DocumentSummary, EventPayload, TaskProgress } from '../../../electron/api/contract.ts';
import { api, errorMessage } from '../api/client.ts';
import { readKind } from '../lib/read-kind.ts';
import { notify } from './ui.ts';

export type TaskKind = TaskProgress['kind'];

export interface TaskEntry {
  taskId: string;
  kind: TaskKind;
  phase: TaskKind;
  documentId: string | null;
  /** What the task works on, for people (a file name, a model). */
  label: string | null;
  done: number;
  total: number;
  etaMs: number | null;
  message: string;
  startedAt: number;
  finished: { ok: boolean; cancelled: boolean; error: string | null } | null;
  cancelling: boolean;
}

export interface TasksState {
  byId: Record<string, TaskEntry>;
}

export const useTasks = create<TasksState>()(() => ({ byId: {} }));

export const KIND_LABEL: Record<TaskKind, string> = {
  import: 'Importing',
  ocr: 'Recognising the text (OCR)',
  prefill: 'Reading into the model',
  compress: 'Compressing',
  save: 'Saving the compressed cache',
  'load-model': 'Loading the model',
  download: 'Downloading',
  compare: 'Comparing two methods',
};

/** What a finished task did, after its label ("lily.txt is read…"); kinds without one finish quietly (a
 * comparison shows its result where it was asked for). */
const SUCCESS_TEXT: Partial<Record<TaskKind, string>> = {
  import: 'is read and compressed: ask away',
  compress: 'is compressed again',
  download: 'is downloaded',
};

/** How long a finished task stays visible. */
export const LINGER_MS = 2500;

function blank(taskId: string, kind: TaskKind, documentId: string | null): TaskEntry {
  return {
    taskId,
    kind,
    phase: kind,
    documentId,
    label: null,
    done: 0,
    total: 0,
    etaMs: null,
    message: '',
    startedAt: Date.now(),
    finished: null,
    cancelling: false,
  };
}

/** Called with a started task's id (its events may already have come). */
export function registerTask(
  taskId: string,
  kind: TaskKind,
  documentId: string | null,
  label: string | null = null,
): void {
  useTasks.setState((s) => {
    const t = s.byId[taskId] ?? blank(taskId, kind, documentId);
    return {
      byId: { ...s.byId, [taskId]: { ...t, kind, label: label ?? t.label, documentId: documentId ?? t.documentId } },
    };
  });
}

export function onTaskProgress(p: EventPayload<'task.progress'>): void {
  useTasks.setState((s) => {
    const t = s.byId[p.taskId] ?? blank(p.taskId, p.kind, p.documentId);
    return {
      byId: {
        ...s.byId,
        [p.taskId]: {
          ...t,
          phase: p.kind,
          documentId: p.documentId ?? t.documentId,
          done: p.done,
          total: p.total,
          etaMs: p.etaMs,
          message: p.message,
        },
      },
    };
  });
}

/** A task finished; `doc`: its document as the library has it now (wire.ts), whose last read the notice names. */
export function onTaskDone(d: EventPayload<'task.done'>, doc?: DocumentSummary): void {
  const before = useTasks.getState().byId[d.taskId];
  useTasks.setState((s) => {
    const t = s.byId[d.taskId] ?? blank(d.taskId, d.kind, d.documentId);
    return {
      byId: {
        ...s.byId,
        [d.taskId]: { ...t, kind: d.kind, finished: { ok: d.ok, cancelled: d.cancelled, error: d.error } },
      },
    };
  });
  // A finished import, compression or download says so; a failed document task shows on the document
  // itself, anything else failed gets a notice.
  const success = d.ok && SUCCESS_TEXT[d.kind];
  const what = before?.label ?? (d.documentId ? 'The document' : 'It');
  // A document longer than the context was read with re-based positions: not "ask away", a warning.
  if (success && doc && readKind(doc) === 'rebased')
    notify(
      `${what} is longer than the model's context: it was read with re-based positions, so answers are less accurate. The Document tab offers the pages that fit.`,
      'info',
    );
  else if (success) notify(`${what} ${success}`, 'success');
  if (!d.ok && !d.cancelled && !d.documentId)
    notify(`${KIND_LABEL[d.kind]}${before?.label ? ` ${before.label}` : ''} failed: ${d.error ?? 'unknown error'}`);
  setTimeout(() => forgetTask(d.taskId), d.ok || d.cancelled ? LINGER_MS : LINGER_MS * 3);
}

export function forgetTask(taskId: string): void {
  useTasks.setState((s) => {
    if (!s.byId[taskId]) return s;
    const byId = { ...s.byId };
    delete byId[taskId];
    return { byId };
  });
}

export async function cancelTask(taskId: string): Promise<void> {
  useTasks.setState((s) =>
    s.byId[taskId] ? { byId: { ...s.byId, [taskId]: { ...s.byId[taskId], cancelling: true } } } : s,
  );
  try {
    await api().call('tasks.cancel', { taskId });
  } catch (e) {
    // It may have finished meanwhile; nothing to cancel then.
    if ((e as { code?: string }).code !== 'TASK_NOT_FOUND') notify(`Could not cancel: ${errorMessage(e)}`);
  }
}

/** Running (unfinished) tasks, oldest first. */
export function runningTasks(s: TasksState): TaskEntry[] {
  return Object.values(s.byId)
    .filter((t) => !t.finished)
    .sort((a, b) => a.startedAt - b.startedAt);
}

/** The running task of a document (the newest), if any: of one kind, or any but comparisons (the inspector shows those). */
export function documentTask(s: TasksState, documentId: string, kind?: TaskKind): TaskEntry | undefined {
  let found: TaskEntry | undefined;
  for (const t of Object.values(s.byId)) {
    if (t.documentId !== documentId || t.finished || (kind ? t.kind !== kind : t.kind === 'compare')) continue;
    if (!found || t.startedAt >= found.startedAt) found = t;
  }
  return found;
}
