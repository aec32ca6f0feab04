import { fireEvent, render, screen } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';

import { stats } from '../test/fake-api.ts';
import { cellCenter, computeLayout, metricDomain, metricGrid } from '../lib/heatmap.ts';
import { Heatmap, HeatmapLegend } from './Heatmap.tsx';

function recordingCanvas() {
  const fills: string[] = [];
  const ctx = {
    fillStyle: '',
    strokeStyle: '',
    lineWidth: 1,
    font: '',
    textAlign: 'left',
    textBaseline: 'alphabetic',
    setTransform() {},
    clearRect() {},
    strokeRect() {},
    fillText() {},
    fillRect() {
      fills.push(String(ctx.fillStyle));
    },
  };
  HTMLCanvasElement.prototype.getContext = (() => ctx) as never;
  return fills;
}

describe('the heatmap component', () => {
  const s = stats();
  const domain = metricDomain([metricGrid(s, 'budget')]);

  it('draws from the stats: one cell per (layer, head)', () => {
    const fills = recordingCanvas();
    render(<Heatmap stats={s} metric="budget" domain={domain} label="Saved cache" testId="hm" />);
    expect(fills.slice(-12)).toHaveLength(12);
    const canvas = screen.getByTestId('hm');
    expect(JSON.parse(canvas.dataset.layout!)).toMatchObject({ rows: 3, cols: 4 });
    expect(canvas.getAttribute('aria-label')).toMatch(/budget of 3 layers by 4 KV heads/);
  });

  it('hover shows a head’s numbers; a click locks it', () => {
    recordingCanvas();
    const onSelect = vi.fn();
    render(
      <Heatmap
        stats={s}
        metric="budget"
        domain={domain}
        label="Saved cache"
        testId="hm"
        onSelect={onSelect}
        fallbackWidth={560}
      />,
    );
    const canvas = screen.getByTestId('hm');
    canvas.getBoundingClientRect = () => ({
      left: 0,
      top: 0,
      right: 0,
      bottom: 0,
      width: 0,
      height: 0,
      x: 0,
      y: 0,
      toJSON() {},
    });
    const l = computeLayout(3, 4, 560, { maxCell: 56, maxHeight: 520 });
    const p = cellCenter(l, 2, 3);
    fireEvent.mouseMove(canvas, { clientX: p.x, clientY: p.y });
    const tip = screen.getByTestId('heatmap-tip');
    expect(tip.textContent).toMatch(/Layer 2 · head 3/);
    expect(tip.textContent).toMatch(/186 kept tokens/);
    fireEvent.click(canvas, { clientX: p.x, clientY: p.y });
    expect(onSelect).toHaveBeenCalledWith({ row: 2, col: 3 });
  });

  it('works from the keyboard: arrows move, Enter locks, and a screen reader hears the cell', () => {
    recordingCanvas();
    const onSelect = vi.fn();
    render(<Heatmap stats={s} metric="budget" domain={domain} label="Saved cache" testId="hm" onSelect={onSelect} />);
    const canvas = screen.getByTestId('hm');
    fireEvent.focus(canvas);
    fireEvent.keyDown(canvas, { key: 'ArrowRight' });
    fireEvent.keyDown(canvas, { key: 'ArrowDown' });
    expect(screen.getByText(/Layer 1, head 1: 133 kept tokens/)).toBeTruthy();
    fireEvent.keyDown(canvas, { key: 'Enter' });
    expect(onSelect).toHaveBeenCalledWith({ row: 1, col: 1 });
  });

  it('gives the same numbers as a table on demand, and a legend with the domain', async () => {
    recordingCanvas();
    render(
      <>
        <Heatmap stats={s} metric="budget" domain={domain} label="Saved cache" />
        <HeatmapLegend metric="budget" domain={domain} />
      </>,
    );
    expect(screen.queryByRole('table')).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Show the numbers as a table' }));
    const table = screen.getByRole('table');
    expect(table.querySelectorAll('tbody tr')).toHaveLength(3);
    expect(table.textContent).toMatch(/L0183108/);
    expect(screen.getByRole('rowheader', { name: 'Layer 2' })).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Hide the numbers' }).getAttribute('aria-expanded')).toBe('true');
    const legend = screen.getByTestId('heatmap-legend');
    expect(legend.textContent).toMatch(/61/);
    expect(legend.textContent).toMatch(/186/);
  });
});
