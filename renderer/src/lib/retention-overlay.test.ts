import { describe, expect, it } from 'vitest';

import { pageRetention, retentionAlpha, scaleMax, segmentsOf, shadeOf, windowStartOn } from './retention-overlay.ts';

const p = (page: number, start: number, end: number, retention: number) => ({ page, start, end, retention });

describe('the retention scale', () => {
  it('is topped by the highest value shown, so low values stay visible', () => {
    expect(scaleMax([p(1, 0, 5, 0.03), p(2, 0, 5, 0.6)])).toBe(0.6);
    expect(scaleMax([])).toBe(0.01);
    // Nothing kept: no tint at all (a page kept at 0% must not look kept).
    expect(retentionAlpha(0, 0.6)).toBe(0);
    // 3% next to 60%: visible, well apart from nothing.
    expect(retentionAlpha(0.03, 0.6)).toBeGreaterThan(0.15);
    // A 2-page document whose page 1 is at 3% and nothing higher: page 1 is the top of the scale.
    expect(retentionAlpha(0.03, scaleMax([p(1, 0, 5, 0.03)]))).toBeCloseTo(0.7);
    expect(retentionAlpha(0.6, 0.6)).toBeGreaterThan(retentionAlpha(0.3, 0.6));
  });

  it('places the window: from its start on its page, the whole of later pages, nothing before', () => {
    const w = { page: 2, start: 40, tokens: 16 };
    expect(windowStartOn(1, w)).toBeNull();
    expect(windowStartOn(2, w)).toBe(40);
    expect(windowStartOn(3, w)).toBe(0);
    expect(windowStartOn(2, null)).toBeNull();
  });

  it('shades a range by the passages it meets (length-weighted), the window, citations and hits', () => {
    const passages = [p(1, 0, 10, 0.2), p(1, 10, 20, 0.6)];
    expect(shadeOf({ start: 5, end: 15 }, passages, null).retention).toBeCloseTo(0.4);
    expect(shadeOf({ start: 20, end: 30 }, passages, null).retention).toBeNull();
    expect(shadeOf({ start: 10, end: 20 }, passages, 12).window).toBe(true);
    expect(shadeOf({ start: 10, end: 20 }, passages, 18).window).toBe(false);
    const cited = [
      { start: 0, end: 4, share: 0.3 },
      { start: 3, end: 8, share: 0.7 },
    ];
    expect(shadeOf({ start: 2, end: 6 }, passages, null, cited).cited).toBe(0.7);
    expect(shadeOf({ start: 9, end: 12 }, passages, null, cited).cited).toBeNull();
    expect(shadeOf({ start: 9, end: 12 }, passages, null, [], [{ start: 11, end: 13 }]).hit).toBe(true);
  });

  it('cuts a page into runs at every edge', () => {
    const segs = segmentsOf('abcdefghijklmnopqrst', [p(1, 0, 5, 0.1), p(1, 5, 10, 0.1), p(1, 12, 20, 0.5)], 16, [
      { start: 2, end: 3, share: 1 },
    ]);
    expect(segs.map((s) => [s.start, s.end, s.retention, s.window, s.cited])).toEqual([
      [0, 2, 0.1, false, null],
      [2, 3, 0.1, false, 1],
      [3, 5, 0.1, false, null],
      [5, 10, 0.1, false, null],
      [10, 12, null, false, null],
      [12, 16, 0.5, false, null],
      [16, 20, 0.5, true, null],
    ]);
    expect(pageRetention([p(1, 0, 10, 0.2), p(1, 10, 40, 0.6), p(2, 0, 5, 1)])).toEqual(
      new Map([
        [1, 0.5],
        [2, 1],
      ]),
    );
  });
});
