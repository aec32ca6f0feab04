import { describe, expect, it } from 'vitest';

import { atBottom, HeightCache, indexAt, visibleRange } from './virtual.ts';

const keys = Array.from({ length: 1000 }, (_, i) => `m${i}`);

describe('the virtual list arithmetic', () => {
  it('offsets use measured heights and estimates for the rest', () => {
    const c = new HeightCache(100);
    expect(c.set('m1', 250)).toBe(150);
    expect(c.set('m1', 250)).toBe(0);
    expect(c.set('m2', 0)).toBe(0); // not laid out: ignored
    const o = c.offsets(keys);
    expect(o[0]).toBe(0);
    expect(o[1]).toBe(100);
    expect(o[2]).toBe(350);
    expect(o[1000]).toBe(100 * 999 + 250);
    c.retain(['m5']);
    expect(c.has('m1')).toBe(false);
  });

  it('finds the item at a position', () => {
    const o = new HeightCache(100).offsets(keys);
    expect(indexAt(o, 0)).toBe(0);
    expect(indexAt(o, 99.9)).toBe(0);
    expect(indexAt(o, 100)).toBe(1);
    expect(indexAt(o, 1e9)).toBe(999);
  });

  it('renders only what is near the viewport', () => {
    const o = new HeightCache(100).offsets(keys);
    expect(visibleRange(o, 0, 800, 0)).toEqual({ start: 0, end: 9 });
    expect(visibleRange(o, 50_000, 800, 200)).toEqual({ start: 498, end: 511 });
    const end = visibleRange(o, 99_200, 800, 400);
    expect(end.end).toBe(1000);
    expect(end.end - end.start).toBeLessThan(20);
    expect(visibleRange(new HeightCache(100).offsets([]), 0, 800, 100)).toEqual({ start: 0, end: 0 });
  });

  it('knows when the list is at the bottom', () => {
    expect(atBottom(900, 100, 1000)).toBe(true);
    expect(atBottom(860, 100, 1000)).toBe(true);
    expect(atBottom(500, 100, 1000)).toBe(false);
  });
});
