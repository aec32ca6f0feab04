// A compression method picker: every method of the table, grouped by scorer.
import type { CompressionMethod } from '../../../electron/shared/kv/methods.ts';
import { METHOD_GROUPS } from '../lib/method-label.ts';

export function MethodSelect({
  id,
  value,
  onChange,
  describedBy,
}: {
  id: string;
  value: CompressionMethod;
  onChange: (method: CompressionMethod) => void;
  describedBy?: string;
}) {
  return (
    <select
      id={id}
      value={value}
      onChange={(e) => onChange(e.target.value as CompressionMethod)}
      aria-describedby={describedBy}
    >
      {METHOD_GROUPS.map((g) => (
        <optgroup key={g.label} label={g.label}>
          {g.choices.map((m) => (
            <option key={m.value} value={m.value}>
              {m.label}
            </option>
          ))}
        </optgroup>
      ))}
    </select>
  );
}
