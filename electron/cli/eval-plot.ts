// The plot of `folio eval --suite fidelity --svg FILE`: a self-contained SVG written by hand (no dependency).
// Left: KL(full ‖ method) on a log scale against the budget, one line per method. Right: the attention-
// output L1 loss per layer at the smallest budget. Each method has its own colour, lightness, dash pattern
// and marker, so the lines stay apart in grayscale too.
import type { CompressionMethod } from '../engine/binding.ts';
import { methodRow, type Allocator, type Schedule, type Scorer } from '../shared/kv/methods.ts';

/** What the plot needs of a fidelity report (see commands/eval.ts). */
export interface PlotInput {
  model: { name: string; path: string };
  settings: { methods: CompressionMethod[]; budgets: number[]; split: number; window: number; alpha: number };
  rows: { method: CompressionMethod; budget: number; kl: number; attn_l1_layers: (number | null)[] }[];
  documents: unknown[];
}

type Marker = 'none' | 'circle' | 'square' | 'triangle' | 'diamond' | 'cross';
interface Style {
  colour: string;
  dash: string;
  marker: Marker;
  width: number;
}

// A method's style follows from what it is (its row in electron/shared/kv/methods.ts), so a new method needs
// nothing here: black (full) and grey (streaming); a scored method's hue is its scorer's, dark and dashed for
// uniform heads, light and solid for Ada; the marker tells the layer schedule (and the marker's fill the
// allocator), so the lines stay apart in grayscale too.
const scorerColours: Record<Exclude<Scorer, 'none'>, Record<Allocator, string>> = {
  snapkv: { uniform: '#1b3f8b', ada: '#b22222' },
  critical: { uniform: '#3d6b2e', ada: '#7fbf3f' },
  defensive: { uniform: '#5b2a86', ada: '#c27ee0' },
  expected: { uniform: '#7a4b12', ada: '#f2a33a' },
  kvzip: { uniform: '#0e6b6b', ada: '#35c7c7' },
};
const scheduleMarkers: Record<Allocator, Record<Schedule, Marker>> = {
  uniform: { flat: 'square', pyramid: 'triangle', global: 'cross' },
  ada: { flat: 'circle', pyramid: 'diamond', global: 'cross' },
};

function styleOf(method: CompressionMethod): Style {
  const m = methodRow(method);
  if (m.selection === 'streaming') return { colour: '#8c8c8c', dash: '2 3', marker: 'cross', width: 2 };
  if (m.scorer === 'none') return { colour: '#000000', dash: '', marker: 'none', width: 1.5 };
  const ada = m.allocator === 'ada';
  return {
    colour: scorerColours[m.scorer][m.allocator],
    dash: ada ? (m.schedule === 'global' ? '10 3' : '') : m.schedule === 'pyramid' ? '3 2 8 2' : '7 4',
    marker: scheduleMarkers[m.allocator][m.schedule],
    width: ada ? 2.5 : 2,
  };
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const n = (x: number) => (Math.round(x * 100) / 100).toString();

function marker(m: Marker, x: number, y: number, colour: string): string {
  const r = 4;
  switch (m) {
    case 'circle':
      return `<circle cx="${n(x)}" cy="${n(y)}" r="${r}" fill="${colour}"/>`;
    case 'square':
      return `<rect x="${n(x - r)}" y="${n(y - r)}" width="${2 * r}" height="${2 * r}" fill="${colour}"/>`;
    case 'triangle':
      return `<path d="M${n(x)} ${n(y - r - 1)}L${n(x + r + 1)} ${n(y + r)}L${n(x - r - 1)} ${n(y + r)}Z" fill="${colour}"/>`;
    case 'diamond':
      return `<path d="M${n(x)} ${n(y - r - 1)}L${n(x + r + 1)} ${n(y)}L${n(x)} ${n(y + r + 1)}L${n(x - r - 1)} ${n(y)}Z" fill="white" stroke="${colour}" stroke-width="2"/>`;
    case 'cross':
      return `<path d="M${n(x - r)} ${n(y - r)}L${n(x + r)} ${n(y + r)}M${n(x - r)} ${n(y + r)}L${n(x + r)} ${n(y - r)}" stroke="${colour}" stroke-width="2"/>`;
    default:
      return '';
  }
}

/** Round tick values covering [lo, hi] (about five of them). */
function niceTicks(lo: number, hi: number): number[] {
  if (hi <= lo) hi = lo + 1;
  const raw = (hi - lo) / 5;
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw)!;
  const ticks: number[] = [];
  const first = Math.floor(lo / step + 1e-9),
    last = Math.ceil(hi / step - 1e-9);
  for (let i = first; i <= last; i++) ticks.push(Number((i * step).toPrecision(12)));
  return ticks;
}

