// Progress of long operations: a bar with the numbers (tokens or bytes done of total, ETA from the core's
// estimate) and a cancel button.
import { cancelTask, KIND_LABEL, type TaskEntry, type TaskKind } from '../stores/tasks.ts';
import { formatBytes, formatCount, formatEta, fraction } from '../lib/format.ts';

export function ProgressBar({
  value,
  label,
  valueText,
  indeterminate,
}: {
  value: number;
  label: string;
  valueText?: string;
  indeterminate?: boolean;
}) {
  const pct = Math.round(value * 100);
  return (
    <div
      className={`progress${indeterminate ? ' indeterminate' : ''}`}
      role="progressbar"
      aria-label={label}
      aria-valuemin={0}
      aria-valuemax={100}
      aria-valuenow={indeterminate ? undefined : pct}
      aria-valuetext={valueText ?? (indeterminate ? 'working' : `${pct}%`)}
    >
      <span className="progress-fill" style={{ width: indeterminate ? undefined : `${pct}%` }} />
    </div>
  );
}

function unitOf(phase: TaskKind): 'tokens' | 'bytes' | 'pages' | null {
  if (phase === 'prefill' || phase === 'compare') return 'tokens';
  if (phase === 'download') return 'bytes';
  if (phase === 'import') return 'pages';
  return null;
}

/** "180 of 400 tokens", "12.0 MiB of 1.2 GiB", or nothing for one-step phases. */
export function amountText(phase: TaskKind, done: number, total: number): string {
  const unit = unitOf(phase);
  if (!unit || total <= 1) return '';
  if (unit === 'bytes') return `${formatBytes(done)} of ${formatBytes(total)}`;
  return `${formatCount(Math.round(done))} of ${formatCount(Math.round(total))} ${unit}`;
}

/** The line under a task's bar: amount, percent, time left. */
export function progressText(t: Pick<TaskEntry, 'phase' | 'done' | 'total' | 'etaMs'>): string {
  const f = fraction(t.done, t.total);
  const parts = [
    amountText(t.phase, t.done, t.total),
    t.total > 0 ? `${Math.round(f * 100)}%` : '',
    t.done >= t.total && t.total > 0 ? '' : formatEta(t.etaMs),
  ];
  return parts.filter(Boolean).join(' · ');
}

export function TaskProgress({ task, compact = false, title }: { task: TaskEntry; compact?: boolean; title?: string }) {
  const f = fraction(task.done, task.total);
  const heading = title ?? `${KIND_LABEL[task.phase]}${task.label ? ` ${task.label}` : ''}`;
  const text = progressText(task);
  const finished = task.finished;
  return (
    <div className={`task${compact ? ' compact' : ''}`} data-task-kind={task.kind} data-testid="task">
      <div className="task-head">
        <span className="task-title">{heading}</span>
        {!finished && (
          <button
            type="button"
            className="link-button"
            onClick={() => cancelTask(task.taskId)}
            disabled={task.cancelling}
            aria-label={`Cancel: ${heading}`}
          >
            {task.cancelling ? 'Cancelling…' : 'Cancel'}
          </button>
        )}
      </div>
      <ProgressBar
        value={finished?.ok ? 1 : f}
        label={heading}
        valueText={text || undefined}
        indeterminate={!finished && task.total <= 0}
      />
      <div className="task-detail">
        {finished
          ? finished.ok
            ? 'Done'
            : finished.cancelled
              ? 'Cancelled'
              : `Failed: ${finished.error ?? ''}`
          : text || task.message}
      </div>
    </div>
  );
}
