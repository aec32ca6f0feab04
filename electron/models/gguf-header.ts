// Reads the header of a GGUF file (metadata and tensor table, never the tensor data) from disk, in
// chunks, and sums it up for the model list: name, architecture, quantization, context length,
// parameter count, layers, heads, head size, vocabulary size, and whether Folio's engine runs it.
//
// Layout (GGUF v2/v3, little-endian):
//   "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//   n_kv ×      string key | u32 value_type | value
//   n_tensors × string name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset
//   padding to general.alignment (default 32), then the tensor data.
// A string is a u64 byte length + UTF-8 bytes; an array is u32 element_type | u64 count | elements.
//
// Hostile input: every count and length is checked against the bytes left in the file before anything
// is allocated or read, arrays nest at most 8 deep, the header may not exceed `maxHeaderBytes`, and
// large arrays (the vocabulary, the merges) are walked without being kept. The error codes are the
// native reader's (native/src/gguf/gguf.cc), so both readers describe a broken file the same way.
import { open, type FileHandle } from 'node:fs/promises';

import { ApiError } from '../api/contract.ts';
import { checkMetadata } from './gguf-metadata-rules.ts';
import { GGUF_VALUE_TYPE, SUPPORTED_ARCHITECTURES, SUPPORTED_TENSOR_TYPES } from './gguf-tables.ts';

export { GGUF_VALUE_TYPE, SUPPORTED_ARCHITECTURES, SUPPORTED_TENSOR_TYPES } from './gguf-tables.ts';

// ---------------------------------------------------------------------------------------------------
// Tables

/** Encoded size of each scalar value type; strings and arrays have a minimum of 8 and 12 bytes. */
const VALUE_SIZE: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
const minEncodedSize = (type: number) => (type === 8 ? 8 : type === 9 ? 12 : VALUE_SIZE[type]);

export interface GgmlTypeInfo {
  name: string;
  /** Elements per block. */
  blockSize: number;
  /** Bytes per block. */
  typeSize: number;
}

/**
 * ggml tensor types by id. Ids from llama.cpp ggml/include/ggml.h (enum ggml_type); block sizes and
 * bytes per block from the block structs and their static_asserts in ggml/src/ggml-common.h
 * (QK_K = 256). Ids 4, 5 (Q4_2, Q4_3) and 31-33, 36-38 (the repacked Q4_0/IQ4_NL variants) were
 * removed from GGUF files and are not listed.
 */
export const GGML_TYPES: Readonly<Record<number, GgmlTypeInfo>> = {
  0: { name: 'F32', blockSize: 1, typeSize: 4 },
  1: { name: 'F16', blockSize: 1, typeSize: 2 },
  2: { name: 'Q4_0', blockSize: 32, typeSize: 18 }, //      d + 16 bytes of nibbles
  3: { name: 'Q4_1', blockSize: 32, typeSize: 20 }, //      d, m + 16
  6: { name: 'Q5_0', blockSize: 32, typeSize: 22 }, //      d + 4 (high bits) + 16
  7: { name: 'Q5_1', blockSize: 32, typeSize: 24 }, //      d, m + 4 + 16
  8: { name: 'Q8_0', blockSize: 32, typeSize: 34 }, //      d + 32
  9: { name: 'Q8_1', blockSize: 32, typeSize: 36 }, //      d, s + 32
  10: { name: 'Q2_K', blockSize: 256, typeSize: 84 }, //    16 scales + 64 quants + d, dmin
  11: { name: 'Q3_K', blockSize: 256, typeSize: 110 }, //   32 hmask + 64 + 12 scales + d
  12: { name: 'Q4_K', blockSize: 256, typeSize: 144 }, //   d, dmin + 12 + 128
  13: { name: 'Q5_K', blockSize: 256, typeSize: 176 }, //   d, dmin + 12 + 32 + 128
  14: { name: 'Q6_K', blockSize: 256, typeSize: 210 }, //   128 + 64 + 16 + d
  15: { name: 'Q8_K', blockSize: 256, typeSize: 292 }, //   f32 d + 256 + 16 × i16
  16: { name: 'IQ2_XXS', blockSize: 256, typeSize: 66 },
  17: { name: 'IQ2_XS', blockSize: 256, typeSize: 74 },
  18: { name: 'IQ3_XXS', blockSize: 256, typeSize: 98 },
  19: { name: 'IQ1_S', blockSize: 256, typeSize: 50 },
  20: { name: 'IQ4_NL', blockSize: 32, typeSize: 18 },
  21: { name: 'IQ3_S', blockSize: 256, typeSize: 110 },
  22: { name: 'IQ2_S', blockSize: 256, typeSize: 82 },
  23: { name: 'IQ4_XS', blockSize: 256, typeSize: 136 },
  24: { name: 'I8', blockSize: 1, typeSize: 1 },
  25: { name: 'I16', blockSize: 1, typeSize: 2 },
  26: { name: 'I32', blockSize: 1, typeSize: 4 },
  27: { name: 'I64', blockSize: 1, typeSize: 8 },
  28: { name: 'F64', blockSize: 1, typeSize: 8 },
  29: { name: 'IQ1_M', blockSize: 256, typeSize: 56 },
  30: { name: 'BF16', blockSize: 1, typeSize: 2 },
  34: { name: 'TQ1_0', blockSize: 256, typeSize: 54 },
  35: { name: 'TQ2_0', blockSize: 256, typeSize: 66 },
  39: { name: 'MXFP4', blockSize: 32, typeSize: 17 }, //    e8m0 exponent + 16
};

