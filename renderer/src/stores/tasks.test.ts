import { describe, expect, it, vi } from 'vitest';

import { setApi } from '../api/client.ts';
import { createFakeApi, doc, rebasedDetail } from '../test/fake-api.ts';
import {
  cancelTask,
  documentTask,
  LINGER_MS,
  onTaskDone,
  onTaskProgress,
  registerTask,
  runningTasks,
  useTasks,
} from './tasks.ts';
import { useUi } from './ui.ts';

describe('tasks', () => {
  it('follow progress events by id, through phases, and finish', () => {
    vi.useFakeTimers();
    onTaskProgress({
      taskId: 't1',
      kind: 'import',
      documentId: 'd1',
      done: 0,
      total: 1,
      etaMs: null,
      message: 'reading',
    });
    registerTask('t1', 'import', 'd1', 'lily.txt'); // the call's answer may come after the first event
    onTaskProgress({
      taskId: 't1',
      kind: 'prefill',
      documentId: 'd1',
      done: 200,
      total: 400,
      etaMs: 1500,
      message: 'reading 400 tokens',
    });
    let t = useTasks.getState().byId.t1;
    expect(t).toMatchObject({
      kind: 'import',
      phase: 'prefill',
      label: 'lily.txt',
      done: 200,
      total: 400,
      etaMs: 1500,
    });
    expect(documentTask(useTasks.getState(), 'd1')?.taskId).toBe('t1');
    onTaskDone({ taskId: 't1', kind: 'import', documentId: 'd1', ok: true, cancelled: false, error: null });
    t = useTasks.getState().byId.t1;
    expect(t.finished).toEqual({ ok: true, cancelled: false, error: null });
    expect(runningTasks(useTasks.getState())).toEqual([]);
    vi.advanceTimersByTime(LINGER_MS + 1);
    expect(useTasks.getState().byId.t1).toBeUndefined();
  });

  it('keeps comparisons out of a document’s header task unless asked for', () => {
    registerTask('c', 'compare', 'd1');
    expect(documentTask(useTasks.getState(), 'd1')).toBeUndefined();
    expect(documentTask(useTasks.getState(), 'd1', 'compare')?.taskId).toBe('c');
  });

  it('a document read with re-based positions is not "ask away": the notice says what it costs and the way out', () => {
    registerTask('t4', 'import', 'long', 'gpl3.pdf');
    const done = { kind: 'import', ok: true, cancelled: false, error: null } as const;
    onTaskDone({ ...done, taskId: 't4', documentId: 'long' }, rebasedDetail({ id: 'long' }));
    registerTask('t5', 'import', 'short', 'lily.txt');
    onTaskDone({ ...done, taskId: 't5', documentId: 'short' }, doc({ id: 'short' }));
    expect(useUi.getState().notices.map((n) => [n.kind, n.text])).toEqual([
      [
        'info',
        "gpl3.pdf is longer than the model's context: it was read with re-based positions, so answers are less accurate. The Document tab offers the pages that fit.",
      ],
      ['success', 'lily.txt is read and compressed: ask away'],
    ]);
  });

  it('a failed task without a document becomes a notice', () => {
    registerTask('t2', 'download', null, 'model.gguf');
    onTaskDone({ taskId: 't2', kind: 'download', documentId: null, ok: false, cancelled: false, error: 'disk full' });
    expect(useUi.getState().notices.map((n) => n.text)).toEqual(['Downloading model.gguf failed: disk full']);
  });

  it('cancel calls tasks.cancel and marks the task', async () => {
    const api = createFakeApi();
    setApi(api);
    registerTask('t3', 'download', null);
    await cancelTask('t3');
    expect(api.callsOf('tasks.cancel')).toEqual([{ taskId: 't3' }]);
    expect(useTasks.getState().byId.t3.cancelling).toBe(true);
  });
});
