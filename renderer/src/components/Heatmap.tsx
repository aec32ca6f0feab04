// The layer x KV-head heatmap on a canvas, drawn from the statistics the engine reported. Hover shows a
// head's numbers; a click (or Enter) locks it; arrow keys move across cells. A hidden table gives the same
// numbers to screen readers.
import { useEffect, useLayoutEffect, useMemo, useRef, useState, type KeyboardEvent, type MouseEvent } from 'react';

import type { CompressionStats } from '../../../electron/api/contract.ts';
import { cssGradient } from '../lib/colormap.ts';
import {
  cellAt,
  cellRect,
  computeLayout,
  domainEnds,
  drawHeatmap,
  formatMetric,
  metricGrid,
  METRICS,
  type Domain,
  type Metric,
} from '../lib/heatmap.ts';
import { formatPercent } from '../lib/format.ts';
import { useResolvedTheme } from './theme.ts';

type Cell = { row: number; col: number };

export interface HeatmapProps {
  stats: CompressionStats;
  metric: Metric;
  domain: Domain;
  selected?: Cell | null;
  onSelect?: (cell: Cell | null) => void;
  label: string;
  testId?: string;
  maxCell?: number;
  maxHeight?: number;
  /** Width to lay out for when the container cannot be measured. */
  fallbackWidth?: number;
}

export function headSummary(stats: CompressionStats, c: Cell): string {
  const h = stats.layers[c.row]?.heads[c.col];
  if (!h) return `Layer ${c.row}, head ${c.col}: no data`;
  const w = stats.layers[c.row].slidingWindow;
  if (w > 0)
    return `Layer ${c.row}, head ${c.col}: ${h.kept.toLocaleString('en-US')} kept tokens, a sliding-window layer that keeps its window of ${w.toLocaleString('en-US')} tokens, not scored`;
  return `Layer ${c.row}, head ${c.col}: ${h.kept.toLocaleString('en-US')} kept tokens, ${formatPercent(h.retainedMass, 1)} of attention retained, ${formatPercent(h.concentration)} of tokens hold 90%`;
}

