// The engine's matrix product (ops.matmul: activation conversion, blocking, threads, and the blocked
// kernels of every ISA) against the scalar reference computed here one (row, token) at a time with
// ops.quantize + ops.vecDot, on random inputs of awkward sizes: one row, one token, rows and tokens that
// are not multiples of any tile, several blocks of rows and tokens, 1 and 3 threads.
//
// Tolerance. The blocked kernels compute the same exact integer sum per block as vec_dot, then scale and
// add the blocks in another order (and, for F32/F16/BF16, the elements in another order than the scalar
// reference's float64 sum). Both results are float sums of T rounded terms (T = blocks, or elements for
// the float types), so each is within (T + 16)·u·M of the exact value, where u = 2^-24 and M bounds
// Σ|term|; the test allows twice that. M is taken as Σ_k |x_k|·(|w_k| + max_{block(k)} |w|) over the
// dequantized values, which also covers the separately scaled offset terms of Q4_1/Q5_1 (m·s) and the
// K-quants (dmin·m·Σx). The vec_dot path is checked for exact equality with vecDot.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { loadAddon, type OpsBinding } from '../electron/engine/binding.ts';
import { layout, T, WEIGHT_TYPES } from './helpers/ggml-types.ts';

const ops: OpsBinding = loadAddon().ops;
const isas = ops.isas();

const TYPES = WEIGHT_TYPES;
const NAME = (type: number) => layout(type).name;
const BLOCK = (type: number) => layout(type).block;

const U = 2 ** -24;

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
    normal() {
      const u = (next() + 1) / 4294967297,
        v = next() / 4294967296;
      return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    },
  };
}

function randomFloats(n: number, r: ReturnType<typeof prng>, scale = 1): Float32Array {
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) x[i] = r.normal() * scale;
  return x;
}

interface Case {
  rows: number;
  cols: number;
  n: number;
  w: Uint8Array;
  x: Float32Array;
}

/** Weights: random normal rows quantized to `type` (varied magnitudes per row); activations likewise. */
function makeCase(type: number, rows: number, blocks: number, n: number, seed: number): Case {
  const r = prng(seed);
  const cols = blocks * BLOCK(type);
  const wf = new Float32Array(rows * cols);
  for (let i = 0; i < rows; i++) wf.set(randomFloats(cols, r, 0.05 * (1 + (i % 7))), i * cols);
  const w = ops.quantize(type, wf, 'scalar');
  return { rows, cols, n, w, x: randomFloats(n * cols, r, 2) };
}

/** The reference, one (row, token) at a time, and the magnitude bound M of every output. */
function reference(type: number, c: Case) {
  const xt = ops.vecDotType(type);
  const rb = c.w.length / c.rows;
  const wRows = Array.from({ length: c.rows }, (_, i) => c.w.subarray(i * rb, (i + 1) * rb));
  const xq = Array.from({ length: c.n }, (_, t) =>
    ops.quantize(xt, c.x.subarray(t * c.cols, (t + 1) * c.cols), 'scalar'),
  );
  const wd = wRows.map((w) => ops.dequantize(type, w, c.cols, 'scalar'));
  const xd = xq.map((x) => ops.dequantize(xt, x, c.cols, 'scalar'));
  const block = BLOCK(type) === 1 ? 1 : BLOCK(type);
  const wmag = wd.map((w) => {
    const out = new Float64Array(c.cols);
    for (let b = 0; b < c.cols; b += block) {
      let m = 0;
      for (let k = b; k < b + block; k++) m = Math.max(m, Math.abs(w[k]));
      for (let k = b; k < b + block; k++) out[k] = Math.abs(w[k]) + m;
    }
    return out;
  });
  const y = new Float32Array(c.n * c.rows),
    mag = new Float64Array(c.n * c.rows);
  for (let t = 0; t < c.n; t++) {
    for (let i = 0; i < c.rows; i++) {
      y[t * c.rows + i] = ops.vecDot(type, wRows[i], xq[t], c.cols, 'scalar');
      let m = 0;
      for (let k = 0; k < c.cols; k++) m += wmag[i][k] * Math.abs(xd[t][k]);
      mag[t * c.rows + i] = m;
    }
  }
  return { y, mag, wRows, xq };
}

function checkClose(type: number, c: Case, got: Float32Array, ref: ReturnType<typeof reference>, what: string) {
  assert.equal(got.length, c.n * c.rows, `${what}: output length`);
  const terms = BLOCK(type) === 1 ? c.cols : c.cols / BLOCK(type);
  const f = 2 * (terms + 16) * U;
  for (let i = 0; i < got.length; i++) {
    const tol = f * ref.mag[i];
    const d = Math.abs(got[i] - ref.y[i]);
    if (!(d <= tol)) {
      assert.fail(
        `${what}: output ${i} (token ${Math.floor(i / c.rows)}, row ${i % c.rows}) = ${got[i]}, ` +
          `reference ${ref.y[i]}, difference ${d} > ${tol}`,
      );
    }
  }
}

