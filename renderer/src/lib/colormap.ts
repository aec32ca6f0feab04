// A perceptually uniform, colour-blind-safe sequential scale (viridis: dark violet -> blue -> green ->
// yellow, lightness rising monotonically), written as 11 stops sampled evenly and interpolated linearly.
// The heatmaps, their legends and the tests all read colours from here.

export type Rgb = readonly [number, number, number];

/** Viridis sampled at t = 0, 0.1, ..., 1. */
export const VIRIDIS_STOPS: readonly string[] = [
  '#440154',
  '#482475',
  '#414487',
  '#355f8d',
  '#2a788e',
  '#21918c',
  '#22a884',
  '#44bf70',
  '#7ad151',
  '#bddf26',
  '#fde725',
];

const STOPS: Rgb[] = VIRIDIS_STOPS.map(hexToRgb);

export function hexToRgb(hex: string): Rgb {
  const n = parseInt(hex.replace('#', ''), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

export function rgbToHex([r, g, b]: Rgb): string {
  return '#' + [r, g, b].map((v) => Math.round(v).toString(16).padStart(2, '0')).join('');
}

/** The colour at t in [0, 1] (clamped; NaN maps to 0). */
export function colorAt(t: number): Rgb {
  const x = Number.isFinite(t) ? Math.min(1, Math.max(0, t)) : 0;
  const f = x * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(f));
  const u = f - i;
  const a = STOPS[i],
    b = STOPS[i + 1];
  return [
    Math.round(a[0] + (b[0] - a[0]) * u),
    Math.round(a[1] + (b[1] - a[1]) * u),
    Math.round(a[2] + (b[2] - a[2]) * u),
  ];
}

/** A lookup table of n CSS colours, for drawing many cells without string work per cell. */
export function colorTable(n = 256): string[] {
  return Array.from({ length: n }, (_, i) => rgbToHex(colorAt(i / (n - 1))));
}

/** Inverse of colorAt: the t whose colour is nearest to rgb (used by tests reading pixels back). */
export function tOfColor(rgb: Rgb, steps = 1000): number {
  let best = 0,
    bestD = Infinity;
  for (let i = 0; i <= steps; i++) {
    const c = colorAt(i / steps);
    const d = (c[0] - rgb[0]) ** 2 + (c[1] - rgb[1]) ** 2 + (c[2] - rgb[2]) ** 2;
    if (d < bestD) {
      bestD = d;
      best = i / steps;
    }
  }
  return best;
}

/** Relative luminance (WCAG), to pick readable text on a cell. */
export function luminance([r, g, b]: Rgb): number {
  const lin = (v: number) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

/** A CSS linear-gradient of the scale, for legends. */
export function cssGradient(direction = 'to right'): string {
  return `linear-gradient(${direction}, ${VIRIDIS_STOPS.map((c, i) => `${c} ${(i * 10).toFixed(0)}%`).join(', ')})`;
}