/**
 * llama.cpp's general.file_type values (enum llama_ftype in llama.cpp include/llama.h) with the names
 * llama-quantize and the model hubs use, not the enum's (ALL_F32, MOSTLY_Q4_0): the model list shows them.
 * 4-6 and 33-35 were removed from llama.cpp; 1024 means "guessed".
 */
export const LLAMA_FILE_TYPES: Readonly<Record<number, string>> = {
  0: 'F32',
  1: 'F16',
  2: 'Q4_0',
  3: 'Q4_1',
  7: 'Q8_0',
  8: 'Q5_0',
  9: 'Q5_1',
  10: 'Q2_K',
  11: 'Q3_K_S',
  12: 'Q3_K_M',
  13: 'Q3_K_L',
  14: 'Q4_K_S',
  15: 'Q4_K_M',
  16: 'Q5_K_S',
  17: 'Q5_K_M',
  18: 'Q6_K',
  19: 'IQ2_XXS',
  20: 'IQ2_XS',
  21: 'Q2_K_S',
  22: 'IQ3_XS',
  23: 'IQ3_XXS',
  24: 'IQ1_S',
  25: 'IQ4_NL',
  26: 'IQ3_S',
  27: 'IQ3_M',
  28: 'IQ2_S',
  29: 'IQ2_M',
  30: 'IQ4_XS',
  31: 'IQ1_M',
  32: 'BF16',
  36: 'TQ1_0',
  37: 'TQ2_0',
  38: 'MXFP4_MOE',
};

/** The llama.cpp name of a general.file_type value, or null when unknown. */
export function fileTypeName(fileType: number): string | null {
  return LLAMA_FILE_TYPES[fileType] ?? null;
}

// ---------------------------------------------------------------------------------------------------
// Types

/** A large array, walked but not kept. */
export interface GgufArraySummary {
  kind: 'array';
  elementType: number;
  length: number;
}

/** A metadata value: 64-bit integers are bigint; arrays up to `keepArrayElements` long are kept. */
export type GgufValue = number | bigint | boolean | string | GgufValue[] | GgufArraySummary;

export interface GgufTensorInfo {
  name: string;
  /** ggml order: dims[0] is the row length. */
  dims: number[];
  type: number;
  /** Offset from the start of the data section. */
  offset: number;
  nElements: number;
  nBytes: number;
}

export interface GgufHeader {
  path: string;
  version: number;
  fileBytes: number;
  metadata: Map<string, GgufValue>;
  /** The value type of each key; for arrays also the element type. */
  types: Map<string, { type: number; elementType?: number }>;
  tensors: GgufTensorInfo[];
  alignment: number;
  /** Where the tensor data starts (the header's length plus padding). */
  dataOffset: number;
}

export interface HeaderLimits {
  /** Largest header (metadata + tensor table) read; default 64 MiB (real headers, vocabulary included, are under 16 MiB). */
  maxHeaderBytes?: number;
  /** Longest single string; default 16 MiB. */
  maxStringBytes?: number;
  /** Arrays up to this many elements are kept as values, longer ones as a summary; default 1024. */
  keepArrayElements?: number;
  /** Bytes read per chunk at first (chunks grow when a single item needs more); default 256 KiB. */
  chunkBytes?: number;
}

const DEFAULT_LIMITS: Required<HeaderLimits> = {
  maxHeaderBytes: 64 * 1024 * 1024,
  maxStringBytes: 16 * 1024 * 1024,
  keepArrayElements: 1024,
  chunkBytes: 256 * 1024,
};

const MAX_NESTED_ARRAYS = 8;
const MAX_DIMS = 4;

function fail(code: string, message: string): never {
  throw new ApiError(code, message);
}

/** At most 80 printable characters of a string from the file, for messages. */
function printable(s: string): string {
  const cut = s.length > 80 ? s.slice(0, 80) + '...' : s;
  return cut.replace(/[^\x20-\x7e]/g, '?');
}

