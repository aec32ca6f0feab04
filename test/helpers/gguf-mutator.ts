// A structured GGUF mutator for the fuzzer: it walks a valid file once to learn where each field lies (the
// counts, every key's length, type tag and value, array element types and counts, string lengths, every
// tensor record's dims, type and offset, general.alignment), then makes mutants that hit those fields:
//   retype   a key's value re-encoded as another type (the class of every crash the first fuzzer found)
//   tag      a type tag (of a value or of an array's elements) overwritten in place, the value left as it was
//   length   a string length (key, value, array element, tensor name) set to a hostile value
//   count    the tensor or metadata count, or an array's element count, set to a hostile value
//   tensor   a tensor's dimension count, a dimension, its type or its data offset set to a hostile value
//   align    general.alignment set to a hostile value
//   number   an integer or float value set to a hostile value (0, negative, the type's extremes, NaN)
//   hparam   a hyperparameter the engine checks against a range (gguf-metadata-rules.ts) set, in its own
//            type, to a value at or just past an end of the range, or to NaN or an infinity
//   bytes    a few random bytes of the header overwritten, or the file cut short
// Each mutant applies 1 to 3 of them and is a pure function of (seed, index), so a failure is reproduced
// from its index alone. Mutants that change the header's length keep the tensor data at the next alignment.
import { METADATA_RULES, type MetadataRange } from '../../electron/models/gguf-metadata-rules.ts';
import { parseGguf } from './gguf-reader.ts';
import { buildGguf, ByteWriter, ValueType, type GgufSpec, type MetaValue } from './gguf-writer.ts';

export interface KvField {
  key: string;
  keyLenAt: number;
  typeAt: number;
  type: number;
  valueAt: number;
  valueEnd: number;
  /** Arrays: where the element type and the count are. */
  elementTypeAt?: number;
  countAt?: number;
  /** Where string lengths lie inside the value (a string value, or the first elements of a string array). */
  stringLenAt: number[];
}

export interface TensorField {
  nameLenAt: number;
  nDimsAt: number;
  dimsAt: number[];
  typeAt: number;
  offsetAt: number;
}

export interface GgufLayout {
  /** The header (metadata and tensor table) the fields lie in. */
  bytes: Uint8Array;
  /** The tensor data section, which mutants keep as it is and put after their header. */
  data: Uint8Array;
  kvs: KvField[];
  tensors: TensorField[];
  /** End of the tensor table; the data section starts at the next multiple of the alignment. */
  headerEnd: number;
  dataStart: number;
  alignment: number;
}

const SCALAR_SIZE: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

/** Walks a well-formed GGUF file (or a header, given the data section that follows it) and records where
 *  its fields are. */
