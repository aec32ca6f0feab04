// The quant kernels through the binding's `ops`: every ISA against the scalar reference on random blocks,
// the scalar reference against float64 sums, quantize→dequantize error bounds, hand-built known-answer
// blocks for every format (catching a layout misunderstanding that the scalar and SIMD code would share),
// and argument validation. Block layouts: ggml's (ggml-common.h), restated here independently.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { loadAddon, type EngineError, type OpsBinding } from '../electron/engine/binding.ts';
import { layout, T, WEIGHT_TYPES } from './helpers/ggml-types.ts';
import { dequantize as refDequantize } from './helpers/quant-ref.ts';

const ops: OpsBinding = loadAddon().ops;
const isas = ops.isas();

const ACTIVATION_TYPES = [T.F32, T.F16, T.BF16, T.Q8_0, T.Q8_1, T.Q8_K];
const ALL_TYPES = [...WEIGHT_TYPES, T.Q8_1, T.Q8_K];
const VEC_DOT_TYPE: Record<number, number> = {
  [T.F32]: T.F32,
  [T.F16]: T.F16,
  [T.BF16]: T.BF16,
  [T.Q4_0]: T.Q8_0,
  [T.Q5_0]: T.Q8_0,
  [T.Q8_0]: T.Q8_0,
  [T.Q4_1]: T.Q8_1,
  [T.Q5_1]: T.Q8_1,
  [T.Q4_K]: T.Q8_K,
  [T.Q5_K]: T.Q8_K,
  [T.Q6_K]: T.Q8_K,
  [T.Q2_K]: T.Q8_K,
  [T.Q3_K]: T.Q8_K,
  [T.IQ4_NL]: T.Q8_0,
  [T.IQ4_XS]: T.Q8_K,
};
const name = (t: number) => layout(t).name;

// ---------------------------------------------------------------------------------------------------
// Helpers: a seeded PRNG, fp16 decoding, byte views, random blocks

function prng(seed: number) {
  let s = seed >>> 0 || 1;
  const next = () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
  return {
    u32: next,
    int: (lo: number, hi: number) => lo + (next() % (hi - lo + 1)), // inclusive
    float: () => next() / 4294967296,
    normal() {
      const u = (next() + 1) / 4294967297,
        v = next() / 4294967296;
      return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    },
  };
}
type Rng = ReturnType<typeof prng>;

function f16(h: number): number {
  const sign = h & 0x8000 ? -1 : 1,
    exp = (h >> 10) & 31,
    mant = h & 1023;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}
const u16 = (b: Uint8Array, o: number) => b[o] | (b[o + 1] << 8);
const i8 = (v: number) => (v << 24) >> 24;
const put16 = (b: Uint8Array, o: number, v: number) => {
  b[o] = v & 255;
  b[o + 1] = (v >> 8) & 255;
};
const bits = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);

// An fp16 of moderate magnitude (2^(emin-15) .. 2^(emax-14)): no NaN, inf or subnormal.
function saneF16(r: Rng, emin = 8, emax = 16): number {
  const sign = r.u32() & 1 ? 0x8000 : 0;
  return sign | (r.int(emin, emax) << 10) | r.int(0, 1023);
}
const q8 = (r: Rng) => r.int(-127, 127) & 255; // the Q8 quantizers produce -127..127, never -128

// fp16 bits of x (round-to-nearest-even), through the F16 quantizer: checked on its own by the F16
// known answers and the round-trip test.
const roundF16 = (x: number) => u16(ops.quantize(T.F16, Float32Array.of(x), 'scalar'), 0);

/** Random bytes forming n elements of `type`, with sane scales and consistent sums. */
function randomRow(type: number, n: number, r: Rng): Uint8Array {
  const { block, bytes } = layout(type);
  const nb = n / block;
  const out = new Uint8Array(nb * bytes);
  for (let i = 0; i < out.length; i++) out[i] = r.u32() & 255;
  const dv = new DataView(out.buffer);
  for (let ib = 0; ib < nb; ib++) {
    const o = ib * bytes;
    switch (type) {
      case T.F32:
        dv.setFloat32(o, r.normal() * 2, true);
        break;
      case T.F16:
        put16(out, o, saneF16(r, 5, 20));
        break;
      case T.BF16:
        put16(out, o, (r.u32() & 0x8000) | (r.int(118, 132) << 7) | r.int(0, 127));
        break;
      case T.Q4_0:
      case T.Q5_0:
        put16(out, o, saneF16(r));
        break;
      case T.Q4_1:
      case T.Q5_1:
      case T.Q4_K:
      case T.Q5_K:
        put16(out, o, saneF16(r));
        put16(out, o + 2, saneF16(r));
        break;
      case T.Q6_K:
        put16(out, o + 208, saneF16(r));
        break;
      case T.Q2_K:
        put16(out, o + 80, saneF16(r));
        put16(out, o + 82, saneF16(r));
        break;
      case T.Q3_K:
        put16(out, o + 108, saneF16(r));
        break;
      case T.IQ4_NL:
      case T.IQ4_XS:
        put16(out, o, saneF16(r));
        break;
      case T.Q8_0:
        put16(out, o, saneF16(r));
        for (let i = 0; i < 32; i++) out[o + 2 + i] = q8(r);
        break;
      case T.Q8_1: {
        const d = saneF16(r);
        put16(out, o, d);
        let sum = 0;
        for (let i = 0; i < 32; i++) {
          out[o + 4 + i] = q8(r);
          sum += i8(out[o + 4 + i]);
        }
        put16(out, o + 2, roundF16(sum * f16(d)));
        break;
      }
      case T.Q8_K: {
        dv.setFloat32(o, (r.u32() & 1 ? -1 : 1) * (0.001 + r.float()) * 2 ** -r.int(0, 7), true);
        for (let g = 0; g < 16; g++) {
          let sum = 0;
          for (let i = 0; i < 16; i++) {
            out[o + 4 + 16 * g + i] = q8(r);
            sum += i8(out[o + 4 + 16 * g + i]);
          }
          dv.setInt16(o + 260 + 2 * g, sum, true);
        }
        break;
      }
    }
  }
  return out;
}