// ---------------------------------------------------------------------------------------------------
// Chunked reader: holds a window of the file; `need(n)` makes n bytes at `pos` available.

/** Where header bytes come from: a file, or bytes already in memory (e.g. the start of a download). */
interface ByteSource {
  read(into: Buffer, offset: number, length: number, position: number): Promise<number>;
}

class ChunkReader {
  private buf = Buffer.alloc(0);
  private bufStart = 0; // file offset of buf[0]
  pos = 0;

  constructor(
    private readonly source: ByteSource,
    readonly path: string,
    readonly fileBytes: number,
    private readonly limits: Required<HeaderLimits>,
  ) {}

  get remaining(): number {
    return this.fileBytes - this.pos;
  }

  /** True when n bytes at pos are already in the window (so the caller can skip an await). */
  has(n: number): boolean {
    return this.pos >= this.bufStart && this.pos + n <= this.bufStart + this.buf.length;
  }

  async need(n: number, what: string): Promise<void> {
    if (this.has(n)) return;
    if (n > this.remaining) {
      fail(
        'GGUF_TRUNCATED',
        `${this.path}: file is truncated: reading ${what} needs ${n} bytes at offset ${this.pos}, ` +
          `but the file has only ${this.fileBytes} bytes`,
      );
    }
    if (this.pos + n > this.limits.maxHeaderBytes) {
      fail(
        'GGUF_TOO_LARGE',
        `${this.path}: the GGUF header runs past ${this.limits.maxHeaderBytes} bytes ` +
          `(reading ${what} at offset ${this.pos}); a real model's header is far smaller`,
      );
    }
    // keep what is left of the window from pos on, then read a chunk after it
    const end = this.bufStart + this.buf.length;
    const keepFrom = Math.max(this.pos, this.bufStart);
    const kept = this.pos < end ? this.buf.subarray(keepFrom - this.bufStart) : Buffer.alloc(0);
    const want = Math.min(Math.max(n, this.limits.chunkBytes), this.fileBytes - this.pos);
    const next = Buffer.allocUnsafe(want);
    kept.copy(next, 0);
    let filled = kept.length;
    while (filled < want) {
      const bytesRead = await this.source.read(next, filled, want - filled, this.pos + filled);
      if (bytesRead === 0) break; // the file shrank while we read it
      filled += bytesRead;
    }
    this.buf = next.subarray(0, filled);
    this.bufStart = this.pos;
    if (filled < n) {
      fail('GGUF_TRUNCATED', `${this.path}: file is truncated: reading ${what} needs ${n} bytes at offset ${this.pos}`);
    }
  }

  /** Moves past n bytes without reading them (they must exist in the file). */
  skip(n: number, what: () => string): void {
    if (n > this.remaining) {
      fail(
        'GGUF_TRUNCATED',
        `${this.path}: file is truncated: ${what()} needs ${n} bytes at offset ${this.pos}, ` +
          `but the file has only ${this.fileBytes} bytes`,
      );
    }
    this.pos += n;
  }

  /** True when n bytes at pos are in the window; a GGUF_TRUNCATED error when the window was filled
   *  to the end of the file and still lacks them. */
  checked(n: number, what: () => string): true {
    if (!this.has(n)) {
      fail(
        'GGUF_TRUNCATED',
        `${this.path}: file is truncated: reading ${what()} needs ${n} bytes at offset ${this.pos}, ` +
          `but the file has only ${this.fileBytes} bytes`,
      );
    }
    return true;
  }

  // The getters below assume need() was called for their bytes.
  private at(n: number): number {
    const o = this.pos - this.bufStart;
    this.pos += n;
    return o;
  }
  u8(): number {
    return this.buf.readUInt8(this.at(1));
  }
  i8(): number {
    return this.buf.readInt8(this.at(1));
  }
  u16(): number {
    return this.buf.readUInt16LE(this.at(2));
  }
  i16(): number {
    return this.buf.readInt16LE(this.at(2));
  }
  u32(): number {
    return this.buf.readUInt32LE(this.at(4));
  }
  i32(): number {
    return this.buf.readInt32LE(this.at(4));
  }
  f32(): number {
    return this.buf.readFloatLE(this.at(4));
  }
  f64(): number {
    return this.buf.readDoubleLE(this.at(8));
  }
  u64(): bigint {
    return this.buf.readBigUInt64LE(this.at(8));
  }
  i64(): bigint {
    return this.buf.readBigInt64LE(this.at(8));
  }
  text(n: number): string {
    const o = this.at(n);
    return this.buf.toString('utf8', o, o + n);
  }
}

// ---------------------------------------------------------------------------------------------------
// Parsing
//
// The loops over array elements and tensors stay synchronous while the bytes they need are in the
// window (`if (!r.has(n)) await r.need(n, ...)`): an await per element costs far more than the
// element, and a vocabulary has 150,000 of them. Messages are built only when something is wrong.

