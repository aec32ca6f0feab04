// Reference (de)quantization of ggml's tensor block formats, in float64, for test oracles.
//
// The block layouts are ggml's (llama.cpp: ggml/src/ggml-common.h defines the block structs,
// ggml/src/ggml-quants.c the dequantize_row_* functions). Everything here was written from a reading of
// those layouts; it shares no code with the engine under test.
//
// dequantize() returns the exact value each block encodes, computed in float64. ggml computes the same
// expressions in float32; in every format here all but the last float32 operation are exact, so ggml's
// result equals Math.fround() of ours.
//
// quantize() writes valid blocks that approximate its input with round-to-nearest. It is simple rather
// than clever: ggml's own quantizers search for better scales, so the bytes differ from ggml's, but any
// engine that decodes the layout correctly reproduces dequantize(quantize(x)).

import { T, WEIGHT_TYPE_NAMES, type WeightTypeName } from './ggml-types.ts';

/** The types this reference encodes and decodes: every weight type of the engine (ggml-types.ts). */
export type GgmlTypeName = WeightTypeName;
export const GGML_TYPE_NAMES: readonly GgmlTypeName[] = WEIGHT_TYPE_NAMES;
/** ggml type ids by name. */
export const GGML_TYPE = T;

/** Elements per block and bytes per block of each type (ggml's blck_size and type_size). */
export const GGML_TYPE_INFO: Record<number, { name: string; blockSize: number; typeSize: number }> = {
  0: { name: 'F32', blockSize: 1, typeSize: 4 },
  1: { name: 'F16', blockSize: 1, typeSize: 2 },
  2: { name: 'Q4_0', blockSize: 32, typeSize: 2 + 16 }, //             d, 32 x 4-bit
  3: { name: 'Q4_1', blockSize: 32, typeSize: 2 + 2 + 16 }, //         d, m, 32 x 4-bit
  6: { name: 'Q5_0', blockSize: 32, typeSize: 2 + 4 + 16 }, //         d, 32 high bits, 32 x 4-bit
  7: { name: 'Q5_1', blockSize: 32, typeSize: 2 + 2 + 4 + 16 }, //     d, m, 32 high bits, 32 x 4-bit
  8: { name: 'Q8_0', blockSize: 32, typeSize: 2 + 32 }, //             d, 32 x int8
  10: { name: 'Q2_K', blockSize: 256, typeSize: 16 + 64 + 2 + 2 }, //  16 x (4-bit scale, 4-bit min), 256 x 2-bit, d, dmin
  11: { name: 'Q3_K', blockSize: 256, typeSize: 32 + 64 + 12 + 2 }, // 256 high bits, 256 x 2-bit, 16 x 6-bit scale, d
  12: { name: 'Q4_K', blockSize: 256, typeSize: 2 + 2 + 12 + 128 }, // d, dmin, 8 x (6-bit scale, 6-bit min), 256 x 4-bit
  13: { name: 'Q5_K', blockSize: 256, typeSize: 2 + 2 + 12 + 32 + 128 }, // as Q4_K + 256 high bits
  14: { name: 'Q6_K', blockSize: 256, typeSize: 128 + 64 + 16 + 2 }, // low 4 bits, high 2 bits, 16 x int8 scale, d
  20: { name: 'IQ4_NL', blockSize: 32, typeSize: 2 + 16 }, //          d, 32 x 4-bit code book index
  23: { name: 'IQ4_XS', blockSize: 256, typeSize: 2 + 2 + 4 + 128 }, // d, 8 x 6-bit scale (high 2 bits, low 4), 256 x 4-bit index
  30: { name: 'BF16', blockSize: 1, typeSize: 2 },
};

function typeId(type: number | GgmlTypeName): number {
  const id = typeof type === 'number' ? type : GGML_TYPE[type];
  if (id === undefined || !GGML_TYPE_INFO[id]) throw new Error(`unsupported ggml type ${String(type)}`);
  return id;
}

export function typeName(type: number): string {
  return GGML_TYPE_INFO[type]?.name ?? `type ${type}`;
}

/** Bytes taken by n values of a type (n must be a whole number of blocks). */
export function byteSize(type: number | GgmlTypeName, n: number): number {
  const info = GGML_TYPE_INFO[typeId(type)];
  if (n % info.blockSize !== 0)
    throw new Error(`${info.name}: ${n} values is not a whole number of ${info.blockSize}-value blocks`);
  return (n / info.blockSize) * info.typeSize;
}

// ---------------------------------------------------------------------------------------------------
// Small floats: IEEE binary16 (fp16) and bfloat16, both round-to-nearest-even on the way in.

/**
 * Rounds a number to a binary float format with `expBits` exponent bits and `mantBits` stored mantissa
 * bits (round to nearest, ties to even; overflow gives infinity; subnormals kept) and returns its bits.
 */