const fmtTick = (t: number) =>
  Math.abs(t) >= 1e4 || (t !== 0 && Math.abs(t) < 1e-3) ? t.toExponential(0) : String(Number(t.toPrecision(6)));

interface Panel {
  x: number;
  y: number;
  w: number;
  h: number;
}

function frame(p: Panel, title: string, xLabel: string, yLabel: string): string {
  return (
    `<rect x="${p.x}" y="${p.y}" width="${p.w}" height="${p.h}" fill="none" stroke="#000" stroke-width="1"/>` +
    `<text x="${p.x + p.w / 2}" y="${p.y - 12}" text-anchor="middle" font-size="14" font-weight="bold">${esc(title)}</text>` +
    `<text x="${p.x + p.w / 2}" y="${p.y + p.h + 40}" text-anchor="middle" font-size="12">${esc(xLabel)}</text>` +
    `<text transform="translate(${p.x - 52} ${p.y + p.h / 2}) rotate(-90)" text-anchor="middle" font-size="12">${esc(yLabel)}</text>`
  );
}

function series(points: [number, number][], s: Style): string {
  if (points.length === 0) return '';
  const d = points.map(([x, y], i) => `${i ? 'L' : 'M'}${n(x)} ${n(y)}`).join('');
  return (
    `<path d="${d}" fill="none" stroke="${s.colour}" stroke-width="${s.width}"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''} stroke-linejoin="round"/>` +
    points.map(([x, y]) => marker(s.marker, x, y, s.colour)).join('')
  );
}

