import { describe, expect, it } from 'vitest';

import { stats } from '../test/fake-api.ts';
import { colorTable, tOfColor, hexToRgb } from './colormap.ts';
import {
  cellAt,
  cellCenter,
  cellColor,
  cellRect,
  computeLayout,
  drawHeatmap,
  HATCH_STYLE,
  formatMetric,
  metricDomain,
  metricGrid,
  normalize,
  domainEnds,
  formatDomain,
  shareGrid,
  type Ctx2D,
} from './heatmap.ts';

describe('a set document’s share grid', () => {
  it('is its entries over all the documents’ in each layer and head, none where no document keeps any', () => {
    const shares = [
      {
        entries: [
          [3, 0],
          [1, 2],
        ],
      },
      {
        entries: [
          [1, 0],
          [3, 2],
        ],
      },
    ];
    const g = shareGrid(shares, 0);
    expect([g.rows, g.cols]).toEqual([2, 2]);
    expect([...g.values]).toEqual([0.75, NaN, 0.25, 0.5]);
    expect([...shareGrid(shares, 1).values]).toEqual([0.25, NaN, 0.75, 0.5]);
  });
});

function recorder() {
  const fills: { style: string; x: number; y: number; w: number; h: number }[] = [];
  const strokes: { style: string; x: number; y: number }[] = [];
  const texts: string[] = [];
  const ctx: Ctx2D & { fills: typeof fills; strokes: typeof strokes; texts: string[] } = {
    fills,
    strokes,
    texts,
    fillStyle: '',
    strokeStyle: '',
    lineWidth: 1,
    font: '',
    textAlign: 'left',
    textBaseline: 'alphabetic',
    setTransform() {},
    clearRect() {},
    fillRect(x, y, w, h) {
      fills.push({ style: String(this.fillStyle), x, y, w, h });
    },
    strokeRect(x, y) {
      strokes.push({ style: String(this.strokeStyle), x, y });
    },
    fillText(t) {
      texts.push(t);
    },
  };
  return ctx;
}

describe('the heatmap values', () => {
  const s = stats();
  it('has one value per (layer, KV head), row-major', () => {
    const g = metricGrid(s, 'budget');
    expect([g.rows, g.cols]).toEqual([3, 4]);
    expect(Array.from(g.values)).toEqual([183, 108, 76, 85, 102, 133, 121, 96, 61, 73, 132, 186]);
    expect(metricGrid(s, 'mass').values[1]).toBeCloseTo(0.92);
    expect(metricGrid(s, 'concentration').values[4]).toBeCloseTo(0.07);
  });

  it('marks missing heads as NaN', () => {
    const ragged = stats([[1, 2], [3]]);
    expect(Number.isNaN(metricGrid(ragged, 'budget').values[3])).toBe(true);
  });

  it('shares one domain across grids shown together', () => {
    const a = metricGrid(stats([[10, 20]]), 'budget');
    const b = metricGrid(stats([[5, 40]]), 'budget');
    expect(metricDomain([a, b])).toEqual([5, 40]);
    expect(formatDomain('budget', metricDomain([a, b]))).toBe('5 to 40');
  });

  it('gives the actual lowest and highest value, and says so when every cell is equal', () => {
    // Not [0, 39]: no cell holds 0.
    const even = metricDomain([metricGrid(stats([[39, 39]]), 'budget')]);
    expect(even).toEqual([39, 39]);
    expect(formatDomain('budget', even)).toBe('every cell 39');
    expect(domainEnds('budget', even)).toBe('every cell 39');
    expect(normalize(39, even)).toBe(1);
    expect(formatDomain('mass', [0.921, 0.924])).toBe('every cell 92%');
    expect(formatDomain('mass', metricDomain([]))).toBe('no values');
  });

  it('normalises into [0, 1]', () => {
    expect(normalize(5, [0, 10])).toBe(0.5);
    expect(normalize(-5, [0, 10])).toBe(0);
    expect(normalize(50, [0, 10])).toBe(1);
    expect(Number.isNaN(normalize(NaN, [0, 1]))).toBe(true);
    expect(formatMetric('budget', 1234)).toBe('1,234');
    expect(formatMetric('mass', 0.925)).toBe('93%');
  });
});