function randomFloats(n: number, r: Rng, scale = 1): Float32Array {
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) x[i] = r.normal() * scale;
  return x;
}

/** float64 Σ w·x over dequantized values (scalar dequantize), plus Σ|w·x| for tolerances. */
function exactDot(type: number, w: Uint8Array, x: Uint8Array, n: number) {
  const xt = VEC_DOT_TYPE[type];
  const wd = ops.dequantize(type, w, n, 'scalar'),
    xd = ops.dequantize(xt, x, n, 'scalar');
  let sum = 0,
    mag = 0;
  for (let i = 0; i < n; i++) {
    sum += wd[i] * xd[i];
    mag += Math.abs(wd[i] * xd[i]);
  }
  if (xt === T.Q8_1) {
    // The format computes the offset term as m·s with s = fp16(d·Σq) stored in the activation block,
    // not m·d·Σq; the reference follows the format.
    const wb = layout(type).bytes;
    for (let ib = 0; ib < n / 32; ib++) {
      const m = f16(u16(w, ib * wb + 2)),
        d = f16(u16(x, ib * 36)),
        s = f16(u16(x, ib * 36 + 2));
      let q = 0;
      for (let i = 0; i < 32; i++) q += i8(x[ib * 36 + 4 + i]);
      sum += m * (s - d * q);
    }
  }
  return { sum, mag };
}

// Dot products: integer sums per block are exact, so scalar, SIMD and float64 differ only by the float
// accumulation over at most 64 blocks / 1000 elements (about 1e-7 of Σ|w·x| in practice).
const DOT_TOL = 2e-6;

function counts(type: number): number[] {
  const b = layout(type).block;
  return b === 1 ? [1, 3, 17, 64, 100, 1000] : [1, 3, 17, 64].map((k) => k * b);
}

function expectCode(fn: () => unknown, code: string) {
  assert.throws(fn, (e: EngineError) => {
    assert.equal(e.code, code, `expected ${code}, got ${e.code}: ${e.message}`);
    return true;
  });
}

// ---------------------------------------------------------------------------------------------------

describe('quant: ISAs and types', () => {
  test('isas lists scalar first and the best ISA', () => {
    assert.equal(isas[0], 'scalar');
    assert.ok(isas.includes(ops.bestIsa()));
    for (const i of isas) assert.ok(['scalar', 'avx2', 'avx512', 'neon'].includes(i));
    if (process.arch === 'x64') assert.ok(!isas.includes('neon'));
    if (process.arch === 'arm64') assert.ok(isas.includes('neon'));
  });

  test("vecDotType is ggml's vec_dot_type", () => {
    for (const t of WEIGHT_TYPES) assert.equal(ops.vecDotType(t), VEC_DOT_TYPE[t], name(t));
  });

  test("the test helpers' type ids are the app's table (electron/models/gguf-header.ts GGML_TYPES)", () => {
    for (const [typeName, id] of Object.entries(T)) assert.equal(layout(id).name, typeName);
  });
});

