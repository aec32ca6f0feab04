// Big numeric arrays (token ids, per-token character maps, retention maps) are stored as BLOBs of
// little-endian 32-bit integers or 64-bit floats: 4 or 8 bytes a value instead of JSON text.
import { endianness } from 'node:os';

import { StorageError } from './errors.ts';

const littleEndian = endianness() === 'LE';

function checkInt32(values: ArrayLike<number>, what: string): void {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isInteger(v) || v < -0x8000_0000 || v > 0x7fff_ffff) {
      throw new StorageError('BAD_REQUEST', `${what}[${i}] = ${v} is not a 32-bit integer`);
    }
  }
}

/** True when every value is an integer that fits in 32 bits. */
export function allInt32(values: ArrayLike<number>): boolean {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isInteger(v) || v < -0x8000_0000 || v > 0x7fff_ffff) return false;
  }
  return true;
}

export function encodeInt32(values: Int32Array | readonly number[], what: string): Buffer {
  if (!(values instanceof Int32Array)) checkInt32(values, what);
  const n = values.length;
  if (littleEndian) {
    const a = values instanceof Int32Array ? values : Int32Array.from(values);
    return Buffer.from(a.buffer.slice(a.byteOffset, a.byteOffset + n * 4));
  }
  const out = Buffer.allocUnsafe(n * 4);
  for (let i = 0; i < n; i++) out.writeInt32LE(values[i], i * 4);
  return out;
}

export function decodeInt32(blob: Uint8Array, what: string): Int32Array {
  if (blob.byteLength % 4 !== 0) {
    throw new StorageError(
      'STORAGE_CORRUPT',
      `${what}: a BLOB of ${blob.byteLength} bytes is not a whole number of 32-bit values`,
    );
  }
  const n = blob.byteLength / 4;
  const out = new Int32Array(n);
  if (littleEndian) {
    // Copy: the BLOB's bytes may not be 4-aligned.
    new Uint8Array(out.buffer).set(blob);
  } else {
    const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
    for (let i = 0; i < n; i++) out[i] = view.getInt32(i * 4, true);
  }
  return out;
}

export function encodeFloat64(values: ArrayLike<number>): Buffer {
  const out = Buffer.allocUnsafe(values.length * 8);
  for (let i = 0; i < values.length; i++) out.writeDoubleLE(values[i], i * 8);
  return out;
}

export function decodeFloat64(blob: Uint8Array, what: string): Float64Array {
  if (blob.byteLength % 8 !== 0) {
    throw new StorageError(
      'STORAGE_CORRUPT',
      `${what}: a BLOB of ${blob.byteLength} bytes is not a whole number of 64-bit values`,
    );
  }
  const n = blob.byteLength / 8;
  const out = new Float64Array(n);
  const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
  for (let i = 0; i < n; i++) out[i] = view.getFloat64(i * 8, true);
  return out;
}