describe('the cell geometry', () => {
  it('fits the width, within the cell limits', () => {
    // A small model: cells as large as allowed.
    const l = computeLayout(5, 4, 600, { maxCell: 56 });
    expect(l.cell).toBe(56);
    expect(l.width).toBeLessThanOrEqual(600);
    expect(l.labelEvery).toBe(1);
    // 32 layers x 32 heads: the width and the height limit the cells.
    const big = computeLayout(32, 32, 600, { maxHeight: 560 });
    expect(big.cell).toBe(15); // (560 - 20 - 2 - 31) / 32: the height decides
    expect(big.width).toBeLessThanOrEqual(600);
    expect(big.height).toBeLessThanOrEqual(560);
    // Narrow: small cells, and labels on every 4th row and column only.
    const narrow = computeLayout(32, 32, 300);
    expect(narrow.cell).toBe(7);
    expect(narrow.labelEvery).toBe(4);
  });

  it('maps points to cells and back', () => {
    const l = computeLayout(32, 32, 800);
    for (const [r, c] of [
      [0, 0],
      [5, 7],
      [31, 31],
      [17, 2],
    ]) {
      const p = cellCenter(l, r, c);
      expect(cellAt(l, p.x, p.y)).toEqual({ row: r, col: c });
      const rect = cellRect(l, r, c);
      expect(cellAt(l, rect.x, rect.y)).toEqual({ row: r, col: c });
      expect(cellAt(l, rect.x + rect.w - 0.01, rect.y + rect.h - 0.01)).toEqual({ row: r, col: c });
    }
    expect(cellAt(l, l.x0 - 1, l.y0 + 1)).toBeNull();
    expect(cellAt(l, l.x0 + 1, l.y0 - 1)).toBeNull();
    expect(cellAt(l, l.width + 50, l.y0 + 1)).toBeNull();
    expect(cellAt(l, l.x0 + 1, l.height + 50)).toBeNull();
  });
});

describe('drawing', () => {
  it('fills one cell per (layer, head) with the colour of its budget, in order', () => {
    const s = stats();
    const g = metricGrid(s, 'budget');
    const domain = metricDomain([g]);
    const l = computeLayout(g.rows, g.cols, 400);
    const ctx = recorder();
    drawHeatmap(ctx, l, g, domain, { selected: { row: 1, col: 2 } });
    expect(ctx.fills).toHaveLength(12);
    const table = colorTable(256);
    ctx.fills.forEach((f, i) => {
      const r = Math.floor(i / g.cols),
        c = i % g.cols;
      expect(f).toMatchObject(cellRect(l, r, c));
      expect(f.style).toBe(cellColor(g.values[i], domain));
      expect(table).toContain(f.style);
    });
    // Colours follow the budgets: the same order along the scale as the values.
    const ts = ctx.fills.map((f) => tOfColor(hexToRgb(f.style)));
    const order = (xs: number[]) => xs.map((_, i) => i).sort((a, b) => xs[a] - xs[b]);
    expect(order(ts)).toEqual(order(Array.from(g.values)));
    expect(ctx.texts).toEqual(['L0', 'L1', 'L2', 'H0', 'H1', 'H2', 'H3']);
    expect(ctx.strokes.length).toBe(2); // the locked cell's two rings
  });

  it('hatches a sliding-window layer, whose attention statistics are not measured', () => {
    const s = stats();
    s.layers[1] = { ...s.layers[1], slidingWindow: 512 };
    const g = metricGrid(s, 'budget');
    expect(g.sliding).toEqual([false, true, false]);
    expect(g.values[4]).toBe(102); // its kept tokens are real
    const mass = metricGrid(s, 'mass');
    expect(Number.isNaN(mass.values[4]) && Number.isFinite(mass.values[0])).toBe(true);
    const l = computeLayout(g.rows, g.cols, 400);
    const ctx = recorder();
    drawHeatmap(ctx, l, g, metricDomain([g]));
    const hatch = ctx.fills.filter((f) => f.style === HATCH_STYLE);
    expect(hatch.length).toBeGreaterThan(1);
    // every line lies across row 1 only, from its first cell to its last
    const row = cellRect(l, 1, 0),
      last = cellRect(l, 1, g.cols - 1);
    for (const f of hatch) {
      expect(f.y > row.y && f.y < row.y + row.h).toBe(true);
      expect([f.x, f.x + f.w]).toEqual([row.x, last.x + last.w]);
    }
    expect(ctx.fills.length).toBe(12 + hatch.length);
  });

  it('draws a missing value in the neutral colour', () => {
    expect(cellColor(NaN, [0, 1], '#abcdef')).toBe('#abcdef');
  });
});
