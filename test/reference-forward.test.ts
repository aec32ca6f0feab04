// The test oracles themselves, checked: the independent GGUF reader, the float64 (de)quantizers, the
// random-weight model fixtures, and the float64 reference forward, which must reproduce llama.cpp's
// logits on the real models in ../shared (skipped with a message when those files are missing).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { arr, buildGguf, f32Bytes, TensorType, ValueType, type Typed } from './helpers/gguf-writer.ts';
import { GGUF_VALUE_TYPE, parseGguf, readGguf } from './helpers/gguf-reader.ts';
import {
  bf16Bits,
  bf16Value,
  byteSize,
  dequantize,
  fp16Bits,
  fp16Value,
  GGML_TYPE,
  GGML_TYPE_INFO,
  GGML_TYPE_NAMES,
  quantize,
  type GgmlTypeName,
} from './helpers/quant-ref.ts';
import {
  buildRandomModel,
  llama3RopeFactors,
  Rng,
  syntheticVocab,
  TOKEN_TYPE,
  writeRandomModel,
  type Arch,
  type RandomModelOptions,
} from './helpers/random-model.ts';
import {
  loadReferenceModel,
  readHyperParams,
  referenceForward,
  type ReferenceModel,
} from './helpers/reference-forward.ts';
import { missing, sharedModel, sharedReference } from './helpers/shared.ts';

// ---------------------------------------------------------------------------------------------------
// small helpers

