// The inspector's layer x KV-head grid: which number each cell shows, the colour domain, the cell geometry
// (canvas pixels <-> cells) and the drawing itself. Everything but `drawHeatmap` is pure; `drawHeatmap`
// only needs the few canvas calls it makes, so tests hand it a recording context.
import type { CompressionStats } from '../../../electron/api/contract.ts';
import { colorTable } from './colormap.ts';
import { GLOSSARY } from './glossary.ts';

export type Metric = 'budget' | 'mass' | 'concentration';

/** The grid's numbers; their labels and explanations are the glossary's (lib/glossary.ts). */
export const METRICS: { id: Metric; label: string; unit: string; explain: string }[] = [
  { id: 'budget', label: GLOSSARY.budget.label, unit: 'kept tokens', explain: GLOSSARY.keptTokens.explain },
  { id: 'mass', label: GLOSSARY.retainedMass.label, unit: 'of attention mass', explain: GLOSSARY.retainedMass.explain },
  {
    id: 'concentration',
    label: GLOSSARY.concentration.label,
    unit: 'of tokens hold 90%',
    explain: GLOSSARY.concentration.explain,
  },
];

export interface Grid {
  rows: number; // layers
  cols: number; // KV heads
  /** Row-major values; NaN where the engine reported nothing. */
  values: Float64Array;
  /** Per row: a sliding-window layer (kept by its window, not scored), drawn hatched. */
  sliding: boolean[];
}

export function metricGrid(stats: CompressionStats, metric: Metric): Grid {
  const rows = stats.layers.length;
  const cols = rows ? Math.max(...stats.layers.map((l) => l.heads.length)) : 0;
  const values = new Float64Array(rows * cols).fill(NaN);
  const sliding = stats.layers.map((l) => l.slidingWindow > 0);
  stats.layers.forEach((layer, r) =>
    layer.heads.forEach((h, c) => {
      // A sliding layer's attention statistics are not measured (it is not scored): no value.
      if (metric !== 'budget' && sliding[r]) return;
      values[r * cols + c] = metric === 'budget' ? h.kept : metric === 'mass' ? h.retainedMass : h.concentration;
    }),
  );
  return { rows, cols, values, sliding };
}

/**
 * A set's document's share of each (layer, KV head) of the set's cache: its entries there over all the documents'
 * (contract SetShare), in [0, 1]; NaN where no document keeps any.
 */
export function shareGrid(shares: readonly { entries: number[][] }[], index: number): Grid {
  const rows = shares[0]?.entries.length ?? 0;
  const cols = rows ? Math.max(...shares[0].entries.map((l) => l.length)) : 0;
  const values = new Float64Array(rows * cols).fill(NaN);
  for (let r = 0; r < rows; r++)
    for (let c = 0; c < cols; c++) {
      const all = shares.reduce((n, s) => n + (s.entries[r]?.[c] ?? 0), 0);
      if (all > 0) values[r * cols + c] = (shares[index].entries[r]?.[c] ?? 0) / all;
    }
  return { rows, cols, values, sliding: new Array<boolean>(rows).fill(false) };
}

export type Domain = readonly [number, number];

/**
 * The colour domain shared by the grids shown together (a comparison uses one domain, so equal colours
 * mean equal values in both): the lowest and highest value shown, equal when every cell is (they all sit at
 * the top of the scale), NaN when there is none.
 */
