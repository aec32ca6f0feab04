// Writes GGUF files (version 3, little-endian) for test fixtures: vocabulary-only files, random-weight
// models, and the raw material of the broken-file corpus. The layout is the one the engine's reader
// documents in native/src/gguf/gguf.h.
import { writeFileSync } from 'node:fs';
import { T } from './ggml-types.ts';

export enum ValueType {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
}

/** ggml tensor type ids, as numbered in GGUF files (ggml-types.ts). */
export const TensorType = T;
export type TensorTypeName = keyof typeof TensorType;

/** A metadata value with an explicit GGUF type (plain JS values are typed by `inferValue`). */
export type Typed =
  | { type: Exclude<ValueType, ValueType.ARRAY>; value: number | bigint | boolean | string }
  | { type: ValueType.ARRAY; elementType: ValueType; value: Typed[] | (number | bigint | boolean | string)[] };

export type MetaValue = string | number | boolean | bigint | string[] | number[] | boolean[] | Typed;

export interface TensorSpec {
  name: string;
  /** ggml order: dims[0] is the row length. */
  dims: number[];
  type: number;
  /** Raw bytes in the tensor type's block layout. */
  data: Uint8Array;
}

export interface GgufSpec {
  version?: number;
  alignment?: number;
  metadata: [string, MetaValue][] | Record<string, MetaValue>;
  tensors?: TensorSpec[];
}

export const u32 = (value: number): Typed => ({ type: ValueType.UINT32, value });
export const i32 = (value: number): Typed => ({ type: ValueType.INT32, value });
export const f32 = (value: number): Typed => ({ type: ValueType.FLOAT32, value });
export const u64 = (value: number | bigint): Typed => ({ type: ValueType.UINT64, value: BigInt(value) });
export const arr = (elementType: ValueType, value: Typed[] | (number | bigint | boolean | string)[]): Typed => ({
  type: ValueType.ARRAY,
  elementType,
  value,
});

/** Plain JS values: strings are STRING, integers UINT32 (INT32 when negative), other numbers FLOAT32. */
export function inferValue(v: MetaValue): Typed {
  if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Typed;
  if (typeof v === 'string') return { type: ValueType.STRING, value: v };
  if (typeof v === 'boolean') return { type: ValueType.BOOL, value: v };
  if (typeof v === 'bigint') return { type: ValueType.UINT64, value: v };
  if (typeof v === 'number') {
    if (Number.isInteger(v)) return { type: v < 0 ? ValueType.INT32 : ValueType.UINT32, value: v };
    return { type: ValueType.FLOAT32, value: v };
  }
  const a = v as (string | number | boolean)[];
  if (a.length === 0) return { type: ValueType.ARRAY, elementType: ValueType.INT32, value: [] };
  const first = inferValue(a[0]);
  let elementType = first.type;
  if (typeof a[0] === 'number') {
    const nums = a as number[];
    elementType = nums.every(Number.isInteger) ? ValueType.INT32 : ValueType.FLOAT32;
  }
  return { type: ValueType.ARRAY, elementType, value: a };
}

/** Appends little-endian primitives to a growing byte buffer. */
export class ByteWriter {
  private buf = new Uint8Array(1 << 16);
  private view = new DataView(this.buf.buffer);
  length = 0;