export function Heatmap({
  stats,
  metric,
  domain,
  selected = null,
  onSelect,
  label,
  testId,
  maxCell = 56,
  maxHeight = 520,
  fallbackWidth = 560,
}: HeatmapProps) {
  const wrapRef = useRef<HTMLDivElement>(null);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const [width, setWidth] = useState(fallbackWidth);
  const [hover, setHover] = useState<Cell | null>(null);
  const [cursor, setCursor] = useState<Cell | null>(null);
  const [asTable, setAsTable] = useState(false);
  const theme = useResolvedTheme();
  // The labels' colour comes from CSS; reading it forces a style pass, so it is read again only when the
  // theme changes (remembered with the theme it was read for).
  const labelColor = useRef<{ theme: string; color: string | null } | null>(null);
  const grid = useMemo(() => metricGrid(stats, metric), [stats, metric]);
  const layout = useMemo(
    () => computeLayout(grid.rows, grid.cols, width, { maxCell, maxHeight }),
    [grid.rows, grid.cols, width, maxCell, maxHeight],
  );

  useEffect(() => {
    const el = wrapRef.current;
    if (!el) return;
    if (el.clientWidth) setWidth(el.clientWidth);
    if (typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver(() => el.clientWidth && setWidth(el.clientWidth));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  useLayoutEffect(() => {
    const canvas = canvasRef.current;
    if (!canvas) return;
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(layout.width * dpr);
    canvas.height = Math.round(layout.height * dpr);
    const ctx = canvas.getContext('2d');
    if (!ctx) return;
    if (labelColor.current?.theme !== theme)
      labelColor.current = { theme, color: getComputedStyle(canvas).color || null };
    drawHeatmap(ctx, layout, grid, domain, {
      dpr,
      selected,
      hover: hover ?? cursor,
      labelColor: labelColor.current.color ?? '#666',
    });
  }, [layout, grid, domain, selected, hover, cursor, theme]);

  const pick = (e: MouseEvent<HTMLCanvasElement>): Cell | null => {
    const r = e.currentTarget.getBoundingClientRect();
    return cellAt(layout, e.clientX - r.left, e.clientY - r.top);
  };
  const same = (a: Cell | null, b: Cell | null) => !!a && !!b && a.row === b.row && a.col === b.col;

  const onKeyDown = (e: KeyboardEvent<HTMLCanvasElement>) => {
    const c = cursor ?? selected ?? { row: 0, col: 0 };
    const moves: Record<string, [number, number]> = {
      ArrowUp: [-1, 0],
      ArrowDown: [1, 0],
      ArrowLeft: [0, -1],
      ArrowRight: [0, 1],
    };
    if (moves[e.key]) {
      e.preventDefault();
      const [dr, dc] = moves[e.key];
      setCursor({
        row: Math.min(grid.rows - 1, Math.max(0, c.row + dr)),
        col: Math.min(grid.cols - 1, Math.max(0, c.col + dc)),
      });
    } else if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      onSelect?.(same(c, selected) ? null : c);
    } else if (e.key === 'Escape' && selected) {
      e.stopPropagation();
      onSelect?.(null);
    }
  };

  const tip = hover ?? cursor;
  const tipRect = tip ? cellRect(layout, tip.row, tip.col) : null;
  // Beside the grid when there is room (it hides no cell), else beside the cell.
  const tipStyle = !tipRect
    ? undefined
    : layout.width + 210 <= width
      ? { left: layout.width + 10, top: tipRect.y }
      : tipRect.x > layout.width / 2
        ? { right: layout.width - tipRect.x + 8, top: tipRect.y }
        : { left: tipRect.x + tipRect.w + 8, top: tipRect.y };
  const head = tip ? stats.layers[tip.row]?.heads[tip.col] : undefined;
  const info = METRICS.find((m) => m.id === metric)!;
  return (
    <div className="heatmap" ref={wrapRef}>
      <div className="heatmap-canvas-wrap" style={{ width: layout.width, height: layout.height }}>
        <canvas
          ref={canvasRef}
          className="heatmap-canvas"
          style={{ width: layout.width, height: layout.height }}
          data-testid={testId}
          data-layout={JSON.stringify({
            x0: layout.x0,
            y0: layout.y0,
            cell: layout.cell,
            gap: layout.gap,
            rows: layout.rows,
            cols: layout.cols,
          })}
          data-domain={JSON.stringify(domain)}
          data-metric={metric}
          tabIndex={0}
          role="img"
          aria-roledescription="heatmap"
          aria-label={`${label}: ${info.label.toLowerCase()} of ${grid.rows} layers by ${grid.cols} KV heads. Arrow keys move, Enter locks a head.`}
          onMouseMove={(e) => {
            const c = pick(e);
            if (!same(c, hover)) setHover(c);
          }}
          onMouseLeave={() => setHover(null)}
          onClick={(e) => {
            const c = pick(e);
            if (c) onSelect?.(same(c, selected) ? null : c);
          }}
          onKeyDown={onKeyDown}
          onFocus={() => setCursor((c) => c ?? selected ?? { row: 0, col: 0 })}
          onBlur={() => setCursor(null)}
        />
        {tip && tipRect && head && (
          <div className="heatmap-tip" style={tipStyle} aria-hidden="true" data-testid="heatmap-tip">
            <strong>
              Layer {tip.row} · head {tip.col}
            </strong>
            <span>{head.kept.toLocaleString('en-US')} kept tokens</span>
            {stats.layers[tip.row].slidingWindow > 0 ? (
              <span>
                Sliding-window layer: keeps its window of {stats.layers[tip.row].slidingWindow.toLocaleString('en-US')}{' '}
                tokens, not scored
              </span>
            ) : (
              <>
                <span>{formatPercent(head.retainedMass, 1)} attention retained</span>
                <span>{formatPercent(head.concentration)} of tokens hold 90%</span>
              </>
            )}
          </div>
        )}
      </div>
      <p className="sr-only" aria-live="polite">
        {cursor ? headSummary(stats, cursor) : ''}
      </p>
      <button
        type="button"
        className="link-button table-toggle"
        aria-expanded={asTable}
        onClick={() => setAsTable(!asTable)}
      >
        {asTable ? 'Hide the numbers' : 'Show the numbers as a table'}
      </button>
      {asTable && <HeatmapTable stats={stats} metric={metric} label={label} />}
    </div>
  );
}

/** The grid's numbers as a table: for screen readers, and for anyone who wants the exact values. */
function HeatmapTable({ stats, metric, label }: { stats: CompressionStats; metric: Metric; label: string }) {
  const grid = useMemo(() => metricGrid(stats, metric), [stats, metric]);
  const info = METRICS.find((m) => m.id === metric)!;
  return (
    <div className="heatmap-table-wrap">
      <table className="heatmap-table small">
        <caption>
          {label}: {info.label} ({info.unit}) by layer and KV head
        </caption>
        <thead>
          <tr>
            <th scope="col">Layer</th>
            {Array.from({ length: grid.cols }, (_, c) => (
              <th key={c} scope="col" aria-label={`Head ${c}`}>
                H{c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {Array.from({ length: grid.rows }, (_, r) => (
            <tr key={r}>
              <th scope="row" aria-label={grid.sliding[r] ? `Layer ${r}, sliding window` : `Layer ${r}`}>
                L{r}
                {grid.sliding[r] ? ' (window)' : ''}
              </th>
              {Array.from({ length: grid.cols }, (_, c) => (
                <td key={c}>{formatMetric(metric, grid.values[r * grid.cols + c])}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The colour scale of the grid beside it: its ends are the shown data's lowest and highest values. */
export function HeatmapLegend({
  metric,
  domain,
  testId = 'heatmap-legend',
}: {
  metric: Metric;
  domain: Domain;
  testId?: string;
}) {
  const info = METRICS.find((m) => m.id === metric)!;
  const ends = domainEnds(metric, domain);
  return (
    <div className="heatmap-legend" data-testid={testId} data-domain={JSON.stringify(domain)}>
      <span className="legend-title small" title={info.explain}>
        {info.label} <span className="muted">({info.unit}: lowest to highest shown)</span>
      </span>
      <span className="legend-bar" style={{ backgroundImage: cssGradient() }} aria-hidden="true" />
      <span className="legend-ends small">
        {typeof ends === 'string' ? (
          <span>{ends}</span>
        ) : (
          <>
            <span>{ends[0]}</span>
            <span>{ends[1]}</span>
          </>
        )}
      </span>
    </div>
  );
}