/** The two-panel plot of a fidelity report, as SVG text. */
export function fidelitySvg(r: PlotInput): string {
  const W = 980,
    H = 460 + legendHeight(r.settings.methods, W);
  const left: Panel = { x: 80, y: 60, w: 380, h: 320 };
  const right: Panel = { x: 570, y: 60, w: 380, h: 320 };
  const methods = r.settings.methods;
  const budgets = [...r.settings.budgets].sort((a, b) => a - b);
  const parts: string[] = [
    svgStart(
      W,
      H,
      `Compression fidelity: ${r.model.name || r.model.path}, ${r.documents.length} documents, split ${r.settings.split}, ` +
        `window ${r.settings.window}, alpha ${r.settings.alpha}, F32 caches`,
    ),
  ];

  // Left panel: KL against the budget, log scale.
  const { xOf, marks } = budgetAxis(left, budgets);
  const kls = r.rows.filter((x) => x.kl > 0 && Number.isFinite(x.kl)).map((x) => x.kl);
  const lo = kls.length ? Math.floor(Math.log10(Math.min(...kls))) : -3;
  let hi = kls.length ? Math.ceil(Math.log10(Math.max(...kls))) : 0;
  if (hi <= lo) hi = lo + 1;
  const yKl = (k: number) => left.y + left.h - ((Math.log10(k) - lo) / (hi - lo)) * left.h;
  parts.push(`<g font-size="11">`);
  for (let e = lo; e <= hi; e++) {
    const y = yKl(10 ** e);
    parts.push(
      `<line x1="${left.x}" x2="${left.x + left.w}" y1="${n(y)}" y2="${n(y)}" stroke="#d0d0d0"/>`,
      `<line x1="${left.x - 5}" x2="${left.x}" y1="${n(y)}" y2="${n(y)}" stroke="#000"/>`,
      `<text x="${left.x - 8}" y="${n(y + 4)}" text-anchor="end">1e${e}</text>`,
    );
    if (e < hi)
      for (let m = 2; m <= 9; m++) {
        const ym = yKl(m * 10 ** e);
        parts.push(`<line x1="${left.x}" x2="${left.x + 3}" y1="${n(ym)}" y2="${n(ym)}" stroke="#000"/>`);
        if (hi - lo <= 2 && (m === 2 || m === 5))
          parts.push(`<text x="${left.x - 8}" y="${n(ym + 4)}" text-anchor="end" fill="#555">${m}e${e}</text>`);
      }
  }
  parts.push(marks, `</g>`);
  parts.push(
    frame(
      left,
      'KL(full ‖ method) of the next-token distributions',
      'budget (kept fraction of the prefix per head)',
      'mean KL, nats (log scale)',
    ),
  );
  const notDrawn: string[] = [];
  for (const m of methods) {
    const pts = budgets
      .map((b) => r.rows.find((x) => x.method === m && x.budget === b))
      .filter((x): x is NonNullable<typeof x> => !!x && x.kl > 0 && Number.isFinite(x.kl))
      .map((x) => [xOf(x.budget), yKl(x.kl)] as [number, number]);
    if (pts.length === 0) notDrawn.push(m);
    parts.push(series(pts, styleOf(m)));
  }
  if (notDrawn.length)
    parts.push(
      `<text x="${left.x + 6}" y="${left.y + left.h - 8}" font-size="11" fill="#333">${esc(`KL = 0, not drawn on a log scale: ${notDrawn.join(', ')}`)}</text>`,
    );

  // Right panel: attention L1 per layer at the smallest budget.
  const smallest = budgets[0];
  const lrows = methods
    .map((m) => r.rows.find((x) => x.method === m && x.budget === smallest))
    .filter((x): x is NonNullable<typeof x> => !!x);
  const layers = Math.max(1, ...lrows.map((x) => x.attn_l1_layers.length));
  const l1s = lrows.flatMap((x) => x.attn_l1_layers.filter((v): v is number => v !== null && Number.isFinite(v)));
  const yTicks = niceTicks(0, Math.max(1e-6, ...l1s) * 1.05);
  const yMax = yTicks[yTicks.length - 1];
  const xl = (l: number) => right.x + (layers === 1 ? right.w / 2 : 20 + (l / (layers - 1)) * (right.w - 40));
  const yl = (v: number) => right.y + right.h - (v / yMax) * right.h;
  parts.push(`<g font-size="11">`);
  for (const t of yTicks) {
    const y = yl(t);
    parts.push(
      `<line x1="${right.x}" x2="${right.x + right.w}" y1="${n(y)}" y2="${n(y)}" stroke="#d0d0d0"/>`,
      `<line x1="${right.x - 5}" x2="${right.x}" y1="${n(y)}" y2="${n(y)}" stroke="#000"/>`,
      `<text x="${right.x - 8}" y="${n(y + 4)}" text-anchor="end">${fmtTick(t)}</text>`,
    );
  }
  for (let l = 0; l < layers; l++) {
    const x = xl(l);
    parts.push(
      `<line x1="${n(x)}" x2="${n(x)}" y1="${right.y + right.h}" y2="${right.y + right.h + 5}" stroke="#000"/>`,
      `<text x="${n(x)}" y="${right.y + right.h + 18}" text-anchor="middle">${l}</text>`,
    );
  }
  parts.push(`</g>`);
  parts.push(
    frame(
      right,
      `Attention L1 loss per layer at budget ${smallest}`,
      'layer',
      "L1 change of the window's attention output",
    ),
  );
  for (const row of lrows) {
    const pts = row.attn_l1_layers
      .map((v, l) => (v === null || !Number.isFinite(v) ? null : ([xl(l), yl(v)] as [number, number])))
      .filter((p): p is [number, number] => p !== null);
    parts.push(series(pts, styleOf(row.method)));
  }

  parts.push(legend(methods, W, 460), '</svg>');
  return parts.join('\n') + '\n';
}

/** The opening of a plot: size, white background, the title. */
function svgStart(W: number, H: number, title: string): string {
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif">\n` +
    `<rect width="${W}" height="${H}" fill="white"/>\n` +
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15">${esc(title)}</text>`
  );
}

/** A panel's x axis of budgets: where a budget goes, and its grid lines and labels. */
function budgetAxis(p: Panel, budgets: number[]): { xOf: (b: number) => number; marks: string } {
  const bx0 = budgets[0],
    bx1 = budgets[budgets.length - 1];
  const pad = bx1 > bx0 ? (bx1 - bx0) * 0.06 : Math.max(bx0 * 0.1, 0.05);
  const xOf = (b: number) => p.x + ((b - (bx0 - pad)) / (bx1 + pad - (bx0 - pad))) * p.w;
  const marks = budgets.map((b) => {
    const x = xOf(b);
    return (
      `<line x1="${n(x)}" x2="${n(x)}" y1="${p.y}" y2="${p.y + p.h}" stroke="#eeeeee"/>` +
      `<line x1="${n(x)}" x2="${n(x)}" y1="${p.y + p.h}" y2="${p.y + p.h + 5}" stroke="#000"/>` +
      `<text x="${n(x)}" y="${p.y + p.h + 18}" text-anchor="middle">${b <= 1 ? b : `${b} tok`}</text>`
    );
  });
  return { xOf, marks: marks.join('\n') };
}