function encodeSmallFloat(x: number, expBits: number, mantBits: number): number {
  const bias = (1 << (expBits - 1)) - 1;
  const expAllOnes = (1 << expBits) - 1;
  const signBit = 1 << (expBits + mantBits);
  if (Number.isNaN(x)) return (expAllOnes << mantBits) | (1 << (mantBits - 1)); // a quiet NaN
  const sign = x < 0 || Object.is(x, -0) ? signBit : 0;
  const a = Math.abs(x);
  if (a === Infinity) return sign | (expAllOnes << mantBits);
  if (a === 0) return sign;

  const minNormalExp = 1 - bias;
  // exponent of a: the e with 2^e <= a < 2^(e+1), but never below the subnormal exponent
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  if (2 ** (e + 1) <= a) e++;
  if (e < minNormalExp) e = minNormalExp;

  // a = q * 2^(e - mantBits) with q rounded to an integer: the mantissa with its leading bit
  let q = roundHalfEven(a * 2 ** (mantBits - e));
  if (q === 2 ** (mantBits + 1)) {
    q /= 2;
    e++;
  } // rounding carried into the next binade
  const normal = q >= 2 ** mantBits;
  if (!normal) return sign | q; // subnormal (exponent field 0)
  if (e + bias >= expAllOnes) return sign | (expAllOnes << mantBits); // overflow: infinity
  return sign | ((e + bias) << mantBits) | (q - 2 ** mantBits);
}

function decodeSmallFloat(bits: number, expBits: number, mantBits: number): number {
  const bias = (1 << (expBits - 1)) - 1;
  const expAllOnes = (1 << expBits) - 1;
  const sign = bits & (1 << (expBits + mantBits)) ? -1 : 1;
  const exp = (bits >> mantBits) & expAllOnes;
  const mant = bits & ((1 << mantBits) - 1);
  if (exp === expAllOnes) return mant ? NaN : sign * Infinity;
  if (exp === 0) return sign * mant * 2 ** (1 - bias - mantBits); // zero or subnormal
  return sign * (2 ** mantBits + mant) * 2 ** (exp - bias - mantBits);
}

function roundHalfEven(v: number): number {
  const f = Math.floor(v);
  const diff = v - f;
  if (diff < 0.5) return f;
  if (diff > 0.5) return f + 1;
  return f % 2 === 0 ? f : f + 1;
}

/** Nearest fp16 (round half to even) of a number, as its 16 bits. */
export const fp16Bits = (x: number): number => encodeSmallFloat(x, 5, 10);
/** The value of fp16 bits. */
export const fp16Value = (bits: number): number => decodeSmallFloat(bits, 5, 10);
/** Nearest bfloat16 (round half to even) of a number, as its 16 bits. */
export const bf16Bits = (x: number): number => encodeSmallFloat(x, 8, 7);
/** The value of bfloat16 bits. */
export const bf16Value = (bits: number): number => decodeSmallFloat(bits, 8, 7);
/** Rounds a number to the nearest fp16 value. */
export const roundFp16 = (x: number): number => fp16Value(fp16Bits(x));

/** C's roundf: to nearest, halves away from zero. */
function roundAway(v: number): number {
  return Math.sign(v) * Math.floor(Math.abs(v) + 0.5);
}

const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));

// ---------------------------------------------------------------------------------------------------
// Dequantization: bytes -> float64 values. One function per block layout.

