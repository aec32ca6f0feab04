// Numbers for people: bytes, percentages, durations, token counts.
import { formatBytes as formatBinaryBytes } from '../../../electron/api/units.ts';

/** Bytes in binary units (electron/api/units.ts: the core's messages use the same); '–' when unknown. */
export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '–';
  return formatBinaryBytes(n);
}

export function formatPercent(fraction: number, digits = 0): string {
  if (!Number.isFinite(fraction)) return '–';
  return `${(fraction * 100).toFixed(digits)}%`;
}

export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

/** Milliseconds left as "12 s left", "3 min 5 s left", "about 2 h left"; null: not yet known. */
export function formatEta(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return 'estimating time left…';
  if (ms <= 0) return 'almost done';
  const s = Math.ceil(ms / 1000);
  if (s < 60) return `${s} s left`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s left`;
  const h = Math.floor(m / 60);
  return `${h} h ${m % 60} min left`;
}

export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return '–';
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

export function formatRate(tokensPerSecond: number | null | undefined): string {
  if (tokensPerSecond === null || tokensPerSecond === undefined || !Number.isFinite(tokensPerSecond)) return '';
  return `${tokensPerSecond >= 100 ? tokensPerSecond.toFixed(0) : tokensPerSecond.toFixed(1)} tokens/s`;
}

/** Progress as a fraction in [0, 1]; 0 when the total is unknown. */
export function fraction(done: number, total: number): number {
  return total > 0 ? Math.min(1, Math.max(0, done / total)) : 0;
}

/** The saving of a compressed cache: bytes and fraction saved. */
export function saving(
  full: number | null | undefined,
  kept: number | null | undefined,
): { bytes: number; fraction: number } | null {
  if (!full || kept === null || kept === undefined) return null;
  return { bytes: full - kept, fraction: (full - kept) / full };
}

export function formatParams(n: number | null): string {
  if (!n) return '–';
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(n >= 1e8 ? 0 : 1)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(0)}K`;
  return String(n);
}
