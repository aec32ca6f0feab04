// Pieces the eval suites' text tables share, so that every table prints a budget and a method column alike.

/** A budget as the tables print it: a ratio with two decimals, or tokens per head. */
export const fmtBudget = (b: number) => (b <= 1 ? b.toFixed(2) : `${b} tok`);

/** The width of a method column: its longest name (the method table makes names up to ~20 characters). */
export const methodWidth = (names: readonly string[]) => Math.max('method'.length, ...names.map((n) => n.length));

/** Rows of cells as aligned text lines: the first column left-aligned, the others right-aligned. */
export function alignColumns(rows: string[][]): string {
  const w = rows[0].map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  return rows.map((r) => r.map((cell, c) => (c === 0 ? cell.padEnd(w[c]) : cell.padStart(w[c]))).join('  ')).join('\n');
}