/** Decodes n values of `type` from `bytes` (which must hold at least byteSize(type, n) bytes). */
export function dequantize(type: number | GgmlTypeName, bytes: Uint8Array, n: number): Float64Array {
  const id = typeId(type);
  const need = byteSize(id, n);
  if (bytes.length < need) throw new Error(`${typeName(id)}: ${n} values need ${need} bytes, got ${bytes.length}`);
  const v = new DataView(bytes.buffer, bytes.byteOffset, need);
  const out = new Float64Array(n);
  const blocks = n / GGML_TYPE_INFO[id].blockSize;
  const B = GGML_TYPE_INFO[id].typeSize;
  for (let ib = 0; ib < blocks; ib++) {
    const at = ib * B; // byte offset of this block
    switch (id) {
      case GGML_TYPE.F32:
        out[ib] = v.getFloat32(at, true);
        break;
      case GGML_TYPE.F16:
        out[ib] = fp16Value(v.getUint16(at, true));
        break;
      case GGML_TYPE.BF16:
        out[ib] = bf16Value(v.getUint16(at, true));
        break;
      case GGML_TYPE.Q8_0:
        dequantQ8_0(v, at, out.subarray(ib * 32, ib * 32 + 32));
        break;
      case GGML_TYPE.Q4_0:
        dequantQ4_0(v, at, out.subarray(ib * 32, ib * 32 + 32));
        break;
      case GGML_TYPE.Q4_1:
        dequantQ4_1(v, at, out.subarray(ib * 32, ib * 32 + 32));
        break;
      case GGML_TYPE.Q5_0:
        dequantQ5_0(v, at, out.subarray(ib * 32, ib * 32 + 32));
        break;
      case GGML_TYPE.Q5_1:
        dequantQ5_1(v, at, out.subarray(ib * 32, ib * 32 + 32));
        break;
      case GGML_TYPE.Q4_K:
        dequantQ4_K(v, at, out.subarray(ib * 256, ib * 256 + 256));
        break;
      case GGML_TYPE.Q5_K:
        dequantQ5_K(v, at, out.subarray(ib * 256, ib * 256 + 256));
        break;
      case GGML_TYPE.Q6_K:
        dequantQ6_K(v, at, out.subarray(ib * 256, ib * 256 + 256));
        break;
      case GGML_TYPE.Q2_K:
        dequantQ2_K(v, at, out.subarray(ib * 256, ib * 256 + 256));
        break;
      case GGML_TYPE.Q3_K:
        dequantQ3_K(v, at, out.subarray(ib * 256, ib * 256 + 256));
        break;
      case GGML_TYPE.IQ4_NL:
        dequantIQ4_NL(v, at, out.subarray(ib * 32, ib * 32 + 32));
        break;
      case GGML_TYPE.IQ4_XS:
        dequantIQ4_XS(v, at, out.subarray(ib * 256, ib * 256 + 256));
        break;
    }
  }
  return out;
}

const f16At = (v: DataView, at: number) => fp16Value(v.getUint16(at, true));

// Q8_0, 34 bytes: d (fp16) | q[32] (int8).  x[i] = d * q[i]
function dequantQ8_0(v: DataView, at: number, y: Float64Array) {
  const d = f16At(v, at);
  for (let i = 0; i < 32; i++) y[i] = d * v.getInt8(at + 2 + i);
}

// Q4_0, 18 bytes: d (fp16) | qs[16].  Byte j holds element j in its low nibble and element j+16 in its
// high nibble; nibbles are unsigned with an offset of 8.  x = d * (nibble - 8)
function dequantQ4_0(v: DataView, at: number, y: Float64Array) {
  const d = f16At(v, at);
  for (let j = 0; j < 16; j++) {
    const byte = v.getUint8(at + 2 + j);
    y[j] = d * ((byte & 0x0f) - 8);
    y[j + 16] = d * ((byte >> 4) - 8);
  }
}

// Q4_1, 20 bytes: d (fp16) | m (fp16) | qs[16], nibbles as in Q4_0 without offset.  x = d * nibble + m
function dequantQ4_1(v: DataView, at: number, y: Float64Array) {
  const d = f16At(v, at);
  const m = f16At(v, at + 2);
  for (let j = 0; j < 16; j++) {
    const byte = v.getUint8(at + 4 + j);
    y[j] = d * (byte & 0x0f) + m;
    y[j + 16] = d * (byte >> 4) + m;
  }
}

// Q5_0, 22 bytes: d (fp16) | qh (u32, bit i = 5th bit of element i) | qs[16] (low 4 bits, as Q4_0).
// x = d * (q - 16), q = low nibble | high bit << 4
function dequantQ5_0(v: DataView, at: number, y: Float64Array) {
  const d = f16At(v, at);
  const qh = v.getUint32(at + 2, true);
  for (let j = 0; j < 16; j++) {
    const byte = v.getUint8(at + 6 + j);
    const q0 = (byte & 0x0f) | (((qh >>> j) & 1) << 4);
    const q1 = (byte >> 4) | (((qh >>> (j + 16)) & 1) << 4);
    y[j] = d * (q0 - 16);
    y[j + 16] = d * (q1 - 16);
  }
}

// Q5_1, 24 bytes: d (fp16) | m (fp16) | qh (u32) | qs[16].  x = d * q + m
function dequantQ5_1(v: DataView, at: number, y: Float64Array) {
  const d = f16At(v, at);
  const m = f16At(v, at + 2);
  const qh = v.getUint32(at + 4, true);
  for (let j = 0; j < 16; j++) {
    const byte = v.getUint8(at + 8 + j);
    const q0 = (byte & 0x0f) | (((qh >>> j) & 1) << 4);
    const q1 = (byte >> 4) | (((qh >>> (j + 16)) & 1) << 4);
    y[j] = d * q0 + m;
    y[j + 16] = d * q1 + m;
  }
}

