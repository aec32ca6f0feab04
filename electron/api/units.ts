// Bytes for people, in one unit system everywhere (binary: KiB, MiB, GiB, TiB), the core's messages and the
// UI alike, so that "4.3 MiB" never stands beside "4.30 MB".

const UNITS = ['KiB', 'MiB', 'GiB', 'TiB'] as const;

/** 5.2 GiB, 310.4 MiB, 32 KiB, 100 B. */
export function formatBytes(n: number): string {
  const sign = n < 0 ? '-' : '';
  let v = Math.abs(n);
  if (v < 1024) return `${sign}${Math.round(v)} B`;
  let u = -1;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  // KiB without a trailing ".0" (32 KiB); the larger units keep their one decimal.
  return `${sign}${u === 0 ? Number(v.toFixed(1)) : v.toFixed(1)} ${UNITS[u]}`;
}