  private reserve(n: number): number {
    if (this.length + n > this.buf.length) {
      let cap = this.buf.length * 2;
      while (cap < this.length + n) cap *= 2;
      const next = new Uint8Array(cap);
      next.set(this.buf.subarray(0, this.length));
      this.buf = next;
      this.view = new DataView(next.buffer);
    }
    const at = this.length;
    this.length += n;
    return at;
  }
  // reserve() may replace buf/view with larger ones, so take the offset before touching either
  u8(v: number) {
    const at = this.reserve(1);
    this.view.setUint8(at, v);
  }
  i8(v: number) {
    const at = this.reserve(1);
    this.view.setInt8(at, v);
  }
  u16(v: number) {
    const at = this.reserve(2);
    this.view.setUint16(at, v, true);
  }
  i16(v: number) {
    const at = this.reserve(2);
    this.view.setInt16(at, v, true);
  }
  u32(v: number) {
    const at = this.reserve(4);
    this.view.setUint32(at, v, true);
  }
  i32(v: number) {
    const at = this.reserve(4);
    this.view.setInt32(at, v, true);
  }
  u64(v: number | bigint) {
    const at = this.reserve(8);
    this.view.setBigUint64(at, BigInt(v), true);
  }
  i64(v: number | bigint) {
    const at = this.reserve(8);
    this.view.setBigInt64(at, BigInt(v), true);
  }
  f32(v: number) {
    const at = this.reserve(4);
    this.view.setFloat32(at, v, true);
  }
  f64(v: number) {
    const at = this.reserve(8);
    this.view.setFloat64(at, v, true);
  }
  bytes(b: Uint8Array) {
    const at = this.reserve(b.length);
    this.buf.set(b, at);
  }
  str(s: string) {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.bytes(b);
  }
  padTo(alignment: number) {
    while (this.length % alignment) this.u8(0);
  }
  result(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}

function writeScalar(w: ByteWriter, type: ValueType, v: number | bigint | boolean | string) {
  switch (type) {
    case ValueType.UINT8:
      w.u8(Number(v));
      break;
    case ValueType.INT8:
      w.i8(Number(v));
      break;
    case ValueType.UINT16:
      w.u16(Number(v));
      break;
    case ValueType.INT16:
      w.i16(Number(v));
      break;
    case ValueType.UINT32:
      w.u32(Number(v));
      break;
    case ValueType.INT32:
      w.i32(Number(v));
      break;
    case ValueType.FLOAT32:
      w.f32(Number(v));
      break;
    case ValueType.BOOL:
      w.u8(v ? 1 : 0);
      break;
    case ValueType.STRING:
      w.str(String(v));
      break;
    case ValueType.UINT64:
      w.u64(typeof v === 'bigint' ? v : BigInt(Number(v)));
      break;
    case ValueType.INT64:
      w.i64(typeof v === 'bigint' ? v : BigInt(Number(v)));
      break;
    case ValueType.FLOAT64:
      w.f64(Number(v));
      break;
    default:
      throw new Error(`not a scalar GGUF type: ${type}`);
  }
}

function writeValueBody(w: ByteWriter, t: Typed) {
  if (t.type !== ValueType.ARRAY) return writeScalar(w, t.type, t.value);
  w.u32(t.elementType);
  w.u64(t.value.length);
  for (const e of t.value) {
    if (t.elementType === ValueType.ARRAY) writeValueBody(w, e as Typed);
    else writeScalar(w, t.elementType, e as number | bigint | boolean | string);
  }
}

/** Serialises a GGUF file. Tensor data is placed in order, each at a multiple of the alignment. */
export function buildGguf(spec: GgufSpec): Uint8Array {
  const alignment = spec.alignment ?? 32;
  const entries = Array.isArray(spec.metadata) ? spec.metadata : Object.entries(spec.metadata);
  const tensors = spec.tensors ?? [];
  const w = new ByteWriter();
  w.bytes(Buffer.from('GGUF'));
  w.u32(spec.version ?? 3);
  w.u64(tensors.length);
  w.u64(entries.length);
  for (const [key, value] of entries) {
    const t = inferValue(value);
    w.str(key);
    w.u32(t.type);
    writeValueBody(w, t);
  }
  let offset = 0;
  for (const t of tensors) {
    w.str(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(t.type);
    w.u64(offset);
    offset += t.data.length;
    offset += (alignment - (offset % alignment)) % alignment;
  }
  if (tensors.length) {
    w.padTo(alignment);
    for (const t of tensors) {
      w.bytes(t.data);
      w.padTo(alignment);
    }
  }
  return w.result();
}

export function writeGguf(path: string, spec: GgufSpec): void {
  writeFileSync(path, buildGguf(spec));
}

/** F32 tensor data from numbers. */
export function f32Bytes(values: ArrayLike<number>): Uint8Array {
  const a = Float32Array.from(values);
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}