/**
 * The 6-bit scale and 6-bit min of sub-block j (0..7) from the 12 packed bytes `s` of a Q4_K/Q5_K block.
 * Bytes 0-3 hold scales 0-3 in their low 6 bits, bytes 4-7 mins 0-3; sub-blocks 4-7 keep their low
 * 4 bits in bytes 8-11 (scale low nibble, min high nibble) and their top 2 bits in the spare top bits
 * of bytes 0-3 (scales) and 4-7 (mins).
 */
export function kScaleMin(s: ArrayLike<number>, j: number): [scale: number, min: number] {
  if (j < 4) return [s[j] & 63, s[j + 4] & 63];
  const scale = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
  const min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  return [scale, min];
}

// Q4_K, 144 bytes per 256 values: d (fp16) | dmin (fp16) | scales[12] | qs[128].
// 8 sub-blocks of 32 values; sub-block j has scale d*sc[j] and min dmin*m[j]:  x = d*sc*q - dmin*m.
// The quants come in 4 chunks of 64 values, 32 bytes each: value 64c + l (l < 32) is the low nibble of
// qs[32c + l], value 64c + 32 + l its high nibble. So value e uses sub-block e / 32.
function dequantQ4_K(v: DataView, at: number, y: Float64Array) {
  const d = f16At(v, at);
  const dmin = f16At(v, at + 2);
  const scales = new Uint8Array(v.buffer, v.byteOffset + at + 4, 12);
  const qs = at + 16;
  for (let c = 0; c < 4; c++) {
    const [scLo, mLo] = kScaleMin(scales, 2 * c);
    const [scHi, mHi] = kScaleMin(scales, 2 * c + 1);
    for (let l = 0; l < 32; l++) {
      const byte = v.getUint8(qs + 32 * c + l);
      y[64 * c + l] = d * scLo * (byte & 0x0f) - dmin * mLo;
      y[64 * c + 32 + l] = d * scHi * (byte >> 4) - dmin * mHi;
    }
  }
}

// Q5_K, 176 bytes: d | dmin | scales[12] | qh[32] | qs[128].  As Q4_K with a 5th bit per value:
// value 64c + l takes bit 2c of qh[l], value 64c + 32 + l takes bit 2c+1 of qh[l].
function dequantQ5_K(v: DataView, at: number, y: Float64Array) {
  const d = f16At(v, at);
  const dmin = f16At(v, at + 2);
  const scales = new Uint8Array(v.buffer, v.byteOffset + at + 4, 12);
  const qh = at + 16;
  const qs = at + 48;
  for (let c = 0; c < 4; c++) {
    const [scLo, mLo] = kScaleMin(scales, 2 * c);
    const [scHi, mHi] = kScaleMin(scales, 2 * c + 1);
    for (let l = 0; l < 32; l++) {
      const byte = v.getUint8(qs + 32 * c + l);
      const high = v.getUint8(qh + l);
      const q0 = (byte & 0x0f) | (((high >> (2 * c)) & 1) << 4);
      const q1 = (byte >> 4) | (((high >> (2 * c + 1)) & 1) << 4);
      y[64 * c + l] = d * scLo * q0 - dmin * mLo;
      y[64 * c + 32 + l] = d * scHi * q1 - dmin * mHi;
    }
  }
}

// Q6_K, 210 bytes per 256 values: ql[128] (low 4 bits) | qh[64] (high 2 bits) | scales[16] (int8) | d.
// 16 sub-blocks of 16 values; value e has scale d * scales[e / 16] and x = d * sc * (q - 32), q in 0..63.
// Each half h (128 values) uses ql[64h..], qh[32h..]. Within a half, value 32g + l (g = 0..3, l < 32):
// low 4 bits from ql[64h + l + 32*(g & 1)] (low nibble for g < 2, high nibble for g >= 2),
// high 2 bits from bits 2g..2g+1 of qh[32h + l].
function dequantQ6_K(v: DataView, at: number, y: Float64Array) {
  const ql = at;
  const qh = at + 128;
  const sc = at + 192;
  const d = f16At(v, at + 208);
  for (let h = 0; h < 2; h++) {
    for (let g = 0; g < 4; g++) {
      for (let l = 0; l < 32; l++) {
        const e = 128 * h + 32 * g + l;
        const lowByte = v.getUint8(ql + 64 * h + l + 32 * (g & 1));
        const low = g < 2 ? lowByte & 0x0f : lowByte >> 4;
        const high = (v.getUint8(qh + 32 * h + l) >> (2 * g)) & 3;
        const q = (low | (high << 4)) - 32;
        y[e] = d * v.getInt8(sc + (e >> 4)) * q;
      }
    }
  }
}