/** A u64 count or length as a JS number; anything above the file's size is rejected by the callers. */
function toSafe(v: bigint): number {
  return v > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(v);
}

type What = () => string;

/** Reads a u64 length (its 8 bytes must be in the window) and checks it against the file and `max`. */
function lengthAt(r: ChunkReader, what: What, max: number): number {
  const raw = r.u64();
  const n = toSafe(raw);
  if (n > r.remaining) {
    fail(
      'GGUF_BAD_LENGTH',
      `${r.path}: ${what()} claims a length of ${raw} bytes at offset ${r.pos}, ` +
        `but only ${r.remaining} bytes remain in the file`,
    );
  }
  if (n > max) fail('GGUF_BAD_LENGTH', `${r.path}: ${what()} is ${n} bytes long, more than the ${max} allowed`);
  return n;
}

async function readU32(r: ChunkReader, what: string): Promise<number> {
  if (!r.has(4)) await r.need(4, what);
  return r.u32();
}

async function readU64(r: ChunkReader, what: string): Promise<bigint> {
  if (!r.has(8)) await r.need(8, what);
  return r.u64();
}

async function readString(r: ChunkReader, what: What, max: number): Promise<string> {
  if (!r.has(8)) await r.need(8, `the length of ${what()}`);
  const n = lengthAt(r, what, max);
  if (!r.has(n)) await r.need(n, what());
  return r.text(n);
}

function checkValueType(r: ChunkReader, t: number, what: string): void {
  if (!(t in VALUE_SIZE) && t !== 8 && t !== 9) {
    fail('GGUF_BAD_VALUE_TYPE', `${r.path}: ${what} has unknown value type ${t}`);
  }
}

/** A scalar whose bytes are in the window. */
function scalar(r: ChunkReader, type: number, what: What): number | bigint | boolean {
  switch (type) {
    case 0:
      return r.u8();
    case 1:
      return r.i8();
    case 2:
      return r.u16();
    case 3:
      return r.i16();
    case 4:
      return r.u32();
    case 5:
      return r.i32();
    case 6:
      return r.f32();
    case 7: {
      const b = r.u8();
      if (b > 1) fail('GGUF_BAD_VALUE', `${r.path}: ${what()} is a bool with value ${b}`);
      return b === 1;
    }
    case 10:
      return r.u64();
    case 11:
      return r.i64();
    case 12:
      return r.f64();
    default:
      return fail('GGUF_BAD_VALUE_TYPE', `${r.path}: ${what()} has unknown value type ${type}`);
  }
}

async function readValue(r: ChunkReader, type: number, what: string, lim: Required<HeaderLimits>): Promise<GgufValue> {
  if (type === 8) return readString(r, () => what, lim.maxStringBytes);
  if (type !== 9) {
    const size = VALUE_SIZE[type];
    if (!r.has(size)) await r.need(size, what);
    return scalar(r, type, () => what);
  }
  return readArray(r, what, 0, lim, true);
}

async function readArray(
  r: ChunkReader,
  what: string,
  depth: number,
  lim: Required<HeaderLimits>,
  keep: boolean,
): Promise<GgufValue> {
  if (depth >= MAX_NESTED_ARRAYS)
    fail('GGUF_BAD_VALUE', `${r.path}: ${what} nests arrays more than ${MAX_NESTED_ARRAYS} deep`);
  const elementType = await readU32(r, `the element type of ${what}`);
  checkValueType(r, elementType, `${what}'s element`);
  const rawCount = await readU64(r, `the element count of ${what}`);
  const count = toSafe(rawCount);
  const minSize = minEncodedSize(elementType);
  if (count > Math.floor(r.remaining / minSize)) {
    fail(
      'GGUF_BAD_COUNT',
      `${r.path}: ${what} claims ${rawCount} elements of type ${elementType}, ` +
        `more than the ${r.remaining} bytes left in the file can hold`,
    );
  }
  const kept = keep && count <= lim.keepArrayElements;
  const out: GgufValue[] = [];
  let i = 0;
  const element: What = () => `${what} element ${i}`;
  if (elementType === 8) {
    for (; i < count; i++) {
      if (!r.has(8)) await r.need(8, `the length of ${element()}`);
      const n = lengthAt(r, element, lim.maxStringBytes);
      if (kept) {
        if (!r.has(n)) await r.need(n, element());
        out.push(r.text(n));
      } else {
        r.skip(n, element);
      }
    }
  } else if (elementType === 9) {
    for (; i < count; i++) {
      const v = await readArray(r, element(), depth + 1, lim, kept);
      if (kept) out.push(v);
    }
  } else if (kept || elementType === 7) {
    // kept scalars are decoded; bools are always checked, as the engine checks them
    for (; i < count; i++) {
      if (!r.has(minSize)) await r.need(Math.min(minSize * (count - i), Math.max(minSize, lim.chunkBytes)), element());
      const v = scalar(r, elementType, element);
      if (kept) out.push(v);
    }
  } else {
    r.skip(count * minSize, () => `the elements of ${what}`);
  }
  return kept ? out : { kind: 'array', elementType, length: count };
}