describe('quant: every ISA against the scalar reference', () => {
  for (const type of ALL_TYPES) {
    test(`${name(type)} dequantize is bit-identical`, () => {
      const r = prng(1000 + type);
      for (const n of counts(type)) {
        const w = randomRow(type, n, r);
        const ref = ops.dequantize(type, w, n, 'scalar');
        for (const v of ref) assert.ok(Number.isFinite(v));
        for (const isa of isas) {
          assert.deepEqual(bits(ops.dequantize(type, w, n, isa)), bits(ref), `${name(type)} ${isa} n=${n}`);
        }
      }
    });

    // The SIMD quantizers reproduce the scalar arithmetic exactly: the same scale computations, roundf()
    // (half away from zero) rebuilt from truncation for Q8_0/Q8_1, round-half-even for Q8_K and the
    // float conversions. So no one-step allowance is needed: any difference is a bug.
    test(`${name(type)} quantize is identical on every ISA`, () => {
      const r = prng(2000 + type);
      for (const n of counts(type)) {
        for (const scale of [1, 1e-3, 300]) {
          const x = randomFloats(n, r, scale);
          if (n > 8) x[5] = 0;
          const ref = ops.quantize(type, x, 'scalar');
          assert.equal(ref.length, (n / layout(type).block) * layout(type).bytes);
          for (const isa of isas) assert.deepEqual(ops.quantize(type, x, isa), ref, `${name(type)} ${isa} n=${n}`);
        }
      }
    });
  }

  test('activation quantizers agree on ties and zero blocks', () => {
    // Exact half-way products (x * 127 / amax = k + 0.5), an all-zero block, and Q8_K's sign tie
    // (+a and -a both present: the first decides the sign of d).
    const x = new Float32Array(512);
    for (let i = 0; i < 256; i++) x[i] = (i % 64) - 32 + 0.5;
    x[0] = 127;
    x[300] = -3;
    x[400] = 3;
    for (const type of ACTIVATION_TYPES) {
      const ref = ops.quantize(type, x, 'scalar');
      for (const isa of isas) assert.deepEqual(ops.quantize(type, x, isa), ref, `${name(type)} ${isa}`);
    }
    const q = ops.quantize(T.Q8_K, x, 'scalar');
    const d = new DataView(q.buffer, q.byteOffset).getFloat32(292, true);
    assert.ok(d > 0, 'second Q8_K block: -3 comes first, so max = -3 and d = 3/127 > 0');
  });

  for (const type of WEIGHT_TYPES) {
    test(`${name(type)} vec_dot: ISAs match scalar, scalar matches float64`, () => {
      const r = prng(3000 + type);
      const xt = VEC_DOT_TYPE[type];
      for (const n of counts(type)) {
        for (let rep = 0; rep < 3; rep++) {
          const w = randomRow(type, n, r),
            x = randomRow(xt, n, r);
          const { sum, mag } = exactDot(type, w, x, n);
          const ref = ops.vecDot(type, w, x, n, 'scalar');
          assert.ok(Math.abs(ref - sum) <= DOT_TOL * mag, `${name(type)} scalar n=${n}: ${ref} vs ${sum}`);
          for (const isa of isas) {
            const got = ops.vecDot(type, w, x, n, isa);
            assert.ok(Math.abs(got - ref) <= DOT_TOL * mag, `${name(type)} ${isa} n=${n}: ${got} vs ${ref}`);
          }
        }
      }
    });

    if (type === T.Q8_0) {
      test('Q8_0 weights may hold -128 (only activations are limited to ±127)', () => {
        const r = prng(3500);
        const n = 17 * 32;
        const w = randomRow(T.Q8_0, n, r),
          x = randomRow(T.Q8_0, n, r);
        for (let ib = 0; ib < n / 32; ib++) for (let i = 0; i < 32; i += 3) w[ib * 34 + 2 + i] = 0x80;
        const { sum, mag } = exactDot(T.Q8_0, w, x, n);
        for (const isa of isas) {
          const got = ops.vecDot(T.Q8_0, w, x, n, isa);
          assert.ok(Math.abs(got - sum) <= DOT_TOL * mag, `${isa}: ${got} vs ${sum}`);
        }
      });
    }

    test(`${name(type)} vec_dot on quantized activations`, () => {
      const r = prng(4000 + type);
      const xt = VEC_DOT_TYPE[type];
      const n = 8 * 256;
      const w = ops.quantize(type, randomFloats(n, r), 'scalar');
      for (const isa of isas) {
        const x = ops.quantize(xt, randomFloats(n, r), isa);
        const { sum, mag } = exactDot(type, w, x, n);
        const got = ops.vecDot(type, w, x, n, isa);
        assert.ok(Math.abs(got - sum) <= DOT_TOL * mag, `${name(type)} ${isa}: ${got} vs ${sum}`);
      }
    });
  }
});

// ---------------------------------------------------------------------------------------------------

