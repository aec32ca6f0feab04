// A row of mutually exclusive options: native radio buttons that look like segmented buttons. Being radio
// inputs, they get the keyboard behaviour of any radio group from the browser: Tab reaches the checked
// option, arrow keys move to (and choose) the next enabled one.
import { useId } from 'react';

export interface SegmentOption<T extends string> {
  value: T;
  label: string;
  disabled?: boolean;
  title?: string;
}

export function Segmented<T extends string>({
  label,
  value,
  options,
  onChange,
  name,
}: {
  label: string;
  value: T;
  options: SegmentOption<T>[];
  onChange: (v: T) => void;
  name?: string;
}) {
  // The radios' group name: unique on the page, so two groups never merge.
  const group = useId();
  return (
    <div className="segmented" role="radiogroup" aria-label={label} data-name={name}>
      {options.map((o) => (
        <label key={o.value} className="segment">
          <input
            type="radio"
            name={group}
            value={o.value}
            checked={o.value === value}
            disabled={o.disabled}
            title={o.title}
            onChange={() => onChange(o.value)}
          />
          {o.label}
        </label>
      ))}
    </div>
  );
}
