import { describe, expect, it } from 'vitest';

import {
  colorAt,
  colorTable,
  cssGradient,
  hexToRgb,
  luminance,
  rgbToHex,
  tOfColor,
  VIRIDIS_STOPS,
} from './colormap.ts';

describe('the colour scale', () => {
  it('runs from viridis dark violet to yellow through its stops', () => {
    expect(rgbToHex(colorAt(0))).toBe('#440154');
    expect(rgbToHex(colorAt(1))).toBe('#fde725');
    expect(rgbToHex(colorAt(0.5))).toBe('#21918c');
    VIRIDIS_STOPS.forEach((hex, i) => expect(rgbToHex(colorAt(i / 10))).toBe(hex));
  });

  it('clamps and treats NaN as the low end', () => {
    expect(colorAt(-1)).toEqual(colorAt(0));
    expect(colorAt(7)).toEqual(colorAt(1));
    expect(colorAt(NaN)).toEqual(colorAt(0));
  });

  it('is perceptually ordered: lightness rises strictly along the scale (readable without hue)', () => {
    let last = -1;
    for (let i = 0; i <= 200; i++) {
      const l = luminance(colorAt(i / 200));
      expect(l).toBeGreaterThan(last);
      last = l;
    }
  });

  it('can be read back: tOfColor inverts colorAt', () => {
    for (const t of [0, 0.07, 0.33, 0.5, 0.81, 1]) expect(Math.abs(tOfColor(colorAt(t)) - t)).toBeLessThan(0.006);
  });

  it('has a lookup table and a CSS gradient for legends', () => {
    const table = colorTable(256);
    expect(table).toHaveLength(256);
    expect(table[0]).toBe('#440154');
    expect(table[255]).toBe('#fde725');
    expect(cssGradient()).toMatch(/^linear-gradient\(to right, #440154 0%, .* #fde725 100%\)$/);
    expect(hexToRgb('#102030')).toEqual([16, 32, 48]);
  });
});