describe('quant: quantize → dequantize error bounds', () => {
  const E16 = 2 ** -11; // relative rounding of an fp16 scale

  // Per-block bound on |x - x'| for the block formats, from the format's step and its fp16 scales.
  const blockBound: Record<number, (blk: Float32Array) => number> = {
    // d = amax/127, |err| <= d/2 plus 127·|d - fp16(d)|
    [T.Q8_0]: (b) => (amaxOf(b) / 127) * (0.5 + 127 * E16),
    [T.Q8_1]: (b) => (amaxOf(b) / 127) * (0.5 + 127 * E16),
    // d = -1/(127/max) kept in float32
    [T.Q8_K]: (b) => (amaxOf(b) / 127) * 0.5001,
    // d = max/-8: the far end (+8 steps) is clamped to 7, so up to one whole step
    [T.Q4_0]: (b) => (amaxOf(b) / 8) * (1 + 16 * E16),
    [T.Q5_0]: (b) => (amaxOf(b) / 16) * (1 + 32 * E16),
    // d = range/15 (31), half a step plus the rounding of d and of the min
    [T.Q4_1]: (b) => (rangeOf(b) / 15) * (0.5 + 15 * E16) + Math.abs(minOf(b)) * E16 + 1e-6 * amaxOf(b),
    [T.Q5_1]: (b) => (rangeOf(b) / 31) * (0.5 + 31 * E16) + Math.abs(minOf(b)) * E16 + 1e-6 * amaxOf(b),
  };
  // K-quants and IQ4: [RMS error / RMS, max error / amax] per (super-)block. Our quantizer reaches about
  // 0.08/0.095 (Q4_K), 0.04/0.05 (Q5_K) and 0.02/0.024 (Q6_K) on these inputs; on 64 super-blocks of
  // normal(0, 1) its worst blocks reach 0.30/0.42 (Q2_K: 4 levels), 0.16/0.23 (Q3_K: 8 levels), 0.10/0.13
  // (IQ4_NL, 32-element blocks) and 0.08/0.12 (IQ4_XS).
  const K_BOUNDS: Record<number, [number, number]> = {
    [T.Q4_K]: [0.1, 0.15],
    [T.Q5_K]: [0.05, 0.08],
    [T.Q6_K]: [0.025, 0.04],
    [T.Q2_K]: [0.35, 0.5],
    [T.Q3_K]: [0.19, 0.28],
    [T.IQ4_NL]: [0.13, 0.16],
    [T.IQ4_XS]: [0.1, 0.15],
  };
  const amaxOf = (b: Float32Array) => b.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const minOf = (b: Float32Array) => b.reduce((m, v) => Math.min(m, v), Infinity);
  const rangeOf = (b: Float32Array) => b.reduce((m, v) => Math.max(m, v), -Infinity) - minOf(b);

  for (const type of ALL_TYPES) {
    test(`${name(type)} round trip`, () => {
      const r = prng(5000 + type);
      const { block } = layout(type);
      for (const n of counts(type)) {
        for (const [scale, offset] of [
          [1, 0],
          [0.01, 0],
          [50, 0],
          [1, 3],
        ]) {
          const x = randomFloats(n, r, scale).map((v) => v + offset);
          for (const isa of isas) {
            const y = ops.dequantize(type, ops.quantize(type, x, isa), n, isa);
            if (type === T.F32) {
              assert.deepEqual(y, x);
            } else if (type === T.F16 || type === T.BF16) {
              const rel = type === T.F16 ? 2 ** -11 : 2 ** -8;
              // half an ulp of the format; F16 subnormals (below 2^-14) have a fixed step of 2^-24
              for (let i = 0; i < n; i++) {
                assert.ok(
                  Math.abs(y[i] - x[i]) <= Math.max(rel * Math.abs(x[i]), 2 ** -25),
                  `${name(type)} ${x[i]} -> ${y[i]}`,
                );
              }
            } else if (blockBound[type]) {
              for (let b = 0; b < n / block; b++) {
                const xb = x.subarray(b * block, (b + 1) * block),
                  yb = y.subarray(b * block, (b + 1) * block);
                const bound = blockBound[type](xb);
                for (let i = 0; i < block; i++) {
                  assert.ok(
                    Math.abs(xb[i] - yb[i]) <= bound,
                    `${name(type)} ${isa} block ${b}[${i}]: ${xb[i]} -> ${yb[i]}, bound ${bound}`,
                  );
                }
              }
            } else {
              // K-quants: the scale search is ours (not ggml's), so bound the quality rather than a step:
              // RMS error relative to the super-block's RMS, and the largest error relative to its amax.
              const [rmsMax, maxRel] = K_BOUNDS[type];
              for (let b = 0; b < n / block; b++) {
                const xb = x.subarray(b * block, (b + 1) * block),
                  yb = y.subarray(b * block, (b + 1) * block);
                let se = 0,
                  sx = 0,
                  emax = 0;
                for (let i = 0; i < block; i++) {
                  se += (xb[i] - yb[i]) ** 2;
                  sx += xb[i] ** 2;
                  emax = Math.max(emax, Math.abs(xb[i] - yb[i]));
                }
                assert.ok(Math.sqrt(se / sx) <= rmsMax, `${name(type)} rms error ${Math.sqrt(se / sx)}`);
                assert.ok(emax <= maxRel * amaxOf(xb), `${name(type)} max error ${emax} of amax ${amaxOf(xb)}`);
              }
            }
          }
        }
      }
    });
  }

  test('zero input quantizes to zeros', () => {
    for (const type of ALL_TYPES) {
      const n = layout(type).block === 1 ? 8 : layout(type).block;
      for (const isa of isas) {
        const y = ops.dequantize(type, ops.quantize(type, new Float32Array(n), isa), n, isa);
        assert.ok(
          y.every((v) => v === 0),
          `${name(type)} ${isa}`,
        );
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------------
// The independent reference (test/helpers/quant-ref.ts, float64) on random blocks: every value it decodes
// is exact before the last operation, so the engine's float32 must equal its rounding to float32. Random
// bytes reach every scale, min, code book index and high bit; the counts include one block, odd numbers of
// blocks and a row of 64 blocks.

describe('quant: decoding equals the TS reference (quant-ref.ts)', () => {
  for (const type of [
    T.Q4_0,
    T.Q4_1,
    T.Q5_0,
    T.Q5_1,
    T.Q8_0,
    T.Q4_K,
    T.Q5_K,
    T.Q6_K,
    T.Q2_K,
    T.Q3_K,
    T.IQ4_NL,
    T.IQ4_XS,
  ]) {
    test(`${name(type)}`, () => {
      const r = prng(6000 + type);
      for (const n of [...counts(type), 5 * layout(type).block]) {
        const w = randomRow(type, n, r);
        const want = Float32Array.from(refDequantize(type, w, n));
        for (const isa of isas) {
          const got = ops.dequantize(type, w, n, isa);
          for (let i = 0; i < n; i++) {
            if (got[i] !== want[i])
              assert.fail(`${name(type)} ${isa} n=${n} element ${i}: ${got[i]}, expected ${want[i]}`);
          }
        }
      }
    });
  }
});

// ---------------------------------------------------------------------------------------------------
// Known answers: blocks written byte by byte from the layouts, values worked out by hand.

describe('quant: known-answer blocks', () => {
  function checkDequant(type: number, bytes: number[] | Uint8Array, expect: ArrayLike<number>, where?: number[]) {
    const data = Uint8Array.from(bytes);
    assert.equal(data.length, layout(type).bytes * (expect.length / layout(type).block));
    for (const isa of isas) {
      const y = ops.dequantize(type, data, expect.length, isa);
      for (const i of where ?? Array.from(expect, (_, k) => k)) {
        assert.equal(y[i], expect[i], `${name(type)} ${isa} element ${i}`);
      }
    }
  }
  const range = (n: number, f: (i: number) => number) => Array.from({ length: n }, (_, i) => f(i));

  test('F32, F16, BF16', () => {
    checkDequant(T.F32, [0, 0, 0xc0, 0x3f, 0, 0, 0, 0xc0], [1.5, -2]);
    // 0x3c00 = 1, 0xc000 = -2, 0x3555 = 1 + 341/1024 divided by 4, 0x0001 = 2^-24, 0x7bff = 65504
    checkDequant(
      T.F16,
      [0x00, 0x3c, 0x00, 0xc0, 0x55, 0x35, 0x01, 0x00, 0xff, 0x7b],
      [1, -2, (1 + 341 / 1024) / 4, 2 ** -24, 65504],
    );
    // 0x3f80 = 1, 0xc040 = -3, 0x4049 = 3.140625
    checkDequant(T.BF16, [0x80, 0x3f, 0x40, 0xc0, 0x49, 0x40], [1, -3, 3.140625]);
  });

  test('Q8_0 and Q8_1', () => {
    // d = 0x3800 = 0.5, qs[i] = i - 16
    checkDequant(
      T.Q8_0,
      [0x00, 0x38, ...range(32, (i) => (i - 16) & 255)],
      range(32, (i) => (i - 16) * 0.5),
    );
    // d = 0x3400 = 0.25, s ignored by dequantize, qs[i] = 100 - 7i
    checkDequant(
      T.Q8_1,
      [0x00, 0x34, 0x12, 0x34, ...range(32, (i) => (100 - 7 * i) & 255)],
      range(32, (i) => (100 - 7 * i) * 0.25),
    );
  });

  test('Q4_0 and Q4_1', () => {
    // d = 0x4000 = 2; byte j = j (low nibble: element j) | (15 - j) << 4 (element j + 16); x = d (q - 8)
    const qs = range(16, (j) => j | ((15 - j) << 4));
    checkDequant(
      T.Q4_0,
      [0x00, 0x40, ...qs],
      [
        -16, -14, -12, -10, -8, -6, -4, -2, 0, 2, 4, 6, 8, 10, 12, 14, 14, 12, 10, 8, 6, 4, 2, 0, -2, -4, -6, -8, -10,
        -12, -14, -16,
      ],
    );
    // d = 0x3800 = 0.5, m = 0xbc00 = -1; x = d q + m
    checkDequant(
      T.Q4_1,
      [0x00, 0x38, 0x00, 0xbc, ...qs],
      [
        -1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 6.5, 6, 5.5, 5, 4.5, 4, 3.5, 3, 2.5, 2, 1.5,
        1, 0.5, 0, -0.5, -1,
      ],
    );
  });

  test('Q5_0 and Q5_1', () => {
    // Q5_0: d = 0x3c00 = 1; qh = 0x80f0000f (bytes 0f 00 f0 80): bits 0-3, 20-23 and 31 set;
    // qs[j] = j | j << 4. Element j = j + 16·bit j - 16; element 16 + j = j + 16·bit(16 + j) - 16.
    checkDequant(
      T.Q5_0,
      [0x00, 0x3c, 0x0f, 0x00, 0xf0, 0x80, ...range(16, (j) => j | (j << 4))],
      [
        0, 1, 2, 3, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1, -16, -15, -14, -13, 4, 5, 6, 7, -8, -7, -6, -5,
        -4, -3, -2, 15,
      ],
    );
    // Q5_1: d = 0x3800 = 0.5, m = 0x4000 = 2; qh bits 0 and 16 (bytes 01 00 01 00);
    // qs[j] = (15 - j) | j << 4. Element 0 = (15 + 16)/2 + 2, element 16 = (0 + 16)/2 + 2.
    checkDequant(
      T.Q5_1,
      [0x00, 0x38, 0x00, 0x40, 0x01, 0x00, 0x01, 0x00, ...range(16, (j) => (15 - j) | (j << 4))],
      [
        17.5, 9, 8.5, 8, 7.5, 7, 6.5, 6, 5.5, 5, 4.5, 4, 3.5, 3, 2.5, 2, 10, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7,
        7.5, 8, 8.5, 9, 9.5,
      ],
    );
  });

  test('Q8_K', () => {
    // d = 0.125 (f32 0x3e000000), qs[i] = i % 255 - 127, bsums not used by dequantize
    const bytes = [0, 0, 0, 0x3e, ...range(256, (i) => ((i % 255) - 127) & 255), ...range(32, () => 0)];
    checkDequant(
      T.Q8_K,
      bytes,
      range(256, (i) => ((i % 255) - 127) * 0.125),
    );
  });

  // Q4_K / Q5_K scales: sc = [1, 2, 3, 4, 33, 47, 60, 63], m = [0, 5, 10, 63, 16, 31, 32, 48], packed as
  //   bytes 0-3:  sc[0..3] | (sc[4..7] >> 4) << 6  = 0x81 0x82 0xc3 0xc4
  //   bytes 4-7:  m[0..3]  | (m[4..7] >> 4) << 6   = 0x40 0x45 0x8a 0xff
  //   bytes 8-11: (sc[4..7] & 15) | (m[4..7] & 15) << 4 = 0x01 0xff 0x0c 0x0f
  const SC = [1, 2, 3, 4, 33, 47, 60, 63],
    MN = [0, 5, 10, 63, 16, 31, 32, 48];
  const KSCALES = [0x81, 0x82, 0xc3, 0xc4, 0x40, 0x45, 0x8a, 0xff, 0x01, 0xff, 0x0c, 0x0f];
  const K_QS = range(128, (i) => (i & 15) | (((i >> 3) & 15) << 4));

  test('Q4_K', () => {
    // d = 0x3c00 = 1, dmin = 0x3800 = 0.5; chunk c = bytes 32c..32c+31: low nibbles = sub-block 2c,
    // high nibbles = sub-block 2c + 1; x = d·sc[j]·q - dmin·m[j]
    const bytes = [0x00, 0x3c, 0x00, 0x38, ...KSCALES, ...K_QS];
    const expect = new Float64Array(256);
    const spots: [number, number][] = [
      [0, 0], // sub-block 0, q = 0
      [5, 5], // q = 5, sc 1
      [32, -2.5], // sub-block 1, q = qs[0] >> 4 = 0, -0.5·5
      [49, 1.5], // qs[17] >> 4 = 2: 2·2 - 2.5
      [67, 4], // sub-block 2, qs[35] & 15 = 3: 3·3 - 5
      [127, -3.5], // sub-block 3, qs[63] >> 4 = 7: 4·7 - 31.5
      [137, 289], // sub-block 4, qs[73] & 15 = 9: 33·9 - 8
      [180, 454.5], // sub-block 5, qs[84] >> 4 = 10: 47·10 - 15.5
      [207, 884], // sub-block 6, qs[111] & 15 = 15: 60·15 - 16
      [255, 921], // sub-block 7, qs[127] >> 4 = 15: 63·15 - 24
    ];
    for (const [i, v] of spots) expect[i] = v;
    checkDequant(
      T.Q4_K,
      bytes,
      expect,
      spots.map(([i]) => i),
    );
    // every element from the layout
    for (let i = 0; i < 256; i++) {
      const j = i >> 5,
        c = j >> 1,
        l = i & 31;
      const q = j & 1 ? K_QS[32 * c + l] >> 4 : K_QS[32 * c + l] & 15;
      expect[i] = SC[j] * q - 0.5 * MN[j];
    }
    checkDequant(T.Q4_K, bytes, expect);
  });

  test('Q5_K', () => {
    // as Q4_K plus qh[l] = 37·l mod 256: bit 2c of qh[l] is bit 4 of element 64c + l, bit 2c+1 that of
    // element 64c + 32 + l
    const QH = range(32, (l) => (37 * l) & 255);
    const bytes = [0x00, 0x3c, 0x00, 0x38, ...KSCALES, ...QH, ...K_QS];
    const expect = new Float64Array(256);
    const spots: [number, number][] = [
      [1, 17], // qs[1] & 15 = 1, qh[1] = 0b00100101 bit 0 → 17; 1·17
      [35, 29.5], // sub-block 1: qs[3] >> 4 = 0, qh[3] = 0b01101111 bit 1 → 16; 2·16 - 2.5
      [65, 46], // sub-block 2: qs[33] & 15 = 1, qh[1] bit 2 → 17; 3·17 - 5
      [99, 48.5], // sub-block 3: qs[35] >> 4 = 4, qh[3] bit 3 → 20; 4·20 - 31.5
      [227, 732], // sub-block 7: qs[99] >> 4 = 12, qh[3] bit 7 = 0; 63·12 - 24
    ];
    for (const [i, v] of spots) expect[i] = v;
    checkDequant(
      T.Q5_K,
      bytes,
      expect,
      spots.map(([i]) => i),
    );
    for (let i = 0; i < 256; i++) {
      const j = i >> 5,
        c = j >> 1,
        l = i & 31;
      const q = (j & 1 ? K_QS[32 * c + l] >> 4 : K_QS[32 * c + l] & 15) + 16 * ((QH[l] >> j) & 1);
      expect[i] = SC[j] * q - 0.5 * MN[j];
    }
    checkDequant(T.Q5_K, bytes, expect);
  });

  test('Q6_K', () => {
    // ql[i] = i, qh[i] = 5i mod 256, scales = [1, -1, 2, -2, ..., 7, -7, 127, -128], d = 0x3800 = 0.5 (at
    // the end). In half h, element 128h + l + 32k takes bits from ql[64h + l (+32 for k odd)] (low
    // nibble for k < 2, high for k >= 2) and bits 2k..2k+1 of qh[32h + l]; x = d·sc[e/16]·(q - 32).
    const QL = range(128, (i) => i),
      QH = range(64, (i) => (5 * i) & 255);
    const SC6 = [1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6, -6, 7, -7, 127, -128];
    const bytes = [...QL, ...QH, ...SC6.map((s) => s & 255), 0x00, 0x38];
    const expect = new Float64Array(256);
    const spots: [number, number][] = [
      [0, -16], // q = 0: 0.5·1·-32
      [1, -7.5], // ql[1] = 1, qh[1] = 5 → bits 0-1 = 1 → q = 17; 0.5·1·-15
      [33, -15], // group 2 (sc 2): ql[33] & 15 = 1, (qh[1] >> 2) & 3 = 1 → 17; 0.5·2·-15
      [66, -48], // group 4 (sc 3): ql[2] >> 4 = 0, (qh[2] = 10 >> 4) & 3 = 0 → 0; 0.5·3·-32
      [127, -6], // group 7 (sc -4): ql[63] >> 4 = 3, (qh[31] = 155 >> 6) & 3 = 2 → 35; 0.5·-4·3
      [224, 381], // group 14 (sc 127): ql[96] >> 4 = 6, (qh[32] = 160 >> 6) & 3 = 2 → 38; 0.5·127·6
      [255, 1600], // group 15 (sc -128): ql[127] >> 4 = 7, (qh[63] = 59 >> 6) & 3 = 0 → 7; 0.5·-128·-25
    ];
    for (const [i, v] of spots) expect[i] = v;
    checkDequant(
      T.Q6_K,
      bytes,
      expect,
      spots.map(([i]) => i),
    );
    for (let e = 0; e < 256; e++) {
      const h = e >> 7,
        k = (e >> 5) & 3,
        l = e & 31;
      const lo = QL[64 * h + l + (k & 1 ? 32 : 0)];
      const q = (k < 2 ? lo & 15 : lo >> 4) | (((QH[32 * h + l] >> (2 * k)) & 3) << 4);
      expect[e] = 0.5 * SC6[e >> 4] * (q - 32);
    }
    checkDequant(T.Q6_K, bytes, expect);
  });

  test('dot products of hand-built blocks', () => {
    const dot = (type: number, w: number[], x: number[], n: number, want: number) => {
      for (const isa of isas) {
        const got = ops.vecDot(type, Uint8Array.from(w), Uint8Array.from(x), n, isa);
        assert.ok(
          Math.abs(got - want) <= 1e-6 * Math.max(1, Math.abs(want)),
          `${name(type)} ${isa}: ${got} vs ${want}`,
        );
      }
    };
    const range8 = (f: (i: number) => number) => range(32, (i) => f(i) & 255);
    // Q8_0 · Q8_0: 0.5·(i - 16) against 1·1: 0.5·Σ(i - 16) = 0.5·(496 - 512) = -8
    dot(T.Q8_0, [0x00, 0x38, ...range8((i) => i - 16)], [0x00, 0x3c, ...range8(() => 1)], 32, -8);
    // Q4_0 · Q8_0: the Q4_0 known-answer block (values sum to -32, element 0 is -16) against x = 1 except
    // x[0] = -127: -32 - (-16)·1 + (-16)·(-127) = -32 + 16 + 2032 = 2016
    const qs4 = range(16, (j) => j | ((15 - j) << 4));
    dot(T.Q4_0, [0x00, 0x40, ...qs4], [0x00, 0x3c, 0x81, ...range(31, () => 1)], 32, 2016);
    // Q4_1 · Q8_1: d 0.5, m -1 (values -1 .. 6.5 as above, Σ values = 88) against x = 1: d·Σq·1 + m·s with
    // s = 32: 0.5·240 + (-1)·32 = 88
    dot(T.Q4_1, [0x00, 0x38, 0x00, 0xbc, ...qs4], [0x00, 0x3c, 0x00, 0x50, ...range(32, () => 1)], 32, 88);
    // Q6_K · Q8_K: every q = 32 + 1 (value d·sc), x = 2 everywhere, dx = 0.5: Σ_g 16·sc_g·1·(2·0.5)
    // with sc = all 3 and d = 1 → 256·3 = 768. ql = 1 (low nibble 1, high nibble 1) → q = 1 | 2 << 4 = 33
    // needs qh bits = 2 in every pair: qh = 0b10101010.
    const x8k = [0, 0, 0, 0x3f, ...range(256, () => 2), ...range(32, (i) => (i % 2 ? 0 : 32))];
    dot(
      T.Q6_K,
      [...range(128, () => 0x11), ...range(64, () => 0xaa), ...range(16, () => 3), 0x00, 0x3c],
      x8k,
      256,
      768,
    );
    // Q4_K · Q8_K: all q = 1 (qs = 0x11), d = 1, dmin = 0.5, scales/mins from KSCALES; x = 2, dx = 0.5,
    // bsums = 32: Σ_j 32·(sc_j·1 - 0.5·m_j)·1 = 32·(213 - 0.5·205) = 3536
    dot(T.Q4_K, [0x00, 0x3c, 0x00, 0x38, ...KSCALES, ...range(128, () => 0x11)], x8k, 256, 3536);
  });
});

// ---------------------------------------------------------------------------------------------------

describe('quant: argument validation', () => {
  const w32 = new Uint8Array(34);
  test('unknown and unsupported types', () => {
    expectCode(() => ops.dequantize(99, new Uint8Array(4), 1), 'UNSUPPORTED_TYPE');
    expectCode(() => ops.dequantize(4, new Uint8Array(4), 1), 'UNSUPPORTED_TYPE'); // removed Q4_2
    expectCode(() => ops.dequantize(40, new Uint8Array(148), 256), 'UNSUPPORTED_TYPE'); // Folio's Q4_K_R8: internal
    // IQ2_XXS: a real ggml type without kernels
    expectCode(() => ops.dequantize(T.IQ2_XXS, new Uint8Array(66), 256), 'UNSUPPORTED_TYPE');
    expectCode(() => ops.quantize(T.IQ2_XXS, new Float32Array(256)), 'UNSUPPORTED_TYPE');
    expectCode(() => ops.vecDotType(T.IQ2_XXS), 'UNSUPPORTED_TYPE');
    expectCode(() => ops.vecDotType(T.Q8_K), 'UNSUPPORTED_TYPE'); // an activation format has no dot of its own
    expectCode(() => ops.vecDot(T.Q8_1, new Uint8Array(36), new Uint8Array(36), 32), 'UNSUPPORTED_TYPE');
    expectCode(() => ops.vecDot(1000, w32, w32, 32), 'UNSUPPORTED_TYPE');
    expectCode(() => ops.dequantize(-1, w32, 32), 'INVALID_ARGUMENT');
    expectCode(() => ops.dequantize(8.5, w32, 32), 'INVALID_ARGUMENT');
  });

  test('counts and sizes', () => {
    expectCode(() => ops.dequantize(T.Q8_0, w32, 31), 'INVALID_ARGUMENT');
    expectCode(() => ops.dequantize(T.Q8_0, w32, 64), 'INVALID_ARGUMENT'); // buffer too short for n
    expectCode(() => ops.dequantize(T.Q8_0, new Uint8Array(35), 32), 'INVALID_ARGUMENT');
    expectCode(() => ops.dequantize(T.Q8_0, w32, -32), 'INVALID_ARGUMENT');
    expectCode(() => ops.quantize(T.Q4_K, new Float32Array(255)), 'INVALID_ARGUMENT');
    expectCode(() => ops.vecDot(T.Q4_0, new Uint8Array(18), new Uint8Array(18), 32), 'INVALID_ARGUMENT'); // x must be Q8_0
    expectCode(() => ops.vecDot(T.Q4_0, new Uint8Array(18), w32, 48), 'INVALID_ARGUMENT');
    expectCode(() => ops.vecDot(T.Q4_K, new Uint8Array(144), new Uint8Array(292), 128), 'INVALID_ARGUMENT');
    expectCode(() => ops.dequantize(T.F32, new Float32Array(1) as unknown as Uint8Array, 1), 'INVALID_ARGUMENT');
    expectCode(() => ops.quantize(T.F32, new Uint8Array(4) as unknown as Float32Array), 'INVALID_ARGUMENT');
  });

  test('isa names', () => {
    expectCode(() => ops.dequantize(T.Q8_0, w32, 32, 'sse9'), 'INVALID_ARGUMENT');
    expectCode(() => ops.quantize(T.Q8_0, new Float32Array(32), 'AVX2'), 'INVALID_ARGUMENT');
    for (const isa of ['scalar', 'avx2', 'avx512', 'neon']) {
      if (isas.includes(isa)) assert.equal(ops.vecDot(T.Q8_0, w32, w32, 32, isa), 0);
      else expectCode(() => ops.vecDot(T.Q8_0, w32, w32, 32, isa), 'INVALID_ARGUMENT');
    }
    // undefined means the default ISA
    assert.equal(ops.dequantize(T.F16, new Uint8Array([0, 0x3c]), 1, undefined)[0], 1);
  });

  test('empty rows are allowed', () => {
    assert.equal(ops.dequantize(T.Q4_K, new Uint8Array(0), 0).length, 0);
    assert.equal(ops.quantize(T.Q8_0, new Float32Array(0)).length, 0);
    assert.equal(ops.vecDot(T.F32, new Uint8Array(0), new Uint8Array(0), 0), 0);
  });
});