function readF32(path: string): Float32Array {
  const b = readFileSync(path);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

function argmax(a: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < a.length; i++) if (a[i] > a[best]) best = i;
  return best;
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

function std(a: ArrayLike<number>): number {
  let mean = 0;
  for (let i = 0; i < a.length; i++) mean += a[i] / a.length;
  let v = 0;
  for (let i = 0; i < a.length; i++) v += (a[i] - mean) ** 2 / a.length;
  return Math.sqrt(v);
}

function relRms(x: ArrayLike<number>, y: ArrayLike<number>): number {
  let e = 0,
    s = 0;
  for (let i = 0; i < x.length; i++) {
    e += (x[i] - y[i]) ** 2;
    s += x[i] ** 2;
  }
  return Math.sqrt(e / s);
}

/** Little-endian bytes from a list of [kind, value] parts, for hand-made files and blocks. */
function bytesOf(...parts: ([string, number] | ArrayLike<number>)[]): Uint8Array {
  const out: number[] = [];
  const dv = new DataView(new ArrayBuffer(8));
  for (const p of parts) {
    if (typeof p[0] !== 'string') {
      out.push(...Array.from(p as ArrayLike<number>));
      continue;
    }
    const [kind, v] = p as [string, number];
    const n = { u8: 1, u16: 2, u32: 4, u64: 8, f32: 4, i16: 2 }[kind]!;
    if (kind === 'u8') dv.setUint8(0, v);
    if (kind === 'u16') dv.setUint16(0, v, true);
    if (kind === 'i16') dv.setInt16(0, v, true);
    if (kind === 'u32') dv.setUint32(0, v, true);
    if (kind === 'u64') dv.setBigUint64(0, BigInt(v), true);
    if (kind === 'f32') dv.setFloat32(0, v, true);
    for (let i = 0; i < n; i++) out.push(dv.getUint8(i));
  }
  return Uint8Array.from(out);
}
const strBytes = (s: string) => [...bytesOf(['u64', Buffer.byteLength(s)]), ...Buffer.from(s)];

// ---------------------------------------------------------------------------------------------------

describe('gguf-reader', () => {
  test('reads a file laid out by hand (independent of the writer)', () => {
    const header = [
      ...Buffer.from('GGUF'),
      ...bytesOf(['u32', 3], ['u64', 1], ['u64', 3]),
      // kv 1: "a.u8" = UINT8 7
      ...strBytes('a.u8'),
      ...bytesOf(['u32', 0], ['u8', 7]),
      // kv 2: "b.nested" = ARRAY of ARRAY of INT16: [[1, -2], [3]]
      ...strBytes('b.nested'),
      ...bytesOf(['u32', 9], ['u32', 9], ['u64', 2]),
      ...bytesOf(['u32', 3], ['u64', 2], ['i16', 1], ['i16', -2]),
      ...bytesOf(['u32', 3], ['u64', 1], ['i16', 3]),
      // kv 3: general.alignment = UINT32 256
      ...strBytes('general.alignment'),
      ...bytesOf(['u32', 4], ['u32', 256]),
      // tensor "t": 2 dims [4, 2], F32, offset 0
      ...strBytes('t'),
      ...bytesOf(['u32', 2], ['u64', 4], ['u64', 2], ['u32', 0], ['u64', 0]),
    ];
    const dataStart = Math.ceil(header.length / 256) * 256;
    assert.notEqual(
      dataStart,
      Math.ceil(header.length / 32) * 32,
      'the test must tell alignment 256 from the default 32',
    );
    const file = new Uint8Array(dataStart + 32);
    file.set(header);
    file.set(f32Bytes([0, 1, 2, 3, 4, 5, 6, 7.5]), dataStart);

    const g = parseGguf(file);
    assert.equal(g.version, 3);
    assert.equal(g.metadata.get('a.u8'), 7);
    assert.deepEqual(g.metadata.get('b.nested'), [[1, -2], [3]]);
    assert.deepEqual(g.types.get('b.nested'), { type: GGUF_VALUE_TYPE.ARRAY, elementType: GGUF_VALUE_TYPE.ARRAY });
    assert.equal(g.alignment, 256);
    assert.equal(g.dataStart, dataStart);
    assert.equal(g.tensors.length, 1);
    const t = g.tensors[0];
    assert.deepEqual([t.name, t.dims, t.type, t.offset, t.nElements, t.nBytes], ['t', [4, 2], 0, 0, 8, 32]);
    assert.deepEqual(Array.from(dequantize('F32', t.data, 8)), [0, 1, 2, 3, 4, 5, 6, 7.5]);
  });

  for (const version of [2, 3]) {
    test(`reads every value type, nested arrays and the tensor table of a v${version} file`, () => {
      const nested: Typed = arr(ValueType.ARRAY, [arr(ValueType.UINT8, [1, 2]), arr(ValueType.STRING, ['x', 'héllo'])]);
      const metadata: [string, Typed | string][] = [
        ['u8', { type: ValueType.UINT8, value: 255 }],
        ['i8', { type: ValueType.INT8, value: -128 }],
        ['u16', { type: ValueType.UINT16, value: 65535 }],
        ['i16', { type: ValueType.INT16, value: -32768 }],
        ['u32', { type: ValueType.UINT32, value: 4294967295 }],
        ['i32', { type: ValueType.INT32, value: -2147483648 }],
        ['f32', { type: ValueType.FLOAT32, value: 0.1 }],
        ['bool', { type: ValueType.BOOL, value: true }],
        ['str', 'Grüße ▁the'],
        ['u64', { type: ValueType.UINT64, value: 2n ** 64n - 1n }],
        ['i64', { type: ValueType.INT64, value: -(2n ** 63n) }],
        ['f64', { type: ValueType.FLOAT64, value: 0.1 }],
        ['arr.f32', arr(ValueType.FLOAT32, [1.5, -2])],
        ['arr.empty', arr(ValueType.INT32, [])],
        ['arr.nested', nested],
        ['general.alignment', { type: ValueType.UINT32, value: 32 }],
      ];
      const q = quantize(
        'Q8_0',
        Array.from({ length: 64 }, (_, i) => i / 10),
      );
      const bytes = buildGguf({
        version,
        metadata,
        tensors: [
          { name: 'a', dims: [3], type: TensorType.F32, data: f32Bytes([1, 2, 3]) },
          { name: 'b', dims: [32, 2], type: TensorType.Q8_0, data: q },
        ],
      });
      const g = parseGguf(bytes);
      assert.equal(g.version, version);
      const m = g.metadata;
      assert.deepEqual(
        ['u8', 'i8', 'u16', 'i16', 'u32', 'i32', 'bool', 'str', 'u64', 'i64', 'f64'].map((k) => m.get(k)),
        [255, -128, 65535, -32768, 4294967295, -2147483648, true, 'Grüße ▁the', 2n ** 64n - 1n, -(2n ** 63n), 0.1],
      );
      assert.equal(m.get('f32'), Math.fround(0.1));
      assert.deepEqual(m.get('arr.f32'), [1.5, -2]);
      assert.deepEqual(m.get('arr.empty'), []);
      assert.deepEqual(m.get('arr.nested'), [
        [1, 2],
        ['x', 'héllo'],
      ]);
      assert.deepEqual(g.types.get('f64'), { type: GGUF_VALUE_TYPE.FLOAT64 });
      assert.deepEqual(g.types.get('arr.f32'), { type: GGUF_VALUE_TYPE.ARRAY, elementType: GGUF_VALUE_TYPE.FLOAT32 });

      const [a, b] = g.tensors;
      assert.deepEqual([a.name, a.dims, a.type, a.offset, a.nBytes], ['a', [3], 0, 0, 12]);
      assert.deepEqual([b.name, b.dims, b.type, b.offset, b.nBytes], ['b', [32, 2], 8, 32, 68]);
      assert.equal(g.tensorsByName.get('b'), b);
      assert.equal(g.dataStart % 32, 0);
      assert.deepEqual(Array.from(dequantize('F32', a.data, 3)), [1, 2, 3]);
      assert.deepEqual(b.data, q);
    });
  }

  test('rejects what is not GGUF v2/v3', () => {
    assert.throws(() => parseGguf(Buffer.from('GGML0000000000000000000000')), /not a GGUF/);
    assert.throws(() => parseGguf(bytesOf([...Buffer.from('GGUF')], ['u32', 1], ['u64', 0], ['u64', 0])), /version 1/);
  });

  const stories = sharedModel('stories260K.gguf');
  test('reads stories260K.gguf as its README describes it', { skip: missing(stories) }, () => {
    const g = readGguf(stories);
    assert.equal(g.metadata.get('general.architecture'), 'llama');
    assert.equal(g.tensors.length, 48);
    assert.ok(g.tensors.every((t) => t.type === GGML_TYPE.F32));
    assert.deepEqual(g.tensorsByName.get('token_embd.weight')!.dims, [64, 512]);
    assert.deepEqual(g.tensorsByName.get('blk.0.attn_k.weight')!.dims, [64, 32]);
    assert.deepEqual(g.tensorsByName.get('blk.4.ffn_down.weight')!.dims, [172, 64]);
    const tokens = g.metadata.get('tokenizer.ggml.tokens') as string[];
    assert.equal(tokens.length, 512);
    assert.deepEqual(tokens.slice(0, 4), ['<unk>', '<s>', '</s>', '<0x00>']);
    assert.equal(tokens[258], '<0xFF>');
    const last = g.tensors[g.tensors.length - 1];
    assert.equal(last.fileOffset + last.nBytes, g.bytes.length);
  });
});

// ---------------------------------------------------------------------------------------------------

describe('quant-ref: fp16 and bf16', () => {
  test('fp16 known values and edge cases', () => {
    const cases: [number, number][] = [
      [0, 0x0000],
      [-0, 0x8000],
      [1, 0x3c00],
      [-2, 0xc000],
      [0.5, 0x3800],
      [65504, 0x7bff],
      [65519.99, 0x7bff],
      [65520, 0x7c00],
      [1e6, 0x7c00],
      [-Infinity, 0xfc00],
      [Infinity, 0x7c00],
      [2 ** -14, 0x0400],
      [2 ** -24, 0x0001],
      [1023 * 2 ** -24, 0x03ff],
      [2 ** -25, 0x0000], //                 halfway between 0 and the smallest subnormal: to even (0)
      [3 * 2 ** -25, 0x0002], //             halfway between 1 and 2 subnormal units: to even (2)
      [2 ** -25 * 1.0001, 0x0001],
      [1 + 2 ** -11, 0x3c00], //             halfway between 1 and 1+2^-10: to even (1)
      [1 + 3 * 2 ** -11, 0x3c02], //         halfway between 1+2^-10 and 1+2^-9: to even
      [1 + 2 ** -11 + 2 ** -20, 0x3c01],
      [2047.5 * 2 ** -24, 0x0800], //       halfway above 0x07ff (odd): carries into the next binade
      [1023.5 * 2 ** -24, 0x0400], //       halfway above the largest subnormal: to the smallest normal
      [1 / 3, 0x3555],
    ];
    for (const [x, bits] of cases) assert.equal(fp16Bits(x), bits, `fp16Bits(${x})`);
    assert.equal(fp16Value(0x3555), 0.333251953125);
    assert.equal(fp16Value(0x0001), 2 ** -24);
    assert.equal(fp16Value(0x8000), -0);
    assert.ok(Object.is(fp16Value(0x8000), -0));
    assert.equal(fp16Value(0xfc00), -Infinity);
    assert.ok(Number.isNaN(fp16Value(0x7e00)));
    assert.ok(Number.isNaN(fp16Value(fp16Bits(NaN))));
  });

  test('fp16: every finite value round-trips, and every midpoint rounds to the even neighbour', () => {
    for (let bits = 0; bits < 0x7c00; bits++) {
      const v = fp16Value(bits);
      assert.equal(fp16Bits(v), bits);
      assert.equal(fp16Bits(-v), bits | 0x8000);
      if (bits + 1 < 0x7c00) {
        const next = fp16Value(bits + 1);
        const mid = (v + next) / 2;
        const even = bits % 2 === 0 ? bits : bits + 1;
        assert.equal(fp16Bits(mid), even, `midpoint after 0x${bits.toString(16)}`);
        assert.equal(fp16Bits(mid - (next - v) * 1e-6), bits);
        assert.equal(fp16Bits(mid + (next - v) * 1e-6), bits + 1);
      }
    }
  });

  test('bf16 known values and edge cases', () => {
    const cases: [number, number][] = [
      [1, 0x3f80],
      [-1, 0xbf80],
      [Math.PI, 0x4049],
      [3.140625, 0x4049],
      [0, 0],
      [-0, 0x8000],
      [1 + 2 ** -8, 0x3f80],
      [1 + 3 * 2 ** -8, 0x3f82],
      [Infinity, 0x7f80],
      [3.4028234663852886e38, 0x7f80], // FLT_MAX rounds up to infinity
      [2 ** -133, 0x0001], //             smallest bf16 subnormal
    ];
    for (const [x, bits] of cases) assert.equal(bf16Bits(x), bits, `bf16Bits(${x})`);
    assert.equal(bf16Value(0x4049), 3.140625);
    assert.equal(bf16Value(0x7f80), Infinity);
    assert.ok(Number.isNaN(bf16Value(bf16Bits(NaN))));
  });

  test('bf16 of a float32 is round-to-nearest-even of its top 16 bits (the rule ggml applies)', () => {
    const rng = new Rng(5);
    const f = new Float32Array(1);
    const u = new Uint32Array(f.buffer);
    for (let i = 0; i < 200000; i++) {
      u[0] = Math.floor(rng.uniform() * 2 ** 32) >>> 0;
      if (Number.isNaN(f[0])) continue;
      const lower = u[0] & 0xffff;
      const upper = u[0] >>> 16;
      const expected = lower > 0x8000 || (lower === 0x8000 && upper & 1) ? upper + 1 : upper;
      assert.equal(bf16Bits(f[0]), expected, `bits 0x${u[0].toString(16)}`);
    }
    for (let bits = 0; bits < 0x7f80; bits += 7) assert.equal(bf16Bits(bf16Value(bits)), bits);
  });
});

describe('quant-ref: hand-worked blocks', () => {
  /** Checks a decoded block against runs of a default value plus individual expected values. */
  function expectBlock(
    type: GgmlTypeName,
    block: Uint8Array,
    n: number,
    runs: [number, number, number][],
    at: Record<number, number>,
  ) {
    assert.equal(block.length, byteSize(type, n), `${type} block size`);
    const y = dequantize(type, block, n);
    const expected = new Float64Array(n);
    for (const [from, to, value] of runs) expected.fill(value, from, to);
    for (const [i, v] of Object.entries(at)) expected[Number(i)] = v;
    // numeric equality: a zero scale times a negative quant is -0, as in ggml's float code
    for (let i = 0; i < n; i++) assert.ok(y[i] === expected[i], `${type}[${i}]: ${y[i]}, expected ${expected[i]}`);
  }
  const zeros = (n: number) => new Array(n).fill(0);

  test('F32, F16, BF16', () => {
    expectBlock('F32', bytesOf([0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x20, 0xc1]), 2, [], { 0: 1.5, 1: -10 });
    expectBlock('F16', bytesOf([0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b, 0x01, 0x00, 0x55, 0x35]), 5, [], {
      0: 1,
      1: -2,
      2: 65504,
      3: 2 ** -24,
      4: 0.333251953125,
    });
    expectBlock('BF16', bytesOf([0x80, 0x3f, 0x49, 0x40, 0x80, 0xbf, 0x01, 0x00]), 4, [], {
      0: 1,
      1: 3.140625,
      2: -1,
      3: 2 ** -133,
    });
  });

  test('Q8_0: x = d * q', () => {
    // d = 0.5 (fp16 0x3800); q = 1, -1, 127, -128, 0, 2, then zeros
    const block = bytesOf([0x00, 0x38], [1, 0xff, 0x7f, 0x80, 0, 2], zeros(26));
    expectBlock('Q8_0', block, 32, [], { 0: 0.5, 1: -0.5, 2: 63.5, 3: -64, 5: 1 });
  });

  test('Q4_0: x = d * (nibble - 8); byte j holds elements j (low) and j+16 (high)', () => {
    // d = 2; byte 0 = 0xF0: x0 = (0-8)*2, x16 = (15-8)*2; byte 1 = 0x98: x1 = 0, x17 = 2; others 0x88 -> 0
    const block = bytesOf([0x00, 0x40, 0xf0, 0x98], new Array(14).fill(0x88));
    expectBlock('Q4_0', block, 32, [], { 0: -16, 16: 14, 17: 2 });
  });

  test('Q4_1: x = d * nibble + m', () => {
    // d = 0.5, m = -1; byte 0 = 0x2F: x0 = 15*0.5-1, x16 = 2*0.5-1; other nibbles 0 -> m
    const block = bytesOf([0x00, 0x38, 0x00, 0xbc, 0x2f], zeros(15));
    expectBlock('Q4_1', block, 32, [[0, 32, -1]], { 0: 6.5, 16: 0 });
  });

  test('Q5_0: x = d * (q - 16), bit i of qh is the 5th bit of element i', () => {
    // d = 1; qh has bits 0 and 17; byte 0 = 0x00: x0 = 16-16, x16 = 0-16; byte 1 = 0xF3: x1 = 3-16, x17 = 31-16
    const block = bytesOf([0x00, 0x3c], [0x01, 0x00, 0x02, 0x00], [0x00, 0xf3], zeros(14));
    expectBlock('Q5_0', block, 32, [[0, 32, -16]], { 0: 0, 1: -13, 17: 15 });
  });

  test('Q5_1: x = d * q + m', () => {
    // d = 0.25, m = 2; qh bit 31; byte 15 = 0xF1: x15 = 1*0.25+2, x31 = 31*0.25+2; others 0 -> m
    const block = bytesOf([0x00, 0x34, 0x00, 0x40], [0x00, 0x00, 0x00, 0x80], zeros(15), [0xf1]);
    expectBlock('Q5_1', block, 32, [[0, 32, 2]], { 15: 2.25, 31: 9.75 });
  });

  // Q4_K / Q5_K scales: sub-block 0 has scale 2, min 4; sub-block 5 has scale 37 = 0b10_0101 and
  // min 58 = 0b11_1010, split into low nibbles (byte 9 = 0xA5) and top 2 bits (bytes 1 and 5); all
  // other sub-blocks have scale 0 and min 0. d = 1, dmin = 0.5.
  const kScales = [0x02, 0x80, 0x00, 0x00, 0x04, 0xc0, 0x00, 0x00, 0x00, 0xa5, 0x00, 0x00];

  test('Q4_K: 8 sub-blocks of 32, x = d*sc*q - dmin*m, packed 6-bit scales', () => {
    const qs = zeros(128);
    qs[0] = 0x03; //  element 0 (low nibble of byte 0, sub-block 0): q = 3 -> 2*3 - 0.5*4 = 4
    qs[69] = 0x70; // byte 64+5: element 128+5 (sub-block 4) low nibble 0; element 160+5 (sub-block 5) high nibble 7
    const block = bytesOf([0x00, 0x3c, 0x00, 0x38], kScales, qs);
    // sub-block 0: q = 0 -> -2; sub-block 5: q = 0 -> -29, q = 7 -> 37*7 - 29 = 230
    expectBlock(
      'Q4_K',
      block,
      256,
      [
        [0, 32, -2],
        [160, 192, -29],
      ],
      { 0: 4, 165: 230 },
    );
  });

  test('Q5_K: as Q4_K with the 5th bit of element 64c+l in bit 2c (or 2c+1 for +32) of qh[l]', () => {
    const qh = zeros(32);
    qh[0] = 0x01; // element 0: q = 3 + 16 -> 2*19 - 2 = 36
    qh[1] = 0x01; // element 1: q = 0 + 16 -> 2*16 - 2 = 30
    qh[5] = 0x20; // bit 5 = 2*2+1: element 128+32+5 = 165: q = 7 + 16 -> 37*23 - 29 = 822
    const qs = zeros(128);
    qs[0] = 0x03;
    qs[69] = 0x70;
    const block = bytesOf([0x00, 0x3c, 0x00, 0x38], kScales, qh, qs);
    expectBlock(
      'Q5_K',
      block,
      256,
      [
        [0, 32, -2],
        [160, 192, -29],
      ],
      { 0: 36, 1: 30, 165: 822 },
    );
  });

  test('Q6_K: 16 sub-blocks of 16, x = d * sc * (q - 32), q = 4 low bits | 2 high bits', () => {
    const ql = zeros(128),
      qh = zeros(64),
      scales = zeros(16);
    scales[0] = 2;
    scales[2] = 4;
    scales[5] = 1;
    scales[15] = 0xfd; // -3 as int8
    // element 0 (half 0, group 0, l 0): low nibble of ql[0] = 5, bits 0-1 of qh[0] = 2 -> q = 37
    ql[0] = 0x05;
    qh[0] = 0x02;
    // element 40 (half 0, group 1, l 8): low nibble of ql[32+8] = 12, bits 2-3 of qh[8] = 1 -> q = 28
    ql[40] = 0x0c;
    qh[8] = 0x04;
    // element 85 (half 0, group 2, l 21): high nibble of ql[21] = 9, bits 4-5 of qh[21] = 3 -> q = 57
    ql[21] = 0x90;
    qh[21] = 0x30;
    // element 255 (half 1, group 3, l 31): high nibble of ql[64+32+31] = 10, bits 6-7 of qh[32+31] = 1 -> q = 26
    ql[127] = 0xa0;
    qh[63] = 0x40;
    const block = bytesOf(ql, qh, scales, [0x00, 0x34]); // d = 0.25
    expectBlock(
      'Q6_K',
      block,
      256,
      [
        [0, 16, 0.25 * 2 * -32],
        [32, 48, 0.25 * 4 * -32],
        [80, 96, 0.25 * 1 * -32],
        [240, 256, 0.25 * -3 * -32],
      ],
      { 0: 0.25 * 2 * 5, 40: 0.25 * 4 * -4, 85: 0.25 * 1 * 25, 255: 0.25 * -3 * -6 },
    );
  });

  test('several blocks decode independently and sizes are checked', () => {
    const a = bytesOf([0x00, 0x3c], [5], zeros(31)); // Q8_0, d = 1, x0 = 5
    const b = bytesOf([0x00, 0x40], [0xfd], zeros(31)); // Q8_0, d = 2, x0 = -6
    const y = dequantize('Q8_0', bytesOf(a, b), 64);
    assert.equal(y[0], 5);
    assert.equal(y[32], -6);
    assert.throws(() => dequantize('Q8_0', a, 64), /need 68 bytes/);
    assert.throws(() => quantize('Q4_K', new Float64Array(128)), /whole number/);
    for (const name of GGML_TYPE_NAMES) {
      const info = GGML_TYPE_INFO[GGML_TYPE[name]];
      assert.equal(quantize(name, new Float64Array(256)).length, (256 / info.blockSize) * info.typeSize);
    }
  });
});

describe('quant-ref: round trips', () => {
  /** The largest error each format may make on one block of x (see the quantizers in quant-ref.ts). */
  function bound(type: GgmlTypeName, x: Float64Array, i: number): number {
    const block = GGML_TYPE_INFO[GGML_TYPE[type]].blockSize;
    const b = x.subarray(Math.floor(i / block) * block, (Math.floor(i / block) + 1) * block);
    const amax = Math.max(...b.map(Math.abs));
    const lo = Math.min(...b),
      hi = Math.max(...b);
    const slack = 1.001;
    switch (type) {
      case 'F32':
        return Math.abs(x[i]) * 2 ** -24;
      case 'F16':
        return Math.abs(x[i]) * 2 ** -11 + 2 ** -25;
      case 'BF16':
        return Math.abs(x[i]) * 2 ** -8;
      case 'Q8_0':
        return ((0.5 * amax) / 127) * slack;
      case 'Q4_0':
        return (amax / 8) * slack; // d/2, or d for the extreme of the opposite sign
      case 'Q5_0':
        return (amax / 16) * slack;
      case 'Q4_1':
        return ((0.5 * (hi - lo)) / 15) * slack + Math.abs(lo) * 2 ** -11;
      case 'Q5_1':
        return ((0.5 * (hi - lo)) / 31) * slack + Math.abs(lo) * 2 ** -11;
      case 'Q4_K':
      case 'Q5_K': {
        const top = type === 'Q4_K' ? 15 : 31;
        let maxStep = 0,
          maxOffset = 0;
        for (let j = 0; j < 8; j++) {
          const s = b.subarray(32 * j, 32 * j + 32);
          const sLo = Math.min(0, ...s),
            sHi = Math.max(...s);
          maxStep = Math.max(maxStep, (sHi - sLo) / top);
          maxOffset = Math.max(maxOffset, -sLo);
        }
        return 0.5 * maxStep * (64 / 63) * 1.02 + 0.5 * (maxOffset / 63) * slack;
      }
      case 'Q6_K': {
        let maxStep = 0;
        for (let j = 0; j < 16; j++)
          maxStep = Math.max(maxStep, Math.max(...b.subarray(16 * j, 16 * j + 16).map(Math.abs)) / 31);
        return 0.5 * maxStep * (128 / 127) * 1.02;
      }
      case 'Q2_K': {
        // d·sc <= step + d (sc rounded up, d = max step / 15); a min rounded to nearest can push the
        // lowest or highest value half a dmin past the ends (clamped)
        let maxStep = 0,
          maxOffset = 0;
        for (let j = 0; j < 16; j++) {
          const s = b.subarray(16 * j, 16 * j + 16);
          const sLo = Math.min(0, ...s),
            sHi = Math.max(...s);
          maxStep = Math.max(maxStep, (sHi - sLo) / 3);
          maxOffset = Math.max(maxOffset, -sLo);
        }
        return 0.5 * maxStep * (16 / 15) * 1.02 + 0.5 * (maxOffset / 15) * slack;
      }
      case 'Q3_K': {
        let maxStep = 0;
        for (let j = 0; j < 16; j++)
          maxStep = Math.max(maxStep, Math.max(...b.subarray(16 * j, 16 * j + 16).map(Math.abs)) / 3);
        return 0.5 * maxStep * (32 / 31) * 1.02;
      }
      case 'IQ4_NL':
        // half the widest gap of the code book (89..113: 12 steps of d = amax / 113), or a positive value
        // above 113·d when the extreme is negative (d = amax / 127: at most 14 steps), plus fp16's d
        return 0.112 * amax;
      case 'IQ4_XS': {
        // as IQ4_NL per sub-block, plus the 5-bit rounding of each sub-block's scale to a multiple of
        // d = largest scale / 31 (half a d: 127 · 0.5 · d <= 0.018 of the super-block's amax)
        const s = x.subarray(Math.floor(i / 32) * 32, Math.floor(i / 32) * 32 + 32);
        return 0.112 * Math.max(...s.map(Math.abs)) + 0.025 * amax;
      }
    }
  }

  // relative RMS error expected on normal(0, 1) data, loose upper limits
  const rmsLimit: Record<GgmlTypeName, number> = {
    F32: 1e-7,
    F16: 5e-4,
    BF16: 4e-3,
    Q8_0: 0.01,
    Q4_0: 0.15,
    Q5_0: 0.08,
    Q4_1: 0.12,
    Q5_1: 0.06,
    Q4_K: 0.12,
    Q5_K: 0.06,
    Q6_K: 0.03,
    Q2_K: 0.4,
    Q3_K: 0.25,
    IQ4_NL: 0.12,
    IQ4_XS: 0.12,
  };

  const rng = new Rng(11);
  const datasets: [string, Float64Array][] = [
    ['normal', rng.normals(1024, 0, 1)],
    ['outliers', rng.normals(1024, 0, 1).map((v, i) => (i % 97 === 0 ? v * 40 : v))],
    ['positive', rng.normals(1024, 0, 1).map((v) => Math.abs(v) + 3)],
    ['negative', rng.normals(1024, 0, 1).map((v) => -Math.abs(v) - 0.5)],
    ['small', rng.normals(1024, 0, 1e-2)],
    ['mixed scales', rng.normals(1024, 0, 1).map((v, i) => v * 10 ** (((i >> 5) % 5) - 2))],
    ['zeros and constants', new Float64Array(1024).map((_, i) => (i < 512 ? 0 : i < 768 ? 0.75 : -1.25))],
  ];

  for (const type of GGML_TYPE_NAMES) {
    test(`${type}: dequantize(quantize(x)) is within the format's error bound`, () => {
      for (const [name, x] of datasets) {
        const y = dequantize(type, quantize(type, x), x.length);
        for (let i = 0; i < x.length; i++) {
          assert.ok(Number.isFinite(y[i]), `${type} ${name}[${i}] is not finite`);
          const err = Math.abs(y[i] - x[i]);
          assert.ok(
            err <= bound(type, x, i) + 1e-300,
            `${type} ${name}[${i}]: |${y[i]} - ${x[i]}| = ${err} > ${bound(type, x, i)}`,
          );
        }
        if (name === 'normal') assert.ok(relRms(x, y) < rmsLimit[type], `${type}: relative RMS error ${relRms(x, y)}`);
      }
    });
  }

  test('quantize is deterministic; the float types are idempotent', () => {
    const x = rng.normals(512, 0, 1);
    for (const type of GGML_TYPE_NAMES) assert.deepEqual(quantize(type, x), quantize(type, Float64Array.from(x)));
    for (const type of ['F32', 'F16', 'BF16'] as const) {
      const q = quantize(type, x);
      assert.deepEqual(quantize(type, dequantize(type, q, 512)), q);
    }
  });
});

// ---------------------------------------------------------------------------------------------------

describe('reference forward vs llama.cpp', () => {
  function suite(folder: string, modelFile: string, tol: number, only?: string[]) {
    const modelPath = sharedModel(modelFile);
    const refDir = sharedReference(folder);
    const skip = missing(modelPath, join(refDir, 'index.json'));
    const cases = skip
      ? []
      : (JSON.parse(readFileSync(join(refDir, 'index.json'), 'utf8')).cases as { name: string; file: string }[]);
    let model: ReferenceModel | undefined;
    const get = () => (model ??= loadReferenceModel(modelPath));
    if (skip) test(`${folder}: all cases`, { skip }, () => {});
    for (const c of cases) {
      if (only && !only.includes(c.name)) continue;
      const ref = JSON.parse(readFileSync(join(refDir, c.file), 'utf8')) as { tokens: number[]; n_vocab: number };
      const logitsFile = join(refDir, `${c.name}.prompt_logits.f32`);
      test(`${folder}/${c.name}: logits at all ${ref.tokens.length} positions within ${tol}`, {
        skip: missing(logitsFile),
      }, () => {
        const expected = readF32(logitsFile);
        assert.equal(expected.length, ref.tokens.length * ref.n_vocab);
        const got = referenceForward(get(), ref.tokens);
        assert.equal(got.length, ref.tokens.length);
        let worst = 0;
        for (let p = 0; p < got.length; p++) {
          const row = expected.subarray(p * ref.n_vocab, (p + 1) * ref.n_vocab);
          const d = maxAbsDiff(got[p], row);
          worst = Math.max(worst, d);
          assert.ok(d <= tol, `position ${p}: max |Δlogit| ${d} > ${tol}`);
        }
        assert.ok(worst > 0, 'float64 and float32 results cannot agree exactly'); // guards against comparing a file with itself
      });
    }
  }

  // F32 weights: llama.cpp in float32 matches a float64 forward to ~6e-5 (reference README)
  suite('stories260K', 'stories260K.gguf', 1e-4);
  // F16 weights: llama.cpp rounds activations to F16 before each F16 matmul; the reference does not
  suite('llama-2-tiny-random', 'llama-2-tiny-random.gguf', 1e-3, ['p1_once']);
  // a deeper GQA model (group 4) with longer prompts; logits up to 39
  suite('needle-llama', 'needle-llama.gguf', 3e-4);

  const stories = sharedModel('stories260K.gguf');
  test('stories260K hyperparameters as the README gives them', { skip: missing(stories) }, () => {
    const hp = readHyperParams(readGguf(stories));
    assert.deepEqual(
      { ...hp, eps: Math.round(hp.eps * 1e9) / 1e9 },
      {
        arch: 'llama',
        nVocab: 512,
        nCtx: 512,
        nEmbd: 64,
        nLayer: 5,
        nHead: 8,
        nHeadKv: 4,
        headDim: 8,
        nFf: 172,
        eps: 1e-5,
        ropeBase: 10000,
        ropeDim: 8,
        ropeStyle: 'normal',
        ropeMscale: 1,
        nCtxOrig: 512,
        ropeFreqScale: 1,
        nSwa: 0,
        nExpert: 0,
        nExpertUsed: 0,
        nFfExp: 0,
        tiedEmbeddings: false,
      },
    );
  });

  const p2 = sharedReference('stories260K/p2_dialog.json');
  test('the comparison can fail: the wrong RoPE pairing is far outside the tolerance', {
    skip: missing(stories, p2),
  }, () => {
    const m = loadReferenceModel(stories);
    const tokens = (JSON.parse(readFileSync(p2, 'utf8')) as { tokens: number[] }).tokens;
    const right = referenceForward(m, tokens);
    const wrong = referenceForward({ hp: { ...m.hp, ropeStyle: 'neox' }, tensors: m.tensors }, tokens);
    assert.equal(maxAbsDiff(right[0], wrong[0]), 0); // position 0 is not rotated
    assert.ok(maxAbsDiff(right[tokens.length - 1], wrong[tokens.length - 1]) > 0.05);
  });
});

// ---------------------------------------------------------------------------------------------------

describe('random-model', () => {
  const TOKENS = [1, 300, 301, 302, 290, 291, 305, 310, 280, 260, 270, 315, 299, 303, 3, 100];

  function expectFiniteAndSpread(logits: Float64Array[], label: string) {
    for (const row of logits) for (const v of row) assert.ok(Number.isFinite(v), `${label}: non-finite logit`);
    const argmaxes = new Set(logits.map(argmax));
    assert.ok(
      argmaxes.size >= 4,
      `${label}: argmax takes only ${argmaxes.size} values over ${logits.length} positions`,
    );
    for (const row of logits) {
      const s = std(row);
      assert.ok(s > 0.5 && s < 10, `${label}: logit std ${s}`);
    }
  }

  function expectedTensors(o: RandomModelOptions & { arch: Arch }, nLayer = 2): Map<string, [number[], number]> {
    const nEmbd = 256,
      nFf = 512,
      headDim = o.headDim ?? 64,
      q = 4 * headDim,
      kv = 2 * headDim,
      nVocab = 320;
    const T = GGML_TYPE[o.type ?? 'F32'];
    const F32 = GGML_TYPE.F32;
    const m = new Map<string, [number[], number]>([['token_embd.weight', [[nEmbd, nVocab], T]]]);
    if (o.ropeScaling === 'llama3') m.set('rope_freqs.weight', [[headDim / 2], F32]);
    for (let l = 0; l < nLayer; l++) {
      const p = `blk.${l}.`;
      m.set(p + 'attn_norm.weight', [[nEmbd], F32]);
      m.set(p + 'attn_q.weight', [[nEmbd, q], T]);
      m.set(p + 'attn_k.weight', [[nEmbd, kv], T]);
      m.set(p + 'attn_v.weight', [[nEmbd, kv], T]);
      if (o.arch === 'qwen2') {
        m.set(p + 'attn_q.bias', [[q], F32]);
        m.set(p + 'attn_k.bias', [[kv], F32]);
        m.set(p + 'attn_v.bias', [[kv], F32]);
      }
      if (o.arch === 'qwen3') {
        m.set(p + 'attn_q_norm.weight', [[headDim], F32]);
        m.set(p + 'attn_k_norm.weight', [[headDim], F32]);
      }
      m.set(p + 'attn_output.weight', [[q, nEmbd], T]);
      m.set(p + 'ffn_norm.weight', [[nEmbd], F32]);
      m.set(p + 'ffn_gate.weight', [[nEmbd, nFf], T]);
      m.set(p + 'ffn_up.weight', [[nEmbd, nFf], T]);
      m.set(p + 'ffn_down.weight', [[nFf, nEmbd], T]);
    }
    m.set('output_norm.weight', [[nEmbd], F32]);
    if (!o.tiedEmbeddings) m.set('output.weight', [[nEmbd, nVocab], T]);
    return m;
  }

  const variants: (RandomModelOptions & { arch: Arch })[] = [
    { arch: 'llama', type: 'F32' },
    { arch: 'llama', type: 'Q4_K', ropeScaling: 'llama3' },
    { arch: 'llama', type: 'Q8_0', tiedEmbeddings: true },
    { arch: 'qwen2', type: 'F16' },
    { arch: 'qwen2', type: 'Q5_K' },
    { arch: 'qwen3', type: 'Q6_K' },
    { arch: 'qwen3', type: 'Q4_0', headDim: 128 },
    { arch: 'qwen3', type: 'BF16', tiedEmbeddings: true },
  ];

  for (const o of variants) {
    const label = JSON.stringify(o);
    test(`${label}: tensors, metadata, determinism and a sensible forward`, () => {
      const { bytes, config } = buildRandomModel({ ...o, seed: 3 });
      const g = parseGguf(bytes);
      const A = o.arch;
      const headDim = o.headDim ?? 64;

      // tensors: exactly the expected names, dims (ggml order) and types
      const want = expectedTensors(o);
      assert.deepEqual(g.tensors.map((t) => t.name).sort(), [...want.keys()].sort());
      for (const t of g.tensors) assert.deepEqual([t.dims, t.type], want.get(t.name), t.name);

      // metadata: values and GGUF types as the converter writes them
      const U32 = GGUF_VALUE_TYPE.UINT32,
        F32 = GGUF_VALUE_TYPE.FLOAT32;
      const expectKv = (key: string, value: unknown, type: number) => {
        assert.equal(g.metadata.get(key), value, key);
        assert.equal(g.types.get(key)?.type, type, `${key} type`);
      };
      expectKv('general.architecture', A, GGUF_VALUE_TYPE.STRING);
      expectKv(`${A}.context_length`, 256, U32);
      expectKv(`${A}.embedding_length`, 256, U32);
      expectKv(`${A}.block_count`, 2, U32);
      expectKv(`${A}.feed_forward_length`, 512, U32);
      expectKv(`${A}.attention.head_count`, 4, U32);
      expectKv(`${A}.attention.head_count_kv`, 2, U32);
      expectKv(`${A}.rope.dimension_count`, headDim, U32);
      expectKv(`${A}.rope.freq_base`, A === 'llama' ? 10000 : 1000000, F32);
      expectKv(`${A}.attention.layer_norm_rms_epsilon`, Math.fround(A === 'llama' ? 1e-5 : 1e-6), F32);
      expectKv('general.alignment', 32, U32);
      if (A === 'qwen3' || o.headDim) {
        expectKv(`${A}.attention.key_length`, headDim, U32);
        expectKv(`${A}.attention.value_length`, headDim, U32);
      } else {
        assert.equal(g.metadata.has(`${A}.attention.key_length`), false);
      }
      expectKv('tokenizer.ggml.model', 'llama', GGUF_VALUE_TYPE.STRING);
      expectKv('tokenizer.ggml.bos_token_id', 1, U32);
      expectKv('tokenizer.ggml.eos_token_id', 2, U32);
      assert.deepEqual(g.types.get('tokenizer.ggml.scores'), { type: GGUF_VALUE_TYPE.ARRAY, elementType: F32 });
      assert.deepEqual(g.types.get('tokenizer.ggml.token_type'), {
        type: GGUF_VALUE_TYPE.ARRAY,
        elementType: GGUF_VALUE_TYPE.INT32,
      });
      assert.equal((g.metadata.get('tokenizer.ggml.tokens') as string[]).length, 320);

      // the hyperparameters the reference reads back
      const hp = readHyperParams(g);
      assert.deepEqual(
        [hp.arch, hp.nVocab, hp.nEmbd, hp.nHead, hp.nHeadKv, hp.headDim, hp.ropeDim, hp.ropeStyle, hp.tiedEmbeddings],
        [A, 320, 256, 4, 2, headDim, headDim, A === 'llama' ? 'normal' : 'neox', !!o.tiedEmbeddings],
      );
      assert.equal(config.headDim, headDim);

      // deterministic for a seed, different for another
      assert.deepEqual(buildRandomModel({ ...o, seed: 3 }).bytes, bytes);
      assert.notDeepEqual(buildRandomModel({ ...o, seed: 4 }).bytes, bytes);

      // finite, spread-out logits whose argmax moves with the input
      expectFiniteAndSpread(referenceForward(g, TOKENS), label);
    });
  }

  test('every weight type stores the same underlying random values (quantization error only)', () => {
    const exact = loadReferenceModel(parseGguf(buildRandomModel({ arch: 'qwen2', type: 'F32', seed: 9 }).bytes));
    const ref = referenceForward(exact, TOKENS.slice(0, 6));
    const weightLimit: Record<GgmlTypeName, number> = {
      F32: 0,
      F16: 5e-4,
      BF16: 4e-3,
      Q8_0: 0.01,
      Q6_K: 0.03,
      Q5_1: 0.06,
      Q5_K: 0.06,
      Q5_0: 0.08,
      Q4_1: 0.12,
      Q4_K: 0.12,
      Q4_0: 0.15,
      Q2_K: 0.4,
      Q3_K: 0.25,
      IQ4_NL: 0.12,
      IQ4_XS: 0.12,
    };
    for (const type of GGML_TYPE_NAMES) {
      const m = loadReferenceModel(parseGguf(buildRandomModel({ arch: 'qwen2', type, seed: 9 }).bytes));
      let worstWeight = 0;
      for (const [name, w] of exact.tensors) {
        const err = relRms(w, m.tensors.get(name)!);
        const is2d = name.endsWith('.weight') && !name.includes('norm');
        assert.ok(err <= (is2d ? weightLimit[type] : 0), `${type} ${name}: relative RMS ${err}`);
        worstWeight = Math.max(worstWeight, err);
      }
      // the logits move in proportion to the weight error (about 3x here), not more
      const logits = referenceForward(m, TOKENS.slice(0, 6));
      const err = Math.max(...logits.map((row, p) => relRms(ref[p], row)));
      assert.ok(err <= 5 * worstWeight, `${type}: logits relative RMS ${err} for weights off by ${worstWeight}`);
    }
  });

  test('writeRandomModel writes the file that buildRandomModel builds, and referenceForward takes its path', () => {
    const dir = mkdtempSync(join(tmpdir(), 'folio-random-model-'));
    try {
      const path = join(dir, 'm.gguf');
      const config = writeRandomModel(path, { arch: 'qwen3', type: 'Q8_0', seed: 2 });
      assert.equal(config.arch, 'qwen3');
      assert.deepEqual(
        new Uint8Array(readFileSync(path)),
        buildRandomModel({ arch: 'qwen3', type: 'Q8_0', seed: 2 }).bytes,
      );
      const fromPath = referenceForward(path, TOKENS.slice(0, 4));
      const fromFile = referenceForward(readGguf(path), TOKENS.slice(0, 4));
      assert.deepEqual(fromPath, fromFile);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('K-quant rows must be whole blocks', () => {
    assert.throws(() => buildRandomModel({ type: 'Q4_K', headDim: 32 }), /not a whole number of Q4_K blocks/);
  });

  test('llama3 rope_freqs: the converter formula, with all three regimes present', () => {
    for (const base of [10000, 500000]) {
      const g = parseGguf(buildRandomModel({ arch: 'llama', ropeScaling: 'llama3', ropeBase: base, nLayer: 1 }).bytes);
      const t = g.tensorsByName.get('rope_freqs.weight')!;
      assert.deepEqual([t.dims, t.type], [[32], GGML_TYPE.F32]);
      const stored = dequantize('F32', t.data, 32);
      // Llama 3.1: factor 8, low_freq_factor 1, high_freq_factor 4, original context 8192
      const seen = new Set<string>();
      for (let i = 0; i < 32; i++) {
        const wavelen = 2 * Math.PI * base ** ((2 * i) / 64);
        let expected: number;
        if (wavelen < 8192 / 4) {
          expected = 1;
          seen.add('kept');
        } else if (wavelen > 8192 / 1) {
          expected = 8;
          seen.add('scaled');
        } else {
          const smooth = (8192 / wavelen - 1) / (4 - 1);
          expected = 1 / ((1 - smooth) / 8 + smooth);
          seen.add('blended');
        }
        assert.ok(
          Math.abs(stored[i] - expected) <= 1e-6 * expected,
          `base ${base} pair ${i}: ${stored[i]} vs ${expected}`,
        );
      }
      assert.equal(seen.size, 3, `base ${base}: regimes ${[...seen]}`);
      assert.deepEqual(Array.from(llama3RopeFactors(64, base)).map(Math.fround), Array.from(stored));
    }
  });

  test('rope_freqs divides the rotation angles: it changes every position but the first', () => {
    const m = loadReferenceModel(
      parseGguf(buildRandomModel({ arch: 'llama', ropeScaling: 'llama3', ropeBase: 500000 }).bytes),
    );
    const without = new Map(m.tensors);
    without.delete('rope_freqs.weight');
    const a = referenceForward(m, TOKENS.slice(0, 8));
    const b = referenceForward({ hp: m.hp, tensors: without }, TOKENS.slice(0, 8));
    assert.equal(maxAbsDiff(a[0], b[0]), 0);
    assert.ok(maxAbsDiff(a[7], b[7]) > 1e-3);
    // all-ones factors are the same as none
    const ones = new Map(m.tensors).set('rope_freqs.weight', new Float64Array(32).fill(1));
    assert.ok(maxAbsDiff(referenceForward({ hp: m.hp, tensors: ones }, TOKENS.slice(0, 8))[7], b[7]) < 1e-12);
    // huge factors divide every angle to ~0: the same as rotating nothing (rope_dim 0)
    const huge = new Map(m.tensors).set('rope_freqs.weight', new Float64Array(32).fill(1e15));
    const still = referenceForward({ hp: m.hp, tensors: huge }, TOKENS.slice(0, 8));
    const unrotated = referenceForward({ hp: { ...m.hp, ropeDim: 0 }, tensors: without }, TOKENS.slice(0, 8));
    assert.ok(maxAbsDiff(still[7], unrotated[7]) < 1e-9);
    assert.ok(maxAbsDiff(unrotated[7], b[7]) > 1e-2);
  });

  for (const arch of ['qwen2', 'qwen3'] as const) {
    test(`${arch}: neox RoPE equals normal RoPE on heads whose dimensions are reordered`, () => {
      // Rotating pairs (i, i + d/2) is rotating pairs (2i, 2i+1) after moving dimension i to 2i and
      // i + d/2 to 2i + 1 in every query and key head (rows of Wq, Wk, their biases and q/k norm
      // weights). Attention scores only see q·k, which the reordering leaves unchanged.
      const m = loadReferenceModel(parseGguf(buildRandomModel({ arch, seed: 5 }).bytes));
      const d = m.hp.headDim,
        nEmbd = m.hp.nEmbd;
      const perm = (i: number) => (i < d / 2 ? 2 * i : 2 * (i - d / 2) + 1); // old dim -> new dim
      const permuteRows = (w: Float64Array, rowLen: number) => {
        const out = new Float64Array(w.length);
        const nRows = w.length / rowLen;
        for (let r = 0; r < nRows; r++) {
          const head = Math.floor(r / d),
            dim = r % d;
          out.set(w.subarray(r * rowLen, (r + 1) * rowLen), (head * d + perm(dim)) * rowLen);
        }
        return out;
      };
      const tensors = new Map(m.tensors);
      for (const [name, w] of m.tensors) {
        if (/attn_[qk]\.weight$/.test(name)) tensors.set(name, permuteRows(w, nEmbd));
        if (/attn_[qk]\.bias$/.test(name) || /attn_[qk]_norm\.weight$/.test(name)) tensors.set(name, permuteRows(w, 1));
      }
      const neox = referenceForward(m, TOKENS);
      const normal = referenceForward({ hp: { ...m.hp, ropeStyle: 'normal' }, tensors }, TOKENS);
      for (let p = 0; p < TOKENS.length; p++) assert.ok(maxAbsDiff(neox[p], normal[p]) < 1e-9, `position ${p}`);
      // and without the reordering the two differ
      const unpermuted = referenceForward({ hp: { ...m.hp, ropeStyle: 'normal' }, tensors: m.tensors }, TOKENS);
      assert.ok(maxAbsDiff(neox[TOKENS.length - 1], unpermuted[TOKENS.length - 1]) > 1e-2);
    });
  }

  test('causal: the logits of a prefix do not depend on later tokens', () => {
    const m = loadReferenceModel(parseGguf(buildRandomModel({ arch: 'qwen3', type: 'Q5_1' }).bytes));
    const full = referenceForward(m, TOKENS);
    const prefix = referenceForward(m, TOKENS.slice(0, 5));
    const other = referenceForward(m, [...TOKENS.slice(0, 5), 7, 8, 9]);
    for (let p = 0; p < 5; p++) {
      assert.deepEqual(prefix[p], full[p]);
      assert.deepEqual(other[p], full[p]);
    }
  });

  test('synthetic vocabulary: specials, byte tokens, reachable merged pieces', () => {
    for (const n of [289, 320, 400]) {
      const v = syntheticVocab(n);
      assert.equal(v.tokens.length, n);
      assert.equal(v.scores.length, n);
      assert.equal(v.types.length, n);
      assert.equal(new Set(v.tokens).size, n, 'tokens are unique');
      assert.deepEqual(v.tokens.slice(0, 3), ['<unk>', '<s>', '</s>']);
      assert.deepEqual(v.types.slice(0, 3), [TOKEN_TYPE.UNKNOWN, TOKEN_TYPE.CONTROL, TOKEN_TYPE.CONTROL]);
      for (let b = 0; b < 256; b++) {
        assert.equal(v.tokens[3 + b], `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
        assert.equal(v.types[3 + b], TOKEN_TYPE.BYTE);
      }
      const known = new Set(v.tokens.slice(259));
      for (let i = 259; i < n; i++) {
        const t = v.tokens[i];
        assert.equal(v.types[i], TOKEN_TYPE.NORMAL);
        if ([...t].length > 1) {
          const chars = [...t];
          const splits = chars.slice(1).map((_, k) => [chars.slice(0, k + 1).join(''), chars.slice(k + 1).join('')]);
          assert.ok(
            splits.some(([a, b]) => known.has(a) && known.has(b)),
            `${t} is not the merge of two tokens`,
          );
        }
      }
      if (n >= 320) for (const piece of ['▁the', '▁and', '▁a', '▁']) assert.ok(known.has(piece), piece);
    }
    assert.throws(() => syntheticVocab(288), /at least 289/);
  });
});
