// A small, independent GGUF reader for test oracles. It reads well-formed files only (version 2 or 3,
// little-endian) and does no validation beyond what it needs to walk the file: the engine's own reader
// is the one that must survive hostile input, and this one is what it is checked against.
//
// File layout (GGUF v2/v3, all integers little-endian):
//   magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//   n_kv times:      string key | u32 value_type | value
//   n_tensors times: string name | u32 n_dims | u64 dims[n_dims] | u32 ggml_type | u64 offset
//   padding to the alignment (general.alignment, default 32)
//   tensor data; each tensor starts at data_start + offset
// A string is u64 byte length + UTF-8 bytes. An array value is u32 element_type | u64 count | elements,
// and its elements may themselves be arrays.
import { readFileSync } from 'node:fs';
import { GGML_TYPE_INFO } from './quant-ref.ts';

/** GGUF metadata value types, as numbered in the file. */
export const GGUF_VALUE_TYPE = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;

/** A decoded metadata value: 64-bit integers are bigint, arrays are (possibly nested) JS arrays. */
export type GgufValue = number | bigint | boolean | string | GgufValue[];

/** The type of a metadata entry; for arrays also the element type (of the outer array). */
export interface GgufKvType {
  type: number;
  elementType?: number;
}

export interface GgufTensor {
  name: string;
  /** ggml order: dims[0] is the row length (the fastest-varying index). */
  dims: number[];
  /** ggml type id (see GGML_TYPE in quant-ref.ts). */
  type: number;
  /** Offset of the data relative to the start of the data section, as stored in the file. */
  offset: number;
  /** Absolute offset of the data in the file. */
  fileOffset: number;
  nElements: number;
  nBytes: number;
  /** A view of the tensor's bytes inside the file buffer (no copy). */
  data: Uint8Array;
}

export interface GgufFile {
  version: number;
  metadata: Map<string, GgufValue>;
  types: Map<string, GgufKvType>;
  tensors: GgufTensor[];
  tensorsByName: Map<string, GgufTensor>;
  alignment: number;
  /** Absolute offset of the tensor data section. */
  dataStart: number;
  /** The whole file. */
  bytes: Uint8Array;
}

/** Reads and parses a GGUF file from disk. */
export function readGguf(path: string): GgufFile {
  return parseGguf(new Uint8Array(readFileSync(path)));
}

/** Parses a GGUF file held in memory. Tensor data views point into `bytes`. */
export function parseGguf(bytes: Uint8Array): GgufFile {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const utf8 = new TextDecoder('utf-8');
  let pos = 0;

  const u8 = () => view.getUint8(pos++);
  const u32 = () => {
    const v = view.getUint32(pos, true);
    pos += 4;
    return v;
  };
  const u64 = () => {
    const v = view.getBigUint64(pos, true);
    pos += 8;
    return v;
  };
  const count = () => Number(u64());
  const str = () => {
    const n = count();
    const s = utf8.decode(bytes.subarray(pos, pos + n));
    pos += n;
    return s;
  };

  function readValue(type: number): GgufValue {
    const T = GGUF_VALUE_TYPE;
    let v: GgufValue;
    switch (type) {
      case T.UINT8:
        return u8();
      case T.INT8:
        v = view.getInt8(pos);
        pos += 1;
        return v;
      case T.UINT16:
        v = view.getUint16(pos, true);
        pos += 2;
        return v;
      case T.INT16:
        v = view.getInt16(pos, true);
        pos += 2;
        return v;
      case T.UINT32:
        return u32();
      case T.INT32:
        v = view.getInt32(pos, true);
        pos += 4;
        return v;
      case T.FLOAT32:
        v = view.getFloat32(pos, true);
        pos += 4;
        return v;
      case T.BOOL:
        return u8() !== 0;
      case T.STRING:
        return str();
      case T.UINT64:
        return u64();
      case T.INT64:
        v = view.getBigInt64(pos, true);
        pos += 8;
        return v;
      case T.FLOAT64:
        v = view.getFloat64(pos, true);
        pos += 8;
        return v;
      case T.ARRAY: {
        const elementType = u32();
        const n = count();
        const out: GgufValue[] = new Array(n);
        for (let i = 0; i < n; i++) out[i] = readValue(elementType);
        return out;
      }
      default:
        throw new Error(`GGUF: unknown value type ${type} at byte ${pos}`);
    }
  }

  // header
  const magic = utf8.decode(bytes.subarray(0, 4));
  if (magic !== 'GGUF') throw new Error(`not a GGUF file (magic ${JSON.stringify(magic)})`);
  pos = 4;
  const version = u32();
  if (version !== 2 && version !== 3) throw new Error(`GGUF version ${version} is not supported (2 or 3)`);
  const nTensors = count();
  const nKv = count();

  // metadata
  const metadata = new Map<string, GgufValue>();
  const types = new Map<string, GgufKvType>();
  for (let i = 0; i < nKv; i++) {
    const key = str();
    const type = u32();
    if (type === GGUF_VALUE_TYPE.ARRAY) {
      // peek at the element type for the types map; readValue reads it again
      types.set(key, { type, elementType: view.getUint32(pos, true) });
    } else {
      types.set(key, { type });
    }
    metadata.set(key, readValue(type));
  }

  // tensor table
  const infos: { name: string; dims: number[]; type: number; offset: number }[] = [];
  for (let i = 0; i < nTensors; i++) {
    const name = str();
    const nDims = u32();
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) dims.push(count());
    const type = u32();
    const offset = count();
    infos.push({ name, dims, type, offset });
  }

  const alignmentValue = metadata.get('general.alignment');
  const alignment = typeof alignmentValue === 'number' ? alignmentValue : 32;
  const dataStart = Math.ceil(pos / alignment) * alignment;

  const tensors: GgufTensor[] = infos.map((t) => {
    const nElements = t.dims.reduce((a, b) => a * b, 1);
    const info = GGML_TYPE_INFO[t.type];
    if (!info) throw new Error(`GGUF: tensor ${t.name} has unsupported ggml type ${t.type}`);
    const nBytes = (nElements / info.blockSize) * info.typeSize;
    const fileOffset = dataStart + t.offset;
    if (fileOffset + nBytes > bytes.length) throw new Error(`GGUF: tensor ${t.name} runs past the end of the file`);
    return { ...t, fileOffset, nElements, nBytes, data: bytes.subarray(fileOffset, fileOffset + nBytes) };
  });

  return {
    version,
    metadata,
    types,
    tensors,
    alignment,
    dataStart,
    bytes,
    tensorsByName: new Map(tensors.map((t) => [t.name, t])),
  };
}

/** A metadata value that must be present. */
export function metaValue(file: GgufFile, key: string): GgufValue {
  const v = file.metadata.get(key);
  if (v === undefined) throw new Error(`GGUF: missing metadata key ${key}`);
  return v;
}

/** A numeric metadata value (any integer or float type) as a JS number; `fallback` when absent. */
export function metaNumber(file: GgufFile, key: string, fallback?: number): number {
  const v = file.metadata.get(key);
  if (v === undefined) {
    if (fallback === undefined) throw new Error(`GGUF: missing metadata key ${key}`);
    return fallback;
  }
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  throw new Error(`GGUF: metadata key ${key} is not a number`);
}

/** A string metadata value. */
export function metaString(file: GgufFile, key: string): string {
  const v = metaValue(file, key);
  if (typeof v !== 'string') throw new Error(`GGUF: metadata key ${key} is not a string`);
  return v;
}