// Q2_K, 84 bytes per 256 values: scales[16] | qs[64] | d (fp16) | dmin (fp16). 16 groups of 16 values;
// byte g of scales holds group g's scale (low nibble) and min (high nibble): x = d * sc * q - dmin * m,
// q in 0..3. Value 128h + 32j + l (h = 0..1, j = 0..3, l < 32) is bits 2j..2j+1 of qs[32h + l].
function dequantQ2_K(v: DataView, at: number, y: Float64Array) {
  const d = f16At(v, at + 80);
  const dmin = f16At(v, at + 82);
  for (let e = 0; e < 256; e++) {
    const h = e >> 7,
      j = (e >> 5) & 3,
      l = e & 31;
    const q = (v.getUint8(at + 16 + 32 * h + l) >> (2 * j)) & 3;
    const s = v.getUint8(at + (e >> 4));
    y[e] = d * (s & 15) * q - dmin * (s >> 4);
  }
}

// Q3_K, 110 bytes per 256 values: hmask[32] | qs[64] | scales[12] | d (fp16). x = d * (sc - 32) * q with
// q = (2 low bits, placed as in Q2_K) + 4 * (high bit) - 4, in -4..3; the high bit of value 128h + 32j + l
// is bit 4h + j of hmask[l]. Group g's 6-bit scale: low 4 bits from byte g % 8 of scales (low nibble
// for g < 8, high nibble after), high 2 bits from bits 2(g >> 2).. of byte 8 + g % 4.
function dequantQ3_K(v: DataView, at: number, y: Float64Array) {
  const d = f16At(v, at + 108);
  const sc = at + 96;
  for (let e = 0; e < 256; e++) {
    const h = e >> 7,
      j = (e >> 5) & 3,
      l = e & 31,
      g = e >> 4;
    const low = (v.getUint8(at + 32 + 32 * h + l) >> (2 * j)) & 3;
    const high = (v.getUint8(at + l) >> (4 * h + j)) & 1;
    const s4 = g < 8 ? v.getUint8(sc + g) & 15 : v.getUint8(sc + g - 8) >> 4;
    const s2 = (v.getUint8(sc + 8 + (g & 3)) >> (2 * (g >> 2))) & 3;
    y[e] = d * ((s4 | (s2 << 4)) - 32) * (low + 4 * high - 4);
  }
}

/** IQ4_NL's and IQ4_XS's code book: a 4-bit index stands for this value times the scale (ggml-quants.c, kvalues_iq4nl). */
export const IQ4NL_VALUES = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

// IQ4_NL, 18 bytes: d (fp16) | qs[16], indices packed as Q4_0's nibbles.  x = d * IQ4NL_VALUES[index]
function dequantIQ4_NL(v: DataView, at: number, y: Float64Array) {
  const d = f16At(v, at);
  for (let j = 0; j < 16; j++) {
    const b = v.getUint8(at + 2 + j);
    y[j] = d * IQ4NL_VALUES[b & 15];
    y[j + 16] = d * IQ4NL_VALUES[b >> 4];
  }
}