/**
 * Reads a GGUF file's header: the metadata and the tensor table, checked as the engine checks them,
 * without reading tensor data. Throws ApiError with a GGUF_* code (or FILE_NOT_FOUND, FILE_UNREADABLE)
 * naming the problem.
 */
export async function readGgufHeader(path: string, limits: HeaderLimits = {}): Promise<GgufHeader> {
  const lim = { ...DEFAULT_LIMITS, ...limits };
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (e) {
    throw fileError(path, e);
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) fail('FILE_UNREADABLE', `${path} is not a regular file`);
    const source: ByteSource = { read: async (b, o, n, p) => (await fh.read(b, o, n, p)).bytesRead };
    return await parse(new ChunkReader(source, path, st.size, lim), lim);
  } catch (e) {
    if (e instanceof ApiError) throw e;
    throw fileError(path, e);
  } finally {
    await fh.close();
  }
}

/**
 * Parses a GGUF header from bytes in memory (`fileBytes` is the whole file's size when `bytes` is only
 * its beginning, so tensor offsets are checked against the real file). Same checks and errors as
 * readGgufHeader; `name` stands for the path in messages.
 */
export async function parseGgufHeader(
  bytes: Uint8Array,
  name = 'the GGUF data',
  limits: HeaderLimits = {},
  fileBytes = bytes.length,
): Promise<GgufHeader> {
  const lim = { ...DEFAULT_LIMITS, ...limits };
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const source: ByteSource = {
    read: async (into, offset, length, position) =>
      position >= buf.length ? 0 : buf.copy(into, offset, position, Math.min(buf.length, position + length)),
  };
  return parse(new ChunkReader(source, name, fileBytes, lim), lim);
}

function fileError(path: string, e: unknown): ApiError {
  const err = e as NodeJS.ErrnoException;
  const why =
    err.code === 'ENOENT'
      ? 'it does not exist'
      : err.code === 'EACCES' || err.code === 'EPERM'
        ? 'permission denied'
        : err.code === 'EISDIR'
          ? 'it is a folder'
          : err.message;
  return new ApiError(err.code === 'ENOENT' ? 'FILE_NOT_FOUND' : 'FILE_UNREADABLE', `cannot read ${path}: ${why}`);
}

