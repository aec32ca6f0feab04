// A range of pages, first to last, chosen with two lists: the pages a range may start at, and for the first page
// chosen, those it may end at. The read note offers a range that fits the context with it (ReadNote.tsx), the
// import of a long scan a range to read by OCR (OcrChoice.tsx).
import { useId, useState, type ReactNode } from 'react';

/** "page 3", "pages 3 to 9". */
export const pageRangeText = ([a, b]: readonly [number, number]) => (a === b ? `page ${a}` : `pages ${a} to ${b}`);

/**
 * The range chosen: `starts` maps each page a range may start at to the last page it may reach; `pages` lists the
 * pages in order. By default the first start, to `defaultEnd(from)` (else as far as it may reach). A choice the
 * pages no longer offer (they changed) falls back to the default.
 */
export function usePageRange(
  starts: ReadonlyMap<number, number>,
  pages: readonly number[],
  defaultEnd?: (from: number) => number,
) {
  const [chosenFrom, setFrom] = useState<number | null>(null);
  // null: the default end for the chosen first page
  const [chosenTo, setTo] = useState<number | null>(null);
  const from = chosenFrom !== null && starts.has(chosenFrom) ? chosenFrom : (starts.keys().next().value ?? 1);
  const last = starts.get(from) ?? from;
  const ends = pages.filter((p) => p >= from && p <= last);
  const to = chosenTo !== null && ends.includes(chosenTo) ? chosenTo : (defaultEnd?.(from) ?? last);
  return {
    range: [from, to] as [number, number],
    starts: [...starts.keys()],
    ends,
    setFrom: (p: number) => {
      setFrom(p);
      setTo(null);
    },
    setTo,
  };
}

/** The two lists of a usePageRange, and what acts on the range (`children`, after them). */
export function PageRangeFields({
  legend,
  range,
  children,
}: {
  legend: string;
  range: ReturnType<typeof usePageRange>;
  children?: ReactNode;
}) {
  const id = useId();
  const [from, to] = range.range;
  return (
    <fieldset className="page-range">
      <legend className="sr-only">{legend}</legend>
      <label htmlFor={`${id}-from`}>From page</label>
      <select id={`${id}-from`} value={from} onChange={(e) => range.setFrom(Number(e.target.value))}>
        {range.starts.map((p) => (
          <option key={p} value={p}>
            {p}
          </option>
        ))}
      </select>
      <label htmlFor={`${id}-to`}>to page</label>
      <select id={`${id}-to`} value={to} onChange={(e) => range.setTo(Number(e.target.value))}>
        {range.ends.map((p) => (
          <option key={p} value={p}>
            {p}
          </option>
        ))}
      </select>
      {children}
    </fieldset>
  );
}
