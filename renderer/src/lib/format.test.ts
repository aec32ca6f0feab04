import { describe, expect, it } from 'vitest';

import { formatBytes, formatEta, formatParams, formatRate, fraction, saving } from './format.ts';

describe('numbers for people', () => {
  it('formats the time left from TaskProgress.etaMs', () => {
    expect(formatEta(null)).toBe('estimating time left…');
    expect(formatEta(0)).toBe('almost done');
    expect(formatEta(1200)).toBe('2 s left');
    expect(formatEta(59_000)).toBe('59 s left');
    expect(formatEta(185_000)).toBe('3 min 5 s left');
    expect(formatEta(2 * 3600_000 + 60_000)).toBe('2 h 1 min left');
  });

  it('formats bytes, rates, fractions and savings', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(240_640)).toBe('235 KiB');
    expect(formatBytes(4.3 * 2 ** 20)).toBe('4.3 MiB');
    expect(formatBytes(-2048)).toBe('-2 KiB');
    expect(formatBytes(1.5 * 2 ** 30)).toBe('1.5 GiB');
    expect(formatBytes(null)).toBe('–');
    expect(formatRate(12.345)).toBe('12.3 tokens/s');
    expect(formatRate(1342.2)).toBe('1342 tokens/s');
    expect(formatRate(null)).toBe('');
    expect(fraction(5, 10)).toBe(0.5);
    expect(fraction(5, 0)).toBe(0);
    expect(saving(1000, 300)).toEqual({ bytes: 700, fraction: 0.7 });
    expect(saving(null, 3)).toBeNull();
    expect(formatParams(7_240_000_000)).toBe('7.2B');
  });
});
