// The arithmetic of the virtualised message list: measured heights (estimates until measured), prefix
// offsets, and which items intersect the viewport. Pure, so it is tested without a layout engine.

export class HeightCache {
  private measured = new Map<string, number>();
  constructor(private readonly estimate: number) {}

  get(key: string): number {
    return this.measured.get(key) ?? this.estimate;
  }

  /** Records a measured height; returns the change (0 when unchanged). */
  set(key: string, height: number): number {
    if (!(height > 0)) return 0;
    const before = this.get(key);
    this.measured.set(key, height);
    return height - before;
  }

  has(key: string): boolean {
    return this.measured.has(key);
  }

  /** Forgets keys no longer in the list. */
  retain(keys: Iterable<string>): void {
    const keep = new Set(keys);
    for (const k of [...this.measured.keys()]) if (!keep.has(k)) this.measured.delete(k);
  }

  /** offsets[i] = top of item i; offsets[n] = total height. */
  offsets(keys: readonly string[], gap = 0): Float64Array {
    const o = new Float64Array(keys.length + 1);
    for (let i = 0; i < keys.length; i++) o[i + 1] = o[i] + this.get(keys[i]) + gap;
    return o;
  }
}

/** First index i with offsets[i + 1] > y (the item containing y), by binary search. */
export function indexAt(offsets: Float64Array, y: number): number {
  const n = offsets.length - 1;
  let lo = 0,
    hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (offsets[mid + 1] > y) hi = mid;
    else lo = mid + 1;
  }
  return Math.min(lo, Math.max(0, n - 1));
}

/** The half-open range [start, end) of items to render for a viewport, with overscan in pixels. */
export function visibleRange(
  offsets: Float64Array,
  scrollTop: number,
  viewport: number,
  overscan: number,
): { start: number; end: number } {
  const n = offsets.length - 1;
  if (n <= 0) return { start: 0, end: 0 };
  const top = Math.max(0, scrollTop - overscan);
  const bottom = scrollTop + viewport + overscan;
  const start = indexAt(offsets, top);
  let end = indexAt(offsets, bottom) + 1;
  end = Math.min(n, Math.max(end, start + 1));
  return { start, end };
}

/** Whether a scroll position counts as "at the bottom" (new content should keep it there). */
export function atBottom(scrollTop: number, viewport: number, scrollHeight: number, slack = 48): boolean {
  return scrollHeight - (scrollTop + viewport) <= slack;
}
