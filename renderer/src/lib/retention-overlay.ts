// The retention map as shading, and the citations over it, for every document view (a PDF's text layer, a
// page's text, a Word or Markdown document's HTML). Pure: what each piece of text is drawn with.
//
// The scale: the colour runs from 0 to the highest retention outside the observation window (the app core
// leaves the window out of the passages), on a square-root curve from zero: text no head kept has no tint
// at all, and a page kept at 3% still shows when others are kept at 60%. The window (the read's last tokens, kept by every head whatever the
// scores) is drawn apart, hatched, and is not on the scale.
import type { KeptWindow, RetainedPassage } from '../../../electron/api/contract.ts';
import { overlap, type TextRange } from './text-layer-map.ts';

/** A cited range of a page's text and its share of the answer's attention (another helper's citation shape). */
export interface CitedRange {
  start: number;
  end: number;
  share: number;
}

/** A citation shown on the document: ranges of one page's text (the ui store's `citation`). */
export interface Citation {
  documentId: string;
  page: number;
  ranges: CitedRange[];
}

/** The top of the colour scale: the highest retention outside the window (at least 1%). */
export function scaleMax(passages: readonly Pick<RetainedPassage, 'retention'>[]): number {
  let max = 0;
  for (const p of passages) if (p.retention > max) max = p.retention;
  return Math.max(0.01, Math.min(1, max));
}

/** The alpha at the top of the scale. */
const TOP = 0.7;

/** Background alpha of a retention on a scale topped at `max`: a square-root curve from 0 (nothing kept: no
 * tint, never a floor that makes a page kept at 0% look kept). */
export function retentionAlpha(retention: number, max: number): number {
  const t = Math.min(1, Math.max(0, retention / max));
  return TOP * Math.sqrt(t);
}

/** The CSS background of a retention (the theme's --keep-rgb at that alpha). */
export function retentionColor(retention: number, max: number): string {
  return `rgb(var(--keep-rgb) / ${retentionAlpha(retention, max).toFixed(3)})`;
}

/** Where the window starts in a page's text: 0 for pages after its start, null for pages before (or none). */
export function windowStartOn(page: number, window: KeptWindow | null): number | null {
  if (!window || page < window.page) return null;
  return page === window.page ? window.start : 0;
}

export interface Shade {
  /** Length-weighted mean retention of the passages the range overlaps; null: none. */
  retention: number | null;
  /** Most of the range lies in the observation window. */
  window: boolean;
  /** The largest share of a citation the range overlaps; null: not cited. */
  cited: number | null;
  /** The range meets a search hit. */
  hit: boolean;
}

/** How a range of a page's text is drawn. */
export function shadeOf(
  range: TextRange,
  passages: readonly RetainedPassage[],
  windowStart: number | null,
  cited: readonly CitedRange[] = [],
  hits: readonly TextRange[] = [],
): Shade {
  let sum = 0,
    len = 0;
  for (const p of passages) {
    const n = overlap(range, p);
    sum += n * p.retention;
    len += n;
  }
  const inWindow = windowStart === null ? 0 : Math.max(0, range.end - Math.max(range.start, windowStart));
  let share: number | null = null;
  for (const c of cited) if (overlap(range, c) > 0) share = Math.max(share ?? 0, c.share);
  return {
    retention: len > 0 ? sum / len : null,
    window: inWindow * 2 > range.end - range.start,
    cited: share,
    hit: hits.some((h) => overlap(range, h) > 0),
  };
}

export interface Segment extends Shade {
  start: number;
  end: number;
}

/**
 * A page's text cut into runs drawn alike: at every edge of a passage (two sentences kept alike stay two),
 * of the window, of a citation and of a search hit.
 * Text with no passage, outside the window, not cited and not found has retention null, window false, cited
 * null, hit false.
 */
export function segmentsOf(
  text: string,
  passages: readonly RetainedPassage[],
  windowStart: number | null = null,
  cited: readonly CitedRange[] = [],
  hits: readonly TextRange[] = [],
): Segment[] {
  const edges = new Set<number>([0, text.length]);
  const clamp = (n: number) => Math.min(text.length, Math.max(0, n));
  for (const r of [...passages, ...cited, ...hits]) {
    edges.add(clamp(r.start));
    edges.add(clamp(r.end));
  }
  if (windowStart !== null) edges.add(clamp(windowStart));
  const sorted = [...edges].sort((a, b) => a - b);
  const out: Segment[] = [];
  for (let i = 0; i + 1 < sorted.length; i++) {
    const range = { start: sorted[i], end: sorted[i + 1] };
    out.push({ ...range, ...shadeOf(range, passages, windowStart, cited, hits) });
  }
  return out;
}

/** Mean retention of each page, weighted by passage length (pages with no passage are absent). */
export function pageRetention(passages: readonly RetainedPassage[]): Map<number, number> {
  const sum = new Map<number, number>(),
    len = new Map<number, number>();
  for (const p of passages) {
    const n = p.end - p.start;
    sum.set(p.page, (sum.get(p.page) ?? 0) + p.retention * n);
    len.set(p.page, (len.get(p.page) ?? 0) + n);
  }
  const out = new Map<number, number>();
  for (const [page, s] of sum) out.set(page, s / Math.max(1, len.get(page) ?? 1));
  return out;
}
