// The generator's only source of randomness: mulberry32, a small seeded PRNG, so the same seed gives
// byte-identical cases on every machine (Math.random is never used).

/** A seeded stream of numbers in [0, 1) with the draws the tasks need. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** mulberry32's next value in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** A seed for a stream of its own (a part of a case that is rebuilt several times the same way). */
  seed(): number {
    return this.int(4294967296);
  }

  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)];
  }

  /** A shuffled copy (Fisher–Yates). */
  shuffle<T>(xs: readonly T[]): T[] {
    const out = [...xs];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }

  /** A number of exactly `digits` digits (no leading zero). */
  digits(digits: number): string {
    return String(10 ** (digits - 1) + this.int(9 * 10 ** (digits - 1)));
  }

  /** `n` lowercase letters. */
  letters(n: number, alphabet = 'abcdefghijklmnopqrstuvwxyz'): string {
    let s = '';
    for (let i = 0; i < n; i++) s += alphabet[this.int(alphabet.length)];
    return s;
  }

  /** A UUID-shaped hex string (8-4-4-4-12), as RULER's uuid values. */
  uuid(): string {
    return [8, 4, 4, 4, 12].map((n) => this.letters(n, '0123456789abcdef')).join('-');
  }

  /** `n` distinct values of `draw` (which must be able to make that many). */
  distinct(n: number, draw: () => string, avoid: ReadonlySet<string> = new Set()): string[] {
    const seen = new Set<string>();
    while (seen.size < n) {
      const x = draw();
      if (!avoid.has(x)) seen.add(x);
    }
    return [...seen];
  }
}