export function layoutOf(bytes: Uint8Array, data?: Uint8Array): GgufLayout {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = 24;
  const u32 = () => {
    const v = view.getUint32(pos, true);
    pos += 4;
    return v;
  };
  const u64 = () => {
    const v = Number(view.getBigUint64(pos, true));
    pos += 8;
    return v;
  };
  const str = () => {
    const n = u64();
    const s = Buffer.from(bytes.subarray(pos, pos + n)).toString('utf8');
    pos += n;
    return s;
  };
  const skipValue = (type: number, lens: number[]) => {
    if (type === ValueType.STRING) {
      if (lens.length < 8) lens.push(pos);
      pos += 8 + Number(view.getBigUint64(pos, true));
      return;
    }
    if (type !== ValueType.ARRAY) {
      if (!(type in SCALAR_SIZE)) throw new RangeError(`unknown value type ${type}`); // pos must never turn NaN
      pos += SCALAR_SIZE[type];
      return;
    }
    const et = u32();
    const n = u64();
    // a mutated count must end the walk, not spin it: every element moves pos on, so stop at the end
    for (let i = 0; i < n && pos <= bytes.length; i++) skipValue(et, lens);
    if (pos > bytes.length) throw new RangeError('the array runs past the end of the file');
  };
  const nTensors = Number(view.getBigUint64(8, true));
  const nKv = Number(view.getBigUint64(16, true));
  const kvs: KvField[] = [];
  let alignment = 32;
  for (let k = 0; k < nKv; k++) {
    const keyLenAt = pos;
    const key = str();
    const typeAt = pos;
    const type = u32();
    const valueAt = pos;
    const f: KvField = { key, keyLenAt, typeAt, type, valueAt, valueEnd: 0, stringLenAt: [] };
    if (type === ValueType.ARRAY) {
      f.elementTypeAt = pos;
      f.countAt = pos + 4;
    }
    if (key === 'general.alignment' && type === ValueType.UINT32) {
      const a = view.getUint32(pos, true);
      // a mutated one (not a power of two, or one that would pad to gigabytes) is left to the readers
      if (a > 0 && (a & (a - 1)) === 0 && a <= 1 << 16) alignment = a;
    }
    skipValue(type, f.stringLenAt);
    f.valueEnd = pos;
    kvs.push(f);
  }
  const tensors: TensorField[] = [];
  for (let t = 0; t < nTensors; t++) {
    const nameLenAt = pos;
    str();
    const nDimsAt = pos;
    const nDims = u32();
    if (nDims > 4) throw new RangeError(`a tensor with ${nDims} dimensions`);
    const dimsAt: number[] = [];
    for (let d = 0; d < nDims; d++) {
      dimsAt.push(pos);
      pos += 8;
    }
    const typeAt = pos;
    pos += 4;
    const offsetAt = pos;
    pos += 8;
    tensors.push({ nameLenAt, nDimsAt, dimsAt, typeAt, offsetAt });
  }
  const headerEnd = pos;
  if (headerEnd > bytes.length) throw new RangeError('the header runs past the end of the file');
  const dataStart = nTensors ? Math.ceil(headerEnd / alignment) * alignment : headerEnd;
  // mutants copy the header alone: the data section of a real model is a thousand times larger
  return {
    bytes: bytes.subarray(0, headerEnd),
    data: data ?? bytes.subarray(Math.min(dataStart, bytes.length)),
    kvs,
    tensors,
    headerEnd,
    dataStart,
    alignment,
  };
}