async function parse(r: ChunkReader, lim: Required<HeaderLimits>): Promise<GgufHeader> {
  const path = r.path;
  if (r.fileBytes < 4) fail('GGUF_BAD_MAGIC', `${path} is not a GGUF file: it has only ${r.fileBytes} bytes`);
  await r.need(Math.min(24, r.fileBytes), 'the file header');
  const magic = r.text(4);
  if (magic !== 'GGUF') {
    fail(
      'GGUF_BAD_MAGIC',
      `${path} is not a GGUF file: it should start with 'GGUF' but starts with '${printable(magic)}'`,
    );
  }
  const version = await readU32(r, 'the version');
  if (version === 1)
    fail('GGUF_VERSION', `${path}: GGUF version 1 is obsolete and not supported (versions 2 and 3 are)`);
  if (version !== 2 && version !== 3) {
    if ((version & 0xffff) === 0 && version >>> 24 <= 3)
      fail('GGUF_VERSION', `${path}: big-endian GGUF files are not supported`);
    fail('GGUF_VERSION', `${path}: unsupported GGUF version ${version} (versions 2 and 3 are supported)`);
  }
  const rawTensors = await readU64(r, 'the tensor count');
  const rawKv = await readU64(r, 'the metadata count');
  const nTensors = toSafe(rawTensors);
  const nKv = toSafe(rawKv);
  // a key-value pair takes at least 8 (key length) + 4 (type) + 1 (value) bytes; a tensor entry at
  // least 8 (name length) + 4 (dims) + 8 (one dim) + 4 (type) + 8 (offset)
  if (nKv > Math.floor(r.remaining / 13)) {
    fail(
      'GGUF_BAD_COUNT',
      `${path}: the header claims ${rawKv} metadata entries, more than the file's ${r.fileBytes} bytes can hold`,
    );
  }
  if (nTensors > Math.floor(r.remaining / 24)) {
    fail(
      'GGUF_BAD_COUNT',
      `${path}: the header claims ${rawTensors} tensors, more than the file's ${r.fileBytes} bytes can hold`,
    );
  }

  const metadata = new Map<string, GgufValue>();
  const types = new Map<string, { type: number; elementType?: number }>();
  for (let k = 0; k < nKv; k++) {
    const key = await readString(r, () => `the key of metadata entry ${k}`, 65535);
    const type = await readU32(r, `the value type of '${printable(key)}'`);
    checkValueType(r, type, `metadata key '${printable(key)}'`);
    let elementType: number | undefined;
    if (type === 9) {
      if (!r.has(4)) await r.need(4, `the element type of '${printable(key)}'`);
      elementType = r.u32();
      r.pos -= 4; // readArray reads it again
    }
    const value = await readValue(r, type, `metadata value '${printable(key)}'`, lim);
    if (metadata.has(key)) fail('GGUF_DUPLICATE', `${path}: duplicate metadata key '${printable(key)}'`);
    metadata.set(key, value);
    types.set(key, elementType === undefined ? { type } : { type, elementType });
  }

  let alignment = 32;
  const a = metadata.get('general.alignment');
  if (a !== undefined) {
    if (types.get('general.alignment')?.type !== GGUF_VALUE_TYPE.UINT32) {
      fail('GGUF_ALIGNMENT', `${path}: general.alignment must be a uint32`);
    }
    const n = a as number;
    if (n === 0 || (n & (n - 1)) !== 0) fail('GGUF_ALIGNMENT', `${path}: general.alignment ${n} is not a power of two`);
    alignment = n;
  }

  const tensors: GgufTensorInfo[] = [];
  const names = new Set<string>();
  for (let k = 0; k < nTensors; k++) {
    const name = await readString(r, () => `the name of tensor ${k}`, 65535);
    const what = () => `tensor '${printable(name)}'`;
    // the rest of the entry is at most 4 + 4 × 8 + 4 + 8 bytes: fetch it once, then read it in place
    const rest = Math.min(48, r.remaining);
    if (!r.has(rest)) await r.need(rest, `the description of ${what()}`);
    const nDims = r.checked(4, () => `the dimension count of ${what()}`) && r.u32();
    if (nDims === 0 || nDims > MAX_DIMS)
      fail('GGUF_BAD_TENSOR', `${path}: ${what()} has ${nDims} dimensions (1 to ${MAX_DIMS} allowed)`);
    const dims: number[] = [];
    let nElements = 1;
    for (let d = 0; d < nDims; d++) {
      const raw = r.checked(8, () => `dimension ${d} of ${what()}`) && r.u64();
      if (raw > BigInt(Number.MAX_SAFE_INTEGER))
        fail('GGUF_BAD_TENSOR', `${path}: dimension ${d} of ${what()} is ${raw}, too large`);
      const ne = Number(raw);
      dims.push(ne);
      nElements *= ne;
      if (nElements > Number.MAX_SAFE_INTEGER)
        fail('GGUF_BAD_TENSOR', `${path}: the element count of ${what()} overflows`);
    }
    const type = r.checked(4, () => `the type of ${what()}`) && r.u32();
    const info = GGML_TYPES[type];
    if (!info) fail('GGUF_BAD_TENSOR_TYPE', `${path}: ${what()} has unknown tensor type ${type}`);
    const rawOffset = r.checked(8, () => `the data offset of ${what()}`) && r.u64();
    if (dims[0] % info.blockSize !== 0) {
      fail(
        'GGUF_BAD_TENSOR',
        `${path}: ${what()} has rows of ${dims[0]} elements, not a multiple of the ${info.name} block size ${info.blockSize}`,
      );
    }
    const nBytes = (nElements / info.blockSize) * info.typeSize;
    if (!Number.isSafeInteger(nBytes)) fail('GGUF_BAD_TENSOR', `${path}: the byte size of ${what()} overflows`);
    if (rawOffset % BigInt(alignment) !== 0n) {
      fail(
        'GGUF_ALIGNMENT',
        `${path}: ${what()} has data offset ${rawOffset}, not a multiple of the alignment ${alignment}`,
      );
    }
    if (names.has(name)) fail('GGUF_DUPLICATE', `${path}: duplicate tensor name '${printable(name)}'`);
    names.add(name);
    tensors.push({ name, dims, type, offset: toSafe(rawOffset), nElements, nBytes });
  }

  const dataOffset = Math.ceil(r.pos / alignment) * alignment;
  if (nTensors > 0 && dataOffset > r.fileBytes) {
    fail(
      'GGUF_TRUNCATED',
      `${path}: file is truncated: the tensor data should start at offset ${dataOffset}, ` +
        `past the end of the file (${r.fileBytes} bytes)`,
    );
  }
  const avail = r.fileBytes - dataOffset;
  for (const t of tensors) {
    if (t.offset > avail || t.nBytes > avail - t.offset) {
      fail(
        'GGUF_TENSOR_OUT_OF_FILE',
        `${path}: the data of tensor '${printable(t.name)}' (${t.nBytes} bytes at offset ` +
          `${t.offset}) lies outside the file: the data section has ${avail} bytes (an unfinished download?)`,
      );
    }
  }
  return { path, version, fileBytes: r.fileBytes, metadata, types, tensors, alignment, dataOffset };
}