export function metricDomain(grids: Grid[]): Domain {
  let lo = Infinity,
    hi = -Infinity;
  for (const g of grids)
    for (const v of g.values)
      if (Number.isFinite(v)) {
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
  return Number.isFinite(lo) ? [lo, hi] : [NaN, NaN];
}

/** The domain's ends as shown, or one phrase when there are not two: "every cell 39", "no values". */
export function domainEnds(metric: Metric, [lo, hi]: Domain): readonly [string, string] | string {
  if (!Number.isFinite(lo)) return 'no values';
  const [a, b] = [formatMetric(metric, lo), formatMetric(metric, hi)];
  return a === b ? `every cell ${a}` : [a, b];
}

/** The domain in words: "5 to 40", "every cell 39", "no values". */
export function formatDomain(metric: Metric, domain: Domain): string {
  const ends = domainEnds(metric, domain);
  return typeof ends === 'string' ? ends : `${ends[0]} to ${ends[1]}`;
}

/** Position of a value in the domain, in [0, 1]. */
export function normalize(v: number, [lo, hi]: Domain): number {
  if (!Number.isFinite(v)) return NaN;
  return hi > lo ? Math.min(1, Math.max(0, (v - lo) / (hi - lo))) : 1;
}

export function formatMetric(metric: Metric, v: number): string {
  if (!Number.isFinite(v)) return '–';
  if (metric === 'budget') return `${Math.round(v).toLocaleString('en-US')}`;
  return `${(v * 100).toFixed(v >= 0.995 || v < 0.1 ? 1 : 0)}%`;
}

// ---------------------------------------------------------------------------------------------------------
// Geometry (CSS pixels)

export interface Layout {
  rows: number;
  cols: number;
  /** Cell edge and the gap between cells. */
  cell: number;
  gap: number;
  /** Top-left corner of cell (0, 0); room for the labels is left and above. */
  x0: number;
  y0: number;
  width: number;
  height: number;
  /** Label every n-th row / column (all of them when cells are large). */
  labelEvery: number;
}

export interface LayoutOptions {
  maxCell?: number;
  minCell?: number;
  maxHeight?: number;
  gap?: number;
  labelLeft?: number;
  labelTop?: number;
  pad?: number;
}

export function computeLayout(rows: number, cols: number, availableWidth: number, o: LayoutOptions = {}): Layout {
  const { maxCell = 44, minCell = 4, maxHeight = 560, gap = 1, labelLeft = 34, labelTop = 20, pad = 2 } = o;
  const byWidth = (availableWidth - labelLeft - pad - (cols - 1) * gap) / Math.max(1, cols);
  const byHeight = (maxHeight - labelTop - pad - (rows - 1) * gap) / Math.max(1, rows);
  const cell = Math.max(minCell, Math.min(maxCell, Math.floor(Math.min(byWidth, byHeight))));
  const labelEvery = cell >= 14 ? 1 : cell >= 7 ? 4 : 8;
  return {
    rows,
    cols,
    cell,
    gap,
    x0: labelLeft,
    y0: labelTop,
    labelEvery,
    width: labelLeft + cols * cell + Math.max(0, cols - 1) * gap + pad,
    height: labelTop + rows * cell + Math.max(0, rows - 1) * gap + pad,
  };
}

export function cellRect(l: Layout, row: number, col: number): { x: number; y: number; w: number; h: number } {
  return { x: l.x0 + col * (l.cell + l.gap), y: l.y0 + row * (l.cell + l.gap), w: l.cell, h: l.cell };
}

export function cellCenter(l: Layout, row: number, col: number): { x: number; y: number } {
  const r = cellRect(l, row, col);
  return { x: r.x + r.w / 2, y: r.y + r.h / 2 };
}

/** The cell under a point (CSS pixels relative to the canvas), or null outside the grid. */
export function cellAt(l: Layout, x: number, y: number): { row: number; col: number } | null {
  if (x < l.x0 || y < l.y0) return null;
  const pitch = l.cell + l.gap;
  const col = Math.floor((x - l.x0) / pitch);
  const row = Math.floor((y - l.y0) / pitch);
  if (col >= l.cols || row >= l.rows) return null;
  // A point in the gap after a cell belongs to that cell: hovering never flickers between cells.
  return { row, col };
}

// ---------------------------------------------------------------------------------------------------------
// Drawing

/** The subset of CanvasRenderingContext2D the heatmap uses. */
export interface Ctx2D {
  setTransform(a: number, b: number, c: number, d: number, e: number, f: number): void;
  clearRect(x: number, y: number, w: number, h: number): void;
  fillRect(x: number, y: number, w: number, h: number): void;
  strokeRect(x: number, y: number, w: number, h: number): void;
  fillText(text: string, x: number, y: number): void;
  fillStyle: string | CanvasGradient | CanvasPattern;
  strokeStyle: string | CanvasGradient | CanvasPattern;
  lineWidth: number;
  font: string;
  textAlign: CanvasTextAlign;
  textBaseline: CanvasTextBaseline;
}

export interface DrawOptions {
  dpr?: number;
  selected?: { row: number; col: number } | null;
  hover?: { row: number; col: number } | null;
  labelColor?: string;
  missingColor?: string;
  font?: string;
}

const TABLE = colorTable(256);
/** The hatching over a sliding-window layer's cells: light lines, every HATCH_PITCH pixels. */
export const HATCH_STYLE = 'rgba(255, 255, 255, 0.6)';
const HATCH_PITCH = 4;

/** The colour of a value (the one `drawHeatmap` fills its cell with). */
export function cellColor(v: number, domain: Domain, missing = '#888888'): string {
  const t = normalize(v, domain);
  return Number.isNaN(t) ? missing : TABLE[Math.round(t * 255)];
}

export function drawHeatmap(ctx: Ctx2D, l: Layout, grid: Grid, domain: Domain, o: DrawOptions = {}): void {
  const dpr = o.dpr ?? 1;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, l.width, l.height);
  const pitch = l.cell + l.gap;
  for (let r = 0; r < grid.rows; r++) {
    for (let c = 0; c < grid.cols; c++) {
      ctx.fillStyle = cellColor(grid.values[r * grid.cols + c], domain, o.missingColor);
      ctx.fillRect(l.x0 + c * pitch, l.y0 + r * pitch, l.cell, l.cell);
    }
  }
  // Sliding-window layers: hatched across the row (their budget is their window, nothing was chosen).
  ctx.fillStyle = HATCH_STYLE;
  for (let r = 0; r < grid.rows; r++) {
    if (!grid.sliding[r]) continue;
    const y0 = l.y0 + r * pitch;
    const w = grid.cols * pitch - l.gap;
    for (let y = 1; y < l.cell; y += HATCH_PITCH) ctx.fillRect(l.x0, y0 + y, w, 1);
  }
  // Labels: layers down the left, KV heads across the top.
  ctx.fillStyle = o.labelColor ?? '#555';
  ctx.font = o.font ?? '11px system-ui, sans-serif';
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  for (let r = 0; r < grid.rows; r += l.labelEvery) ctx.fillText(`L${r}`, l.x0 - 5, l.y0 + r * pitch + l.cell / 2);
  ctx.textAlign = 'center';
  ctx.textBaseline = 'alphabetic';
  for (let c = 0; c < grid.cols; c += l.labelEvery) ctx.fillText(`H${c}`, l.x0 + c * pitch + l.cell / 2, l.y0 - 6);
  // Hover and the locked head: a dark and a light ring, visible on every colour of the scale.
  for (const [cell, width] of [
    [o.hover, 1.5],
    [o.selected, 2.5],
  ] as const) {
    if (!cell) continue;
    const { x, y, w, h } = cellRect(l, cell.row, cell.col);
    ctx.lineWidth = width;
    ctx.strokeStyle = '#000000';
    ctx.strokeRect(x + width / 2, y + width / 2, w - width, h - width);
    ctx.lineWidth = 1;
    ctx.strokeStyle = '#ffffff';
    ctx.strokeRect(x + width + 0.5, y + width + 0.5, w - 2 * width - 1, h - 2 * width - 1);
  }
}
