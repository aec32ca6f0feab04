import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';

import { setApi } from '../api/client.ts';
import { createFakeApi } from '../test/fake-api.ts';
import { onTaskProgress, registerTask, useTasks } from '../stores/tasks.ts';
import { amountText, progressText, ProgressBar, TaskProgress } from './Progress.tsx';

describe('progress and time left', () => {
  it('says tokens done of total, percent and the ETA from TaskProgress.etaMs', () => {
    expect(progressText({ phase: 'prefill', done: 1203, total: 2400, etaMs: 12_500 })).toBe(
      '1,203 of 2,400 tokens · 50% · 13 s left',
    );
    expect(progressText({ phase: 'prefill', done: 10, total: 2400, etaMs: null })).toBe(
      '10 of 2,400 tokens · 0% · estimating time left…',
    );
    expect(progressText({ phase: 'download', done: 5 * 2 ** 20, total: 20 * 2 ** 20, etaMs: 65_000 })).toBe(
      '5.0 MiB of 20.0 MiB · 25% · 1 min 5 s left',
    );
    expect(progressText({ phase: 'save', done: 1, total: 1, etaMs: 0 })).toBe('100%');
    expect(amountText('load-model', 0, 1)).toBe('');
  });

  it('renders an accessible progress bar with a cancel button that cancels the task', async () => {
    const api = createFakeApi();
    setApi(api);
    registerTask('t1', 'import', 'd1', 'lily.txt');
    onTaskProgress({
      taskId: 't1',
      kind: 'prefill',
      documentId: 'd1',
      done: 100,
      total: 400,
      etaMs: 3000,
      message: 'reading',
    });
    render(<TaskProgress task={useTasks.getState().byId.t1} />);
    const bar = screen.getByRole('progressbar', { name: 'Reading into the model lily.txt' });
    expect(bar.getAttribute('aria-valuenow')).toBe('25');
    expect(bar.getAttribute('aria-valuetext')).toBe('100 of 400 tokens · 25% · 3 s left');
    expect(screen.getByText('100 of 400 tokens · 25% · 3 s left')).toBeTruthy();
    await userEvent.click(screen.getByRole('button', { name: 'Cancel: Reading into the model lily.txt' }));
    expect(api.callsOf('tasks.cancel')).toEqual([{ taskId: 't1' }]);
  });

  it('is indeterminate until a total is known', () => {
    render(<ProgressBar value={0} label="Loading" indeterminate />);
    const bar = screen.getByRole('progressbar', { name: 'Loading' });
    expect(bar.getAttribute('aria-valuenow')).toBeNull();
    expect(bar.getAttribute('aria-valuetext')).toBe('working');
  });
});