const LEGEND_ROW = 20;
/** Legend entries in a row of a plot `W` wide: as many as the longest name leaves room for (12px text). */
const legendPerRow = (methods: CompressionMethod[], W: number) =>
  Math.max(1, Math.floor((W - 160) / (48 + 6 * Math.max(...methods.map((m) => m.length)))));
/** Height of the methods' legend, a margin below included. */
const legendHeight = (methods: CompressionMethod[], W: number) =>
  Math.ceil(methods.length / legendPerRow(methods, W)) * LEGEND_ROW + 20;

/** The methods' styles in rows from height y on. */
function legend(methods: CompressionMethod[], W: number, y: number): string {
  const perRow = legendPerRow(methods, W),
    step = (W - 160) / Math.min(perRow, Math.max(1, methods.length));
  return methods
    .map((m, i) => {
      const s = styleOf(m);
      const x = 80 + (i % perRow) * step,
        ly = y + Math.floor(i / perRow) * LEGEND_ROW;
      return (
        `<line x1="${n(x)}" x2="${n(x + 36)}" y1="${ly}" y2="${ly}" stroke="${s.colour}" stroke-width="${s.width}"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>` +
        marker(s.marker, x + 18, ly, s.colour) +
        `<text x="${n(x + 44)}" y="${ly + 4}" font-size="12">${esc(m)}</text>`
      );
    })
    .join('\n');
}

/** What the RULER plot needs of its report (ruler/suite.ts). */
export interface RulerPlotInput {
  model: { name: string; path: string };
  settings: { methods: CompressionMethod[]; budgets: number[]; mode: string; tasks: string[]; lengths: number[] };
  rows: { task: string; method: CompressionMethod; budget: number; accuracy: number }[];
  cases: unknown[];
}

/** The RULER plot: accuracy against the budget, one line per method, one panel per task (three to a row). */
export function rulerSvg(r: RulerPlotInput): string {
  const tasks = [...new Set(r.rows.map((x) => x.task))];
  const budgets = [...r.settings.budgets].sort((a, b) => a - b);
  const cols = Math.min(3, tasks.length),
    rowsOfPanels = Math.ceil(tasks.length / cols);
  const pw = 260,
    ph = 180,
    gapX = 80,
    gapY = 90;
  const W = 80 + cols * pw + (cols - 1) * gapX + 30,
    top = 60 + rowsOfPanels * (ph + gapY),
    H = top + legendHeight(r.settings.methods, W);
  const parts: string[] = [
    svgStart(
      W,
      H,
      `RULER accuracy: ${r.model.name || r.model.path}, ${r.cases.length} cases, lengths ${r.settings.lengths.join(', ')}, ${r.settings.mode}`,
    ),
  ];
  const yTicks = [0, 0.25, 0.5, 0.75, 1];
  tasks.forEach((task, i) => {
    const p: Panel = { x: 80 + (i % cols) * (pw + gapX), y: 60 + Math.floor(i / cols) * (ph + gapY), w: pw, h: ph };
    const { xOf, marks } = budgetAxis(p, budgets);
    const yOf = (a: number) => p.y + p.h - a * p.h;
    parts.push(`<g font-size="11">`, marks);
    for (const t of yTicks)
      parts.push(
        `<line x1="${p.x}" x2="${p.x + p.w}" y1="${n(yOf(t))}" y2="${n(yOf(t))}" stroke="#d0d0d0"/>` +
          `<text x="${p.x - 8}" y="${n(yOf(t) + 4)}" text-anchor="end">${t}</text>`,
      );
    parts.push(`</g>`, frame(p, task, 'budget (kept fraction per head)', 'accuracy'));
    for (const m of r.settings.methods) {
      const pts = budgets
        .map((b) => r.rows.find((x) => x.task === task && x.method === m && x.budget === b))
        .filter((x): x is NonNullable<typeof x> => !!x)
        .map((x) => [xOf(x.budget), yOf(x.accuracy)] as [number, number]);
      parts.push(series(pts, styleOf(m)));
    }
  });
  parts.push(legend(r.settings.methods, W, top), '</svg>');
  return parts.join('\n') + '\n';
}