// ---------------------------------------------------------------------------------------------------
// Summary

/** What the model list shows about a GGUF file, all from its header. */
export interface GgufSummary {
  name: string | null;
  architecture: string | null;
  fileBytes: number;
  /** llama.cpp's name for general.file_type (e.g. Q4_K_M), else the dominant tensor type (e.g. Q8_0). */
  quantization: string | null;
  /** general.file_type as stored, or null. */
  fileType: number | null;
  contextLength: number | null;
  /** Whether the file carries a chat template (tokenizer.chat_template): a base model does not. */
  chatTemplate: boolean;
  /** Sum of the tensors' element counts (this file's tensors only, for a split file's first part). */
  parameters: number;
  layers: number | null;
  heads: number | null;
  kvHeads: number | null;
  embeddingLength: number | null;
  feedForwardLength: number | null;
  /** Key head size ({arch}.attention.key_length, else embedding_length / head_count). */
  headSize: number | null;
  /** Value head size ({arch}.attention.value_length, else the key head size). */
  valueHeadSize: number | null;
  vocabSize: number | null;
  /** Bytes of tensor data (what the engine maps). */
  tensorBytes: number;
  /** Bytes per ggml type name, largest first. */
  tensorTypes: { type: string; bytes: number; count: number }[];
  /** split.count of a split file (the -00001-of-0000N naming), else 1. */
  splitCount: number;
  supported: boolean;
  /** Why the engine cannot run the file, when supported is false. */
  unsupportedReason: string | null;
  /** Layers whose attention slides (model/hparams.h, layer_window: gemma3's five of six, every phi3 layer)
   * and their window (0: none). */
  slidingLayers: number;
  slidingWindow: number;
}

/** A metadata value as a number (integer and float types; the largest element of a numeric array). */
export function metaNumber(h: GgufHeader, key: string): number | null {
  const v = h.metadata.get(key);
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) {
    const nums = v.filter((x): x is number | bigint => typeof x === 'number' || typeof x === 'bigint').map(Number);
    return nums.length ? Math.max(...nums) : null;
  }
  return null;
}

export function metaString(h: GgufHeader, key: string): string | null {
  const v = h.metadata.get(key);
  return typeof v === 'string' ? v : null;
}

/** The sliding-window layers as the engine reads them (model/hparams.h, layer_window): gemma3 slides in five
 * of every six layers, phi3 in every one (a Phi-3-mini/medium-4k file without the key: 2047). */
function slidingLayout(
  arch: string | null,
  layers: number | null,
  window: number | null,
  trained: number | null,
): { slidingLayers: number; slidingWindow: number } {
  const w = window ?? (arch === 'phi3' && (layers === 32 || layers === 40) && trained === 4096 ? 2047 : 0);
  if (!layers || !(w > 0)) return { slidingLayers: 0, slidingWindow: 0 };
  if (arch === 'gemma3') return { slidingLayers: layers - Math.floor(layers / 6), slidingWindow: w };
  if (arch === 'phi3') return { slidingLayers: layers, slidingWindow: w };
  return { slidingLayers: 0, slidingWindow: 0 };
}

/** Length of an array value (kept or summarised), or null. */
function metaArrayLength(h: GgufHeader, key: string): number | null {
  const v = h.metadata.get(key);
  if (Array.isArray(v)) return v.length;
  if (v && typeof v === 'object' && 'kind' in v) return v.length;
  return null;
}