/** mulberry32, seeded from (seed, index): the same mutant for the same pair on every machine. */
export class MutantRng {
  private s: number;
  constructor(seed: number, index: number) {
    this.s = (Math.imul(seed ^ 0x5bd1e995, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0;
  }
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(a: readonly T[]): T {
    return a[this.int(a.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** 64-bit values that break careless code: zero, one, off-by-one around powers of two, sign bits, all ones. */
const HOSTILE_U64 = [
  0n,
  1n,
  2n,
  3n,
  7n,
  31n,
  32n,
  33n,
  255n,
  256n,
  0x7fffn,
  0x8000n,
  0xffffn,
  0x10000n,
  0x7fffffffn,
  0x80000000n,
  0xffffffffn,
  0x100000000n,
  1n << 40n,
  1n << 53n,
  (1n << 62n) + 1n,
  (1n << 63n) - 1n,
  1n << 63n,
  (1n << 64n) - 1n,
  (1n << 64n) - 8n,
];

function hostileU64(rng: MutantRng, near?: bigint): bigint {
  if (near !== undefined && rng.chance(0.35)) {
    const d = BigInt(rng.pick([-9, -8, -2, -1, 1, 2, 8, 9, 1000, 1 << 20]));
    return BigInt.asUintN(64, near + d);
  }
  return rng.chance(0.8) ? rng.pick(HOSTILE_U64) : BigInt.asUintN(64, BigInt(rng.int(2 ** 32)) << BigInt(rng.int(33)));
}

/** A value of `type`, small and often hostile, encoded as GGUF writes it. */
function encodeValue(w: ByteWriter, type: number, rng: MutantRng, depth = 0): void {
  const n = () => hostileU64(rng);
  switch (type) {
    case ValueType.UINT8:
      w.u8(rng.int(256));
      break;
    case ValueType.INT8:
      w.i8(rng.int(256) - 128);
      break;
    case ValueType.UINT16:
      w.u16(Number(n() & 0xffffn));
      break;
    case ValueType.INT16:
      w.i16(Number(BigInt.asIntN(16, n())));
      break;
    case ValueType.UINT32:
      w.u32(Number(n() & 0xffffffffn));
      break;
    case ValueType.INT32:
      w.i32(Number(BigInt.asIntN(32, n())));
      break;
    case ValueType.FLOAT32:
      w.f32(rng.pick([0, -1, 1e-5, 1e38, -1e38, NaN, Infinity, 10000]));
      break;
    case ValueType.BOOL:
      w.u8(rng.chance(0.9) ? rng.int(2) : rng.int(256));
      break;
    case ValueType.STRING:
      w.str(rng.pick(['', 'llama', 'qwen2', 'gpt2', 'a b', '{{ bos_token }}', '\u0000\uffff', 'x'.repeat(300)]));
      break;
    case ValueType.UINT64:
      w.u64(n());
      break;
    case ValueType.INT64:
      w.i64(BigInt.asIntN(64, n()));
      break;
    case ValueType.FLOAT64:
      w.f64(rng.pick([0, -1, 1e-300, 1e300, NaN, -Infinity, 1e6]));
      break;
    case ValueType.ARRAY: {
      const et = depth < 2 ? rng.int(13) : rng.pick([ValueType.UINT8, ValueType.STRING, ValueType.FLOAT32]);
      const count = rng.int(6);
      w.u32(et);
      w.u64(count);
      for (let i = 0; i < count; i++) encodeValue(w, et, rng, depth + 1);
      break;
    }
  }
}

/** The tensor data of `base` put after a (possibly resized) header, at the next multiple of its alignment. */
function withData(header: Uint8Array, base: GgufLayout): Uint8Array {
  if (base.tensors.length === 0 && base.data.length === 0) return header;
  const start = Math.ceil(header.length / base.alignment) * base.alignment;
  const out = new Uint8Array(start + base.data.length);
  out.set(header, 0);
  out.set(base.data, start);
  return out;
}

// Keys the engine reads are hit more often than others: they are where the type checks matter.
const READ_KEY = /^(general\.(architecture|name|file_type)|split\.count|tokenizer\.|(llama|qwen2|qwen3)\.)/;

function pickKv(base: GgufLayout, rng: MutantRng, want?: (f: KvField) => boolean): KvField | undefined {
  const pool = base.kvs.filter((f) => !want || want(f));
  if (!pool.length) return undefined;
  const read = pool.filter((f) => READ_KEY.test(f.key));
  return rng.pick(read.length && rng.chance(0.8) ? read : pool);
}

// An operator changes the header `b` (a copy of base.bytes) in place or returns a new one; `cut` cuts the
// whole file (header and data) at that length.
type Op = (base: GgufLayout, b: Uint8Array, rng: MutantRng) => { bytes: Uint8Array; what: string; cut?: number } | null;

const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);

/** The range of a key as a file spells it ("llama.context_length"), when the table bounds it. */
function rangeOfKey(key: string): MetadataRange | undefined {
  const dot = key.indexOf('.');
  return METADATA_RULES.find((r) => r.key === key || r.key === `{arch}.${key.slice(dot + 1)}`)?.range;
}

/** Values at and just past the ends of `r`, and the ones no range accepts. */
function edgeValues(r: MetadataRange): number[] {
  const step = (x: number) => Math.max(1, Math.abs(x) * 1e-6);
  return [r.min, r.min - step(r.min), r.max, r.max + step(r.max), 0, -1, NaN, Infinity, -Infinity, 2 ** 31, 2 ** 32];
}

const OPS: Record<string, Op> = {
  retype(base, b, rng) {
    const f = pickKv(base, rng);
    if (!f) return null;
    const type = rng.int(13);
    const w = new ByteWriter();
    w.bytes(b.subarray(0, f.typeAt));
    w.u32(type);
    encodeValue(w, type, rng);
    w.bytes(b.subarray(f.valueEnd, base.headerEnd));
    return { bytes: w.result(), what: `retype ${f.key} to ${type}` };
  },
  tag(base, b, rng) {
    const f = pickKv(base, rng);
    if (!f) return null;
    const at = f.elementTypeAt !== undefined && rng.chance(0.5) ? f.elementTypeAt : f.typeAt;
    const t = rng.chance(0.9) ? rng.int(13) : rng.pick([13, 255, 0xffffffff]);
    view(b).setUint32(at, t, true);
    return { bytes: b, what: `tag of ${f.key} at ${at} = ${t}` };
  },
  length(base, b, rng) {
    const spots: number[] = [];
    for (const f of base.kvs) spots.push(f.keyLenAt, ...f.stringLenAt);
    for (const t of base.tensors) spots.push(t.nameLenAt);
    const at = rng.pick(spots);
    const v = hostileU64(rng, view(b).getBigUint64(at, true));
    view(b).setBigUint64(at, v, true);
    return { bytes: b, what: `length at ${at} = ${v}` };
  },
  count(base, b, rng) {
    const spots = [8, 16, ...base.kvs.filter((f) => f.countAt !== undefined).map((f) => f.countAt!)];
    const at = rng.pick(spots);
    const v = hostileU64(rng, view(b).getBigUint64(at, true));
    view(b).setBigUint64(at, v, true);
    return { bytes: b, what: `count at ${at} = ${v}` };
  },
  tensor(base, b, rng) {
    if (!base.tensors.length) return null;
    const t = rng.pick(base.tensors);
    const which = rng.int(4);
    if (which === 0) view(b).setUint32(t.nDimsAt, rng.pick([0, 1, 2, 3, 4, 5, 0xffffffff]), true);
    else if (which === 1 && t.dimsAt.length) {
      const at = rng.pick(t.dimsAt);
      view(b).setBigUint64(at, hostileU64(rng, view(b).getBigUint64(at, true)), true);
    } else if (which === 2) view(b).setUint32(t.typeAt, rng.chance(0.8) ? rng.int(42) : rng.int(2 ** 32), true);
    else view(b).setBigUint64(t.offsetAt, hostileU64(rng, view(b).getBigUint64(t.offsetAt, true)), true);
    return { bytes: b, what: `tensor field ${which} of the record at ${t.nameLenAt}` };
  },
  align(base, b, rng) {
    const f = base.kvs.find((k) => k.key === 'general.alignment' && k.type === ValueType.UINT32);
    if (!f) return null;
    const v = rng.pick([0, 1, 2, 3, 16, 48, 64, 1 << 20, 0x80000000, 0xffffffff]);
    view(b).setUint32(f.valueAt, v, true);
    return { bytes: b, what: `general.alignment = ${v}` };
  },
  number(base, b, rng) {
    const f = pickKv(base, rng, (k) => k.type in SCALAR_SIZE && k.type !== ValueType.BOOL);
    if (!f) return null;
    const w = new ByteWriter();
    encodeValue(w, f.type, rng);
    b.set(w.result().subarray(0, f.valueEnd - f.valueAt), f.valueAt);
    return { bytes: b, what: `value of ${f.key}` };
  },
  hparam(base, b, rng) {
    const f = pickKv(base, rng, (k) => k.type in SCALAR_SIZE && k.type !== ValueType.BOOL && !!rangeOfKey(k.key));
    if (!f) return null;
    const v = rng.pick(edgeValues(rangeOfKey(f.key)!));
    const d = view(b);
    const int = Number.isFinite(v) ? Math.trunc(v) : 0;
    switch (f.type) {
      case ValueType.FLOAT32:
        d.setFloat32(f.valueAt, v, true);
        break;
      case ValueType.FLOAT64:
        d.setFloat64(f.valueAt, v, true);
        break;
      case ValueType.UINT64:
      case ValueType.INT64:
        d.setBigUint64(f.valueAt, BigInt.asUintN(64, BigInt(int)), true);
        break;
      default: // the narrower integers wrap, as a careless converter would write them
        if (SCALAR_SIZE[f.type] === 4) d.setUint32(f.valueAt, int >>> 0, true);
        else if (SCALAR_SIZE[f.type] === 2) d.setUint16(f.valueAt, int & 0xffff, true);
        else d.setUint8(f.valueAt, int & 0xff);
    }
    return { bytes: b, what: `${f.key} = ${v}` };
  },
  bytes(base, b, rng) {
    if (rng.chance(0.3)) {
      const n = rng.int(b.length + base.data.length + 64);
      return { bytes: b, what: `cut at ${n}`, cut: n };
    }
    const k = 1 + rng.int(8);
    for (let i = 0; i < k; i++) b[rng.int(base.headerEnd)] = rng.int(256);
    return { bytes: b, what: `${k} bytes flipped` };
  },
};

const OP_NAMES = Object.keys(OPS);
// Weights of the operators: the structured ones (types first) far more often than random bytes.
const OP_WEIGHTS: Record<string, number> = {
  retype: 5,
  tag: 3,
  length: 2,
  count: 2,
  tensor: 2,
  align: 1,
  number: 3,
  hparam: 2,
  bytes: 1,
};
const OP_TABLE = OP_NAMES.flatMap((n) => new Array(OP_WEIGHTS[n]).fill(n) as string[]);

export interface Mutant {
  bytes: Uint8Array;
  /** What was done, for the report of a failure. */
  ops: string[];
}

/**
 * Mutant `index` of the run `seed` over `bases` (index mod the number of bases picks the file). After an
 * operator that resizes the header the rest work on a fresh layout of the result, when it still parses.
 */
export function makeMutant(bases: readonly GgufLayout[], seed: number, index: number): Mutant {
  const rng = new MutantRng(seed, index);
  let base = bases[index % bases.length];
  let header: Uint8Array = base.bytes.slice();
  let cut: number | undefined;
  const ops: string[] = [];
  const n = 1 + rng.int(3);
  for (let i = 0; i < n; i++) {
    const r = OPS[rng.pick(OP_TABLE)](base, header, rng);
    if (!r) continue;
    ops.push(r.what);
    header = r.bytes;
    cut = r.cut;
    if (cut !== undefined || i + 1 === n) break; // a cut comes last: the fields after it are gone
    try {
      base = layoutOf(header, base.data);
    } catch {
      break; // no longer walkable: further structured operators would be guesses
    }
  }
  const bytes = withData(header, base);
  return { bytes: cut === undefined ? bytes : bytes.subarray(0, Math.min(cut, bytes.length)), ops };
}

/** A base file from a spec (for the fuzz corpus's generated files). */
export function layoutOfSpec(spec: GgufSpec): GgufLayout {
  return layoutOf(buildGguf(spec));
}

/** `bytes` (a well-formed GGUF file) re-encoded after `edit` changed its metadata; every key keeps its type
 *  unless edited, the tensors are kept as they are. */
export function rewriteMetadata(
  bytes: Uint8Array,
  edit: (meta: [string, MetaValue][]) => [string, MetaValue][],
): Uint8Array {
  const f = parseGguf(bytes);
  const meta: [string, MetaValue][] = [...f.metadata.entries()].map(([k, v]) => {
    const t = f.types.get(k)!;
    return [
      k,
      (t.type === ValueType.ARRAY
        ? { type: t.type, elementType: t.elementType!, value: v }
        : { type: t.type, value: v }) as MetaValue,
    ];
  });
  return buildGguf({
    metadata: edit(meta),
    tensors: f.tensors.map((t) => ({ name: t.name, dims: t.dims, type: t.type, data: t.data })),
  });
}

/** `bytes` with `key` set to `value` (appended when absent): the wrong-typed files of the type-check tests. */
export function withKey(bytes: Uint8Array, key: string, value: MetaValue): Uint8Array {
  return rewriteMetadata(bytes, (meta) => {
    const at = meta.findIndex(([k]) => k === key);
    if (at >= 0) meta[at] = [key, value];
    else meta.push([key, value]);
    return meta;
  });
}
