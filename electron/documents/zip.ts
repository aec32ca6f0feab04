// A small reader of ZIP central directories: enough to tell a DOCX from other ZIP-based formats and to read a
// part with a hard cap on the inflated size, counted while inflating. It never trusts sizes it has not
// checked against the buffer, so a hostile or truncated archive gives null or an error, never a crash.
import { inflateRawSync } from 'node:zlib';

export interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  uncompressedSize: number;
  localHeaderOffset: number;
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

function u16(b: Uint8Array, o: number): number {
  return b[o] | (b[o + 1] << 8);
}
function u32(b: Uint8Array, o: number): number {
  return (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16)) + b[o + 3] * 0x1000000;
}
function u64(b: Uint8Array, o: number): number {
  return u32(b, o) + u32(b, o + 4) * 0x100000000;
}

export function isZip(bytes: Uint8Array): boolean {
  return (
    bytes.length >= 4 &&
    bytes[0] === 0x50 &&
    bytes[1] === 0x4b &&
    (bytes[2] === 3 || bytes[2] === 5) &&
    (bytes[3] === 4 || bytes[3] === 6)
  );
}

/** The archive's entries from its central directory, or null when there is no readable directory. */
export function zipEntries(bytes: Uint8Array, maxEntries = 100_000): ZipEntry[] | null {
  const n = bytes.length;
  if (n < 22) return null;
  let eocd = -1;
  for (let i = n - 22; i >= Math.max(0, n - 22 - 0xffff); i--) {
    if (u32(bytes, i) === EOCD) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) return null;
  let count = u16(bytes, eocd + 10);
  let cdSize = u32(bytes, eocd + 12);
  let cdOffset = u32(bytes, eocd + 16);
  if ((count === 0xffff || cdOffset === 0xffffffff) && eocd >= 20 && u32(bytes, eocd - 20) === ZIP64_LOCATOR) {
    const rec = u64(bytes, eocd - 12);
    if (rec + 56 <= n && u32(bytes, rec) === ZIP64_EOCD) {
      count = u64(bytes, rec + 32);
      cdSize = u64(bytes, rec + 40);
      cdOffset = u64(bytes, rec + 48);
    }
  }
  if (cdOffset + cdSize > n || count > maxEntries) return null;
  const out: ZipEntry[] = [];
  const decoder = new TextDecoder('utf-8');
  let p = cdOffset;
  for (let i = 0; i < count; i++) {
    if (p + 46 > n || u32(bytes, p) !== CENTRAL) return out.length ? out : null;
    const nameLen = u16(bytes, p + 28);
    const extraLen = u16(bytes, p + 30);
    const commentLen = u16(bytes, p + 32);
    if (p + 46 + nameLen > n) break;
    let compressedSize = u32(bytes, p + 20);
    let uncompressedSize = u32(bytes, p + 24);
    let localHeaderOffset = u32(bytes, p + 42);
    // ZIP64 extra field (id 1): the 64-bit values, in order, of the fields that are saturated.
    let e = p + 46 + nameLen;
    const eEnd = Math.min(n, e + extraLen);
    while (e + 4 <= eEnd) {
      const id = u16(bytes, e);
      const len = u16(bytes, e + 2);
      if (id === 1) {
        let q = e + 4;
        if (uncompressedSize === 0xffffffff && q + 8 <= eEnd) {
          uncompressedSize = u64(bytes, q);
          q += 8;
        }
        if (compressedSize === 0xffffffff && q + 8 <= eEnd) {
          compressedSize = u64(bytes, q);
          q += 8;
        }
        if (localHeaderOffset === 0xffffffff && q + 8 <= eEnd) {
          localHeaderOffset = u64(bytes, q);
        }
      }
      e += 4 + len;
    }
    out.push({
      name: decoder.decode(bytes.subarray(p + 46, p + 46 + nameLen)),
      method: u16(bytes, p + 10),
      compressedSize,
      uncompressedSize,
      localHeaderOffset,
    });
    p += 46 + nameLen + extraLen + commentLen;
  }
  return out;
}

/** An entry's inflated size passed its limit (counted while inflating: the archive's stated sizes are not trusted). */
export class ZipLimitError extends Error {
  constructor(
    readonly entry: string,
    readonly limit: number,
    readonly whole: boolean,
  ) {
    super(`${entry}: more than ${limit} bytes once inflated`);
    this.name = 'ZipLimitError';
  }
}

/**
 * An entry's bytes, inflated; null when the entry is unreadable or uses another method than stored or deflate.
 * Throws ZipLimitError when it would exceed maxBytes: zlib stops at maxOutputLength, so a lying or hostile
 * entry costs at most maxBytes of memory and the time to inflate them.
 */
export function inflateZipEntry(bytes: Uint8Array, entry: ZipEntry, maxBytes: number): Uint8Array | null {
  const p = entry.localHeaderOffset;
  if (p + 30 > bytes.length || u32(bytes, p) !== LOCAL) return null;
  const start = p + 30 + u16(bytes, p + 26) + u16(bytes, p + 28);
  const end = start + entry.compressedSize;
  if (end > bytes.length) return null;
  if (entry.uncompressedSize > maxBytes) throw new ZipLimitError(entry.name, maxBytes, false);
  const data = bytes.subarray(start, end);
  if (entry.method === 0) {
    if (data.length > maxBytes) throw new ZipLimitError(entry.name, maxBytes, false);
    return data;
  }
  if (entry.method !== 8) return null;
  try {
    const out = inflateRawSync(data, { maxOutputLength: Math.max(1, maxBytes) });
    return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
  } catch (e) {
    if ((e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw new ZipLimitError(entry.name, maxBytes, false);
    return null;
  }
}

/** An entry's bytes, inflated; null when the entry is unreadable, uses another method, or exceeds maxBytes. */
export function readZipEntry(bytes: Uint8Array, entry: ZipEntry, maxBytes: number): Uint8Array | null {
  try {
    return inflateZipEntry(bytes, entry, maxBytes);
  } catch (e) {
    if (e instanceof ZipLimitError) return null;
    throw e;
  }
}

/**
 * Reads entries by name with a limit per entry and a running total over every entry read, so that a reader
 * driven by the archive's content (mammoth) can never make it inflate more than `total` bytes in all.
 */
export class BoundedZipReader {
  private readonly byName = new Map<string, ZipEntry>();
  private inflated = 0;

  constructor(
    private readonly bytes: Uint8Array,
    entries: readonly ZipEntry[],
    private readonly perEntry: number,
    private readonly total: number,
  ) {
    // The first of duplicate names wins, as in zipEntries' order (the central directory's).
    for (const e of entries) if (!this.byName.has(e.name)) this.byName.set(e.name, e);
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** The entry's bytes; throws ZipLimitError past a limit, and Error for a missing or unreadable entry. */
  read(name: string): Uint8Array {
    const entry = this.byName.get(name);
    if (!entry) throw new Error(`the archive has no ${name}`);
    const left = this.total - this.inflated;
    let data: Uint8Array | null;
    try {
      data = inflateZipEntry(this.bytes, entry, Math.min(this.perEntry, left));
    } catch (e) {
      if (e instanceof ZipLimitError && left < this.perEntry) throw new ZipLimitError(name, this.total, true);
      throw e;
    }
    if (!data) throw new Error(`${name} in the archive is damaged or compressed with an unsupported method`);
    this.inflated += data.length;
    return data;
  }

  /** Bytes inflated so far. */
  get inflatedBytes(): number {
    return this.inflated;
  }
}