// IQ4_XS, 136 bytes per 256 values: d (fp16) | scales_h (u16) | scales_l[4] | qs[128]. Sub-block j of 32
// values has the 6-bit scale ls = nibble j % 2 of scales_l[j >> 1] | bits 2j..2j+1 of scales_h << 4 and
// its 16 bytes of qs packed as IQ4_NL.  x = d * (ls - 32) * IQ4NL_VALUES[index]
function dequantIQ4_XS(v: DataView, at: number, y: Float64Array) {
  const d = f16At(v, at);
  const sh = v.getUint16(at + 2, true);
  for (let j = 0; j < 8; j++) {
    const ls = ((v.getUint8(at + 4 + (j >> 1)) >> (4 * (j & 1))) & 15) | (((sh >> (2 * j)) & 3) << 4);
    for (let l = 0; l < 16; l++) {
      const b = v.getUint8(at + 8 + 16 * j + l);
      y[32 * j + l] = d * (ls - 32) * IQ4NL_VALUES[b & 15];
      y[32 * j + l + 16] = d * (ls - 32) * IQ4NL_VALUES[b >> 4];
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Quantization: values -> bytes. Round-to-nearest against the scales actually stored (after their own
// rounding to fp16 / 6 / 8 bits), so the only error is the final rounding plus, rarely, a clamp.

/** Encodes values as `type`; values.length must be a whole number of blocks. */
export function quantize(type: number | GgmlTypeName, values: ArrayLike<number>): Uint8Array {
  const id = typeId(type);
  const n = values.length;
  const out = new Uint8Array(byteSize(id, n));
  const v = new DataView(out.buffer);
  const { blockSize, typeSize } = GGML_TYPE_INFO[id];
  const x = Float64Array.from(values);
  for (let ib = 0; ib < n / blockSize; ib++) {
    const at = ib * typeSize;
    const xb = x.subarray(ib * blockSize, (ib + 1) * blockSize);
    switch (id) {
      case GGML_TYPE.F32:
        v.setFloat32(at, xb[0], true);
        break;
      case GGML_TYPE.F16:
        v.setUint16(at, fp16Bits(xb[0]), true);
        break;
      case GGML_TYPE.BF16:
        v.setUint16(at, bf16Bits(xb[0]), true);
        break;
      case GGML_TYPE.Q8_0:
        quantQ8_0(xb, v, at);
        break;
      case GGML_TYPE.Q4_0:
        quantSymmetric32(xb, v, at, 4);
        break;
      case GGML_TYPE.Q5_0:
        quantSymmetric32(xb, v, at, 5);
        break;
      case GGML_TYPE.Q4_1:
        quantAffine32(xb, v, at, 4);
        break;
      case GGML_TYPE.Q5_1:
        quantAffine32(xb, v, at, 5);
        break;
      case GGML_TYPE.Q4_K:
        quantK(xb, v, at, 4);
        break;
      case GGML_TYPE.Q5_K:
        quantK(xb, v, at, 5);
        break;
      case GGML_TYPE.Q6_K:
        quantQ6_K(xb, v, at);
        break;
      case GGML_TYPE.Q2_K:
        quantQ2_K(xb, v, at);
        break;
      case GGML_TYPE.Q3_K:
        quantQ3_K(xb, v, at);
        break;
      case GGML_TYPE.IQ4_NL:
        quantIQ4(xb, v, at, 1);
        break;
      case GGML_TYPE.IQ4_XS:
        quantIQ4(xb, v, at, 8);
        break;
    }
  }
  return out;
}

/** Stores x as fp16 at byte `at` and returns the stored value. */
function putF16(v: DataView, at: number, x: number): number {
  const bits = fp16Bits(x);
  v.setUint16(at, bits, true);
  return fp16Value(bits);
}

function quantQ8_0(x: Float64Array, v: DataView, at: number) {
  let amax = 0;
  for (const e of x) amax = Math.max(amax, Math.abs(e));
  const d = putF16(v, at, amax / 127);
  for (let i = 0; i < 32; i++) v.setInt8(at + 2 + i, d ? clamp(roundAway(x[i] / d), -128, 127) : 0);
}

/** Q4_0 / Q5_0: the value of largest magnitude maps to the most negative quant (-8 or -16). */
function quantSymmetric32(x: Float64Array, v: DataView, at: number, bits: 4 | 5) {
  const half = 1 << (bits - 1); // 8 or 16
  let extreme = 0;
  for (const e of x) if (Math.abs(e) > Math.abs(extreme)) extreme = e;
  const d = putF16(v, at, extreme / -half);
  const q = x.map((e) => (d ? clamp(roundAway(e / d) + half, 0, 2 * half - 1) : half));
  packNibbles32(q, v, bits === 4 ? at + 2 : at + 6);
  if (bits === 5) v.setUint32(at + 2, highBits32(q), true);
}

/** Q4_1 / Q5_1: min maps to quant 0, max to the top quant. */
function quantAffine32(x: Float64Array, v: DataView, at: number, bits: 4 | 5) {
  const top = (1 << bits) - 1; // 15 or 31
  let lo = Infinity,
    hi = -Infinity;
  for (const e of x) {
    lo = Math.min(lo, e);
    hi = Math.max(hi, e);
  }
  const d = putF16(v, at, (hi - lo) / top);
  const m = putF16(v, at + 2, lo);
  const q = x.map((e) => (d ? clamp(roundAway((e - m) / d), 0, top) : 0));
  packNibbles32(q, v, bits === 4 ? at + 4 : at + 8);
  if (bits === 5) v.setUint32(at + 4, highBits32(q), true);
}

/** 32 quants into 16 bytes: byte j = low nibble of q[j] | low nibble of q[j + 16] << 4. */
function packNibbles32(q: Float64Array, v: DataView, at: number) {
  for (let j = 0; j < 16; j++) v.setUint8(at + j, (q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
}

/** Bit i = the 5th bit of q[i]. */
function highBits32(q: Float64Array): number {
  let qh = 0;
  for (let i = 0; i < 32; i++) qh |= ((q[i] >> 4) & 1) << i;
  return qh >>> 0;
}

/**
 * Q4_K / Q5_K. Per 32-value sub-block j: the range [lo_j, hi_j] with lo_j <= 0 (the format can only
 * subtract a min), step_j = (hi_j - lo_j) / top. The block stores d = max step / 63 and
 * dmin = max(-lo) / 63 in fp16 and 6-bit multiples sc_j ~ step_j / d (rounded up so the range fits)
 * and m_j ~ -lo_j / dmin (rounded to nearest).
 */
function quantK(x: Float64Array, v: DataView, at: number, bits: 4 | 5) {
  const top = (1 << bits) - 1;
  const step = new Float64Array(8);
  const offset = new Float64Array(8);
  for (let j = 0; j < 8; j++) {
    let lo = 0,
      hi = -Infinity;
    for (let i = 32 * j; i < 32 * j + 32; i++) {
      lo = Math.min(lo, x[i]);
      hi = Math.max(hi, x[i]);
    }
    step[j] = (hi - lo) / top;
    offset[j] = -lo;
  }
  const d = putF16(v, at, Math.max(...step) / 63);
  const dmin = putF16(v, at + 2, Math.max(...offset) / 63);
  const sc = step.map((s) => (d ? clamp(Math.ceil(s / d), 0, 63) : 0));
  const m = offset.map((o) => (dmin ? clamp(roundAway(o / dmin), 0, 63) : 0));

  // pack the 8 (scale, min) pairs into 12 bytes: the inverse of kScaleMin
  const s = new Uint8Array(12);
  for (let j = 0; j < 8; j++) {
    if (j < 4) {
      s[j] = sc[j];
      s[j + 4] = m[j];
    } else {
      s[j + 4] = (sc[j] & 0x0f) | ((m[j] & 0x0f) << 4);
      s[j - 4] |= (sc[j] >> 4) << 6;
      s[j] |= (m[j] >> 4) << 6;
    }
  }
  for (let i = 0; i < 12; i++) v.setUint8(at + 4 + i, s[i]);

  // quants: x ~ d*sc*q - dmin*m
  const q = new Uint8Array(256);
  for (let e = 0; e < 256; e++) {
    const j = e >> 5;
    const scale = d * sc[j];
    q[e] = scale ? clamp(roundAway((x[e] + dmin * m[j]) / scale), 0, top) : 0;
  }
  const qs = bits === 4 ? at + 16 : at + 48;
  for (let c = 0; c < 4; c++) {
    for (let l = 0; l < 32; l++) {
      const lo = q[64 * c + l],
        hi = q[64 * c + 32 + l];
      v.setUint8(qs + 32 * c + l, (lo & 0x0f) | ((hi & 0x0f) << 4));
      if (bits === 5) {
        const qh = at + 16 + l;
        v.setUint8(qh, v.getUint8(qh) | ((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
  }
}

/**
 * Q6_K. Per 16-value sub-block j: step_j = max|x| / 31 so quants stay in -31..31. The block stores
 * d = max step / 127 in fp16 and int8 multiples sc_j ~ step_j / d (rounded up so the range fits).
 */
function quantQ6_K(x: Float64Array, v: DataView, at: number) {
  const step = new Float64Array(16);
  for (let j = 0; j < 16; j++) {
    let amax = 0;
    for (let i = 16 * j; i < 16 * j + 16; i++) amax = Math.max(amax, Math.abs(x[i]));
    step[j] = amax / 31;
  }
  const d = putF16(v, at + 208, Math.max(...step) / 127);
  const sc = step.map((s) => (d ? clamp(Math.ceil(s / d), 0, 127) : 0));
  for (let j = 0; j < 16; j++) v.setInt8(at + 192 + j, sc[j]);

  for (let e = 0; e < 256; e++) {
    const scale = d * sc[e >> 4];
    const u = (scale ? clamp(roundAway(x[e] / scale), -32, 31) : 0) + 32; // 0..63
    const h = e >> 7,
      g = (e >> 5) & 3,
      l = e & 31;
    const qlAt = at + 64 * h + l + 32 * (g & 1);
    v.setUint8(qlAt, v.getUint8(qlAt) | ((u & 0x0f) << (g < 2 ? 0 : 4)));
    const qhAt = at + 128 + 32 * h + l;
    v.setUint8(qhAt, v.getUint8(qhAt) | ((u >> 4) << (2 * g)));
  }
}

/**
 * Q2_K. Per 16-value group g: the range [lo_g, hi_g] with lo_g <= 0, step_g = (hi_g - lo_g) / 3. The block
 * stores d = max step / 15 and dmin = max(-lo) / 15 in fp16 and 4-bit multiples sc_g ~ step_g / d
 * (rounded up so the range fits) and m_g ~ -lo_g / dmin.
 */
function quantQ2_K(x: Float64Array, v: DataView, at: number) {
  const step = new Float64Array(16);
  const offset = new Float64Array(16);
  for (let g = 0; g < 16; g++) {
    let lo = 0,
      hi = -Infinity;
    for (let i = 16 * g; i < 16 * g + 16; i++) {
      lo = Math.min(lo, x[i]);
      hi = Math.max(hi, x[i]);
    }
    step[g] = (hi - lo) / 3;
    offset[g] = -lo;
  }
  const d = putF16(v, at + 80, Math.max(...step) / 15);
  const dmin = putF16(v, at + 82, Math.max(...offset) / 15);
  for (let g = 0; g < 16; g++) {
    const sc = d ? clamp(Math.ceil(step[g] / d), 0, 15) : 0;
    const m = dmin ? clamp(roundAway(offset[g] / dmin), 0, 15) : 0;
    v.setUint8(at + g, sc | (m << 4));
    for (let i = 16 * g; i < 16 * g + 16; i++) {
      const q = sc ? clamp(roundAway((x[i] + dmin * m) / (d * sc)), 0, 3) : 0;
      const qAt = at + 16 + 32 * (i >> 7) + (i & 31);
      v.setUint8(qAt, v.getUint8(qAt) | (q << (2 * ((i >> 5) & 3))));
    }
  }
}

/**
 * Q3_K. Per 16-value group g: step_g = max|x| / 3 so quants stay in -3..3. The block stores
 * d = max step / 31 in fp16 and 6-bit scales sc_g = 32 + ceil(step_g / d).
 */
function quantQ3_K(x: Float64Array, v: DataView, at: number) {
  const step = new Float64Array(16);
  for (let g = 0; g < 16; g++) {
    let amax = 0;
    for (let i = 16 * g; i < 16 * g + 16; i++) amax = Math.max(amax, Math.abs(x[i]));
    step[g] = amax / 3;
  }
  const d = putF16(v, at + 108, Math.max(...step) / 31);
  for (let g = 0; g < 16; g++) {
    const sc = d ? clamp(Math.ceil(step[g] / d), 0, 31) : 0;
    const s = sc + 32;
    const s4At = at + 96 + (g & 7);
    v.setUint8(s4At, v.getUint8(s4At) | ((s & 15) << (g < 8 ? 0 : 4)));
    const s2At = at + 96 + 8 + (g & 3);
    v.setUint8(s2At, v.getUint8(s2At) | ((s >> 4) << (2 * (g >> 2))));
    for (let e = 16 * g; e < 16 * g + 16; e++) {
      const q = sc ? clamp(roundAway(x[e] / (d * sc)), -4, 3) : 0;
      const j = (e >> 5) & 3,
        h = e >> 7,
        l = e & 31;
      const qAt = at + 32 + 32 * h + l;
      v.setUint8(qAt, v.getUint8(qAt) | (((q + 4) & 3) << (2 * j)));
      if (q >= 0) v.setUint8(at + l, v.getUint8(at + l) | (1 << (4 * h + j)));
    }
  }
}

/** The index of the code book value nearest to t. */
function nearestIQ4(t: number): number {
  let best = 0;
  for (let k = 1; k < 16; k++) if (Math.abs(t - IQ4NL_VALUES[k]) < Math.abs(t - IQ4NL_VALUES[best])) best = k;
  return best;
}

/**
 * IQ4_NL (subBlocks = 1) and IQ4_XS (subBlocks = 8). Per 32-value sub-block: the scale that maps the
 * value of largest magnitude onto the code book's end of that sign (-127 or 113). IQ4_XS stores
 * d = the largest |scale| / 31 in fp16 and 6-bit multiples ls - 32 ~ scale / d.
 */
function quantIQ4(x: Float64Array, v: DataView, at: number, subBlocks: 1 | 8) {
  const scale = new Float64Array(subBlocks);
  for (let j = 0; j < subBlocks; j++) {
    let extreme = 0;
    for (let i = 32 * j; i < 32 * j + 32; i++) if (Math.abs(x[i]) > Math.abs(extreme)) extreme = x[i];
    scale[j] = extreme < 0 ? extreme / -127 : extreme / 113;
  }
  const qsAt = subBlocks === 1 ? at + 2 : at + 8;
  const d = putF16(v, at, subBlocks === 1 ? scale[0] : Math.max(...scale) / 31);
  for (let j = 0; j < subBlocks; j++) {
    let dj = d;
    if (subBlocks === 8) {
      const ls = d ? clamp(roundAway(scale[j] / d), 0, 31) : 0;
      v.setUint8(at + 4 + (j >> 1), v.getUint8(at + 4 + (j >> 1)) | (((ls + 32) & 15) << (4 * (j & 1))));
      v.setUint16(at + 2, v.getUint16(at + 2, true) | (((ls + 32) >> 4) << (2 * j)), true);
      dj = d * ls;
    }
    for (let l = 0; l < 16; l++) {
      const lo = dj ? nearestIQ4(x[32 * j + l] / dj) : 8,
        hi = dj ? nearestIQ4(x[32 * j + l + 16] / dj) : 8;
      v.setUint8(qsAt + 16 * j + l, lo | (hi << 4));
    }
  }
}