export function summarizeGguf(h: GgufHeader): GgufSummary {
  const arch = metaString(h, 'general.architecture');
  const p = arch ? `${arch}.` : '\u0000'; // no key matches when the architecture is missing
  const heads = metaNumber(h, `${p}attention.head_count`);
  const embeddingLength = metaNumber(h, `${p}embedding_length`);
  const kvHeads = metaNumber(h, `${p}attention.head_count_kv`) ?? heads;
  const headSize =
    metaNumber(h, `${p}attention.key_length`) ?? (heads && embeddingLength ? embeddingLength / heads : null);
  const valueHeadSize = metaNumber(h, `${p}attention.value_length`) ?? headSize;
  const tokenEmbd = h.tensors.find((t) => t.name === 'token_embd.weight');
  const vocabSize =
    metaNumber(h, `${p}vocab_size`) ??
    metaArrayLength(h, 'tokenizer.ggml.tokens') ??
    (tokenEmbd && tokenEmbd.dims.length >= 2 ? tokenEmbd.dims[1] : null);

  const byType = new Map<number, { bytes: number; count: number }>();
  let parameters = 0;
  let tensorBytes = 0;
  for (const t of h.tensors) {
    parameters += t.nElements;
    tensorBytes += t.nBytes;
    const e = byType.get(t.type) ?? { bytes: 0, count: 0 };
    e.bytes += t.nBytes;
    e.count++;
    byType.set(t.type, e);
  }
  const tensorTypes = [...byType.entries()]
    .map(([type, e]) => ({ type: GGML_TYPES[type].name, bytes: e.bytes, count: e.count }))
    .sort((x, y) => y.bytes - x.bytes);

  const fileType = metaNumber(h, 'general.file_type');
  const quantization = (fileType !== null ? fileTypeName(fileType) : null) ?? dominantType(h);
  const splitCount = metaNumber(h, 'split.count') ?? 1;

  // The engine refuses a file whose keys have the wrong type or a value out of range (gguf-metadata-rules.ts):
  // say so, and which key.
  const metadataError = checkMetadata(h);
  let unsupportedReason: string | null = null;
  if (metadataError)
    unsupportedReason = `the file is broken: ${metadataError.message} (get the file again, or convert the model again)`;
  else if (!arch) unsupportedReason = 'the file names no architecture (general.architecture)';
  else if (!SUPPORTED_ARCHITECTURES.includes(arch)) {
    unsupportedReason = `Folio's engine does not run the '${arch}' architecture (it runs ${SUPPORTED_ARCHITECTURES.join(', ')})`;
  } else if (splitCount > 1) {
    unsupportedReason = `the model is split into ${splitCount} files, and Folio's engine cannot load split files yet`;
  } else if (h.tensors.length === 0) {
    unsupportedReason = 'the file holds no tensors (a vocabulary-only file?)';
  } else {
    const unread = tensorTypes.filter((t) => !SUPPORTED_TENSOR_TYPES.includes(t.type));
    if (unread.length) {
      const what = unread.map((t) => `${t.type} (${t.count} tensor${t.count === 1 ? '' : 's'})`).join(', ');
      unsupportedReason =
        `the file's weights use ${unread.length === 1 ? 'a tensor type' : 'tensor types'} Folio's engine cannot ` +
        `read yet: ${what}. It reads ${SUPPORTED_TENSOR_TYPES.join(', ')}: get the model in another ` +
        'quantization (Q4_K_M and Q8_0 files are common)';
    }
  }

  return {
    name: metaString(h, 'general.name'),
    architecture: arch,
    fileBytes: h.fileBytes,
    quantization,
    fileType,
    contextLength: metaNumber(h, `${p}context_length`), // the engine's limit, sliding-window models too
    chatTemplate: (metaString(h, 'tokenizer.chat_template') ?? '').trim() !== '',
    parameters,
    layers: metaNumber(h, `${p}block_count`),
    heads,
    kvHeads,
    embeddingLength,
    feedForwardLength: metaNumber(h, `${p}feed_forward_length`),
    headSize,
    valueHeadSize,
    vocabSize,
    tensorBytes,
    tensorTypes,
    splitCount,
    supported: unsupportedReason === null,
    unsupportedReason,
    ...slidingLayout(
      arch,
      metaNumber(h, `${p}block_count`),
      metaNumber(h, `${p}attention.sliding_window`),
      metaNumber(h, `${p}context_length`),
    ),
  };
}

/**
 * The type of most weight matrices (tensors with 2+ dims), else of most tensors; ties go to the type
 * with more bytes. This is llama.cpp's guess when general.file_type is absent (src/llama-model-loader.cpp
 * counts tensors per type and takes the most common), except that the F32 norm vectors are not counted.
 */
function dominantType(h: GgufHeader): string | null {
  const pick = (ts: GgufTensorInfo[]) => {
    const stats = new Map<number, { count: number; bytes: number }>();
    for (const t of ts) {
      const e = stats.get(t.type) ?? { count: 0, bytes: 0 };
      e.count++;
      e.bytes += t.nBytes;
      stats.set(t.type, e);
    }
    let best: [number, { count: number; bytes: number }] | null = null;
    for (const entry of stats) {
      if (
        !best ||
        entry[1].count > best[1].count ||
        (entry[1].count === best[1].count && entry[1].bytes > best[1].bytes)
      )
        best = entry;
    }
    return best ? GGML_TYPES[best[0]].name : null;
  };
  return pick(h.tensors.filter((t) => t.dims.filter((d) => d > 1).length >= 2)) ?? pick(h.tensors);
}

/** Reads the header and sums it up. */
export async function inspectGguf(path: string, limits?: HeaderLimits): Promise<GgufSummary> {
  return summarizeGguf(await readGgufHeader(path, limits));
}