// rows × blocks × tokens: single row / token, tails of every tile shape, several blocks of rows.
const SHAPES: [number, number, number][] = [
  [1, 1, 1],
  [1, 3, 5],
  [5, 1, 2],
  [2, 2, 3],
  [7, 2, 4],
  [13, 3, 9],
  [37, 2, 17],
  [66, 1, 6],
];
const FLOAT_COLS = [1, 7, 33, 100];

describe('matmul: every ISA and path against vec_dot one (row, token) at a time', () => {
  for (const type of TYPES) {
    test(`${NAME(type)}`, () => {
      let seed = 100 * type + 1;
      const shapes: [number, number, number][] =
        BLOCK(type) === 1 ? SHAPES.map(([rows, , n], i) => [rows, FLOAT_COLS[i % FLOAT_COLS.length], n]) : SHAPES;
      for (const [rows, blocks, n] of shapes) {
        const c = makeCase(type, rows, blocks, n, seed++);
        const ref = reference(type, c);
        for (const isa of isas) {
          for (const threads of [1, 3]) {
            const shape = `${NAME(type)} ${isa} rows=${rows} cols=${c.cols} n=${n} threads=${threads}`;
            // The vec_dot path must be vecDot exactly (same kernels, same activations).
            const vd = ops.matmul(type, c.w, rows, c.cols, c.x, n, isa, threads, 'vecdot');
            for (let i = 0; i < vd.length; i++) {
              const t = Math.floor(i / rows),
                r = i % rows;
              const want = isa === 'scalar' ? ref.y[i] : ops.vecDot(type, ref.wRows[r], ref.xq[t], c.cols, isa);
              assert.equal(vd[i], Math.fround(want), `${shape} vecdot output ${i}`);
            }
            checkClose(
              type,
              c,
              ops.matmul(type, c.w, rows, c.cols, c.x, n, isa, threads, 'blocked'),
              ref,
              `${shape} blocked`,
            );
            checkClose(type, c, ops.matmul(type, c.w, rows, c.cols, c.x, n, isa, threads), ref, `${shape} auto`);
          }
        }
      }
    });
  }

  // Enough rows and tokens for several row blocks and token blocks of the driver.
  for (const type of [T.F16, T.Q8_0, T.Q4_K, T.Q6_K]) {
    test(`${NAME(type)}: several blocks of rows and tokens`, () => {
      const blocks = BLOCK(type) === 1 ? 64 : BLOCK(type) === 32 ? 16 : 2;
      const c = makeCase(type, 150, blocks, 103, 7000 + type);
      const ref = reference(type, c);
      for (const isa of isas) {
        checkClose(type, c, ops.matmul(type, c.w, c.rows, c.cols, c.x, c.n, isa, 2), ref, `${NAME(type)} ${isa}`);
      }
    });
  }

  test('Q8_0 weights holding -128 (the sign trick handles them on the weight side)', () => {
    const c = makeCase(T.Q8_0, 9, 3, 6, 4242);
    for (let b = 0; b < c.w.length / 34; b++) for (let i = 0; i < 32; i += 5) c.w[b * 34 + 2 + i] = 0x80;
    const ref = reference(T.Q8_0, c);
    for (const isa of isas) {
      checkClose(T.Q8_0, c, ops.matmul(T.Q8_0, c.w, c.rows, c.cols, c.x, c.n, isa, 2, 'blocked'), ref, `Q8_0 ${isa}`);
    }
  });

  test('zero tokens or rows give an empty result; bad arguments are INVALID_ARGUMENT', () => {
    assert.equal(ops.matmul(T.Q8_0, new Uint8Array(34 * 2), 2, 32, new Float32Array(0), 0).length, 0);
    assert.equal(ops.matmul(T.Q8_0, new Uint8Array(0), 0, 32, new Float32Array(64), 2).length, 0);
    const bad = (fn: () => unknown) => assert.throws(fn, (e: { code?: string }) => e.code === 'INVALID_ARGUMENT');
    bad(() => ops.matmul(T.Q8_0, new Uint8Array(33), 1, 32, new Float32Array(32), 1)); // w size
    bad(() => ops.matmul(T.Q8_0, new Uint8Array(34), 1, 32, new Float32Array(31), 1)); // x size
    bad(() => ops.matmul(T.Q8_0, new Uint8Array(34), 1, 33, new Float32Array(33), 1)); // cols not whole blocks
    bad(() => ops.matmul(T.Q8_0, new Uint8Array(34), 1, 32, new Float32Array(32), 1, 'scalar', 0)); // threads
    bad(() => ops.matmul(T.Q8_0, new Uint8Array(34), 1, 32, new Float32Array(32), 1, 'scalar', 1, 'fast' as 'auto'));
  });
});

describe('readBandwidth', () => {
  test('measures something positive with the threads asked for', () => {
    const r = ops.readBandwidth(2, 32, 1);
    assert.equal(r.threads, 2);
    assert.equal(r.bytes, 32 * 2 ** 20);
    assert.ok(r.bytesPerSecond > 0 && r.seconds > 0);
  });
});
