// Reads the kept positions of one (layer, KV head) out of a saved session file (native/src/session/
// session-file.cc), without the engine: the file's header, then each head's length, skipping the keys and
// values of the heads before it. Only the few bytes it needs are read, so a cache of hundreds of MiB costs a
// few thousand small reads. Every count is checked against the file, so a damaged file is refused with what
// is wrong rather than read as garbage (the engine's checksum is not recomputed here: the engine checks it
// when it loads the file).
import { open, type FileHandle } from 'node:fs/promises';

import { KV_TYPE_ID, KV_TYPES, type KvFormat, type KvType, kvEntryBytes } from '../shared/kv/precision.ts';

/** The layout's constants, as session-file.cc writes them. */
const MAGIC = 'FOLIOKV\0';
/** 2 added the read's kept scores after the entries; 3 the keys' and values' types apart, and the rotation. */
const VERSION = 3;
const OLDEST_VERSION = 1;
const TYPE_OF_ID = new Map<number, KvType>(KV_TYPES.map((t) => [KV_TYPE_ID[t], t]));
const CHECKSUM_BYTES = 8;

export interface SessionFileHeader {
  /** The file's format (1: before the kept scores; before 3 keys and values of one type, unrotated). */
  version: number;
  kv: KvFormat;
  layers: number;
  kvHeads: number;
  headDim: number;
  headDimV: number;
  nPast: number;
  /** Tokens the session holds (more than nPast after a re-based read). */
  tokens: number;
  meta: string;
}

/** A file that is not a session file or is damaged (the engine's code for it: the dispatcher carries it). */
export class SessionFileError extends Error {
  readonly code = 'SESSION_FILE_CORRUPT';
  constructor(message: string) {
    super(message);
    this.name = 'SessionFileError';
  }
}

/** A cursor over a file handle that refuses to read past the end of the data (the checksum excluded). */
class Cursor {
  pos = 0;
  constructor(
    private readonly fh: FileHandle,
    private readonly end: number,
    private readonly path: string,
  ) {}
  async take(n: number, what: string): Promise<Buffer> {
    if (n < 0 || n > this.end - this.pos) throw new SessionFileError(`${this.path} is damaged: it ends inside ${what}`);
    const buf = Buffer.alloc(n);
    let done = 0;
    while (done < n) {
      const { bytesRead } = await this.fh.read(buf, done, n - done, this.pos + done);
      if (bytesRead === 0) throw new SessionFileError(`${this.path} is damaged: it ends inside ${what}`);
      done += bytesRead;
    }
    this.pos += n;
    return buf;
  }
  skip(n: number, what: string): void {
    if (n < 0 || n > this.end - this.pos) throw new SessionFileError(`${this.path} is damaged: it ends inside ${what}`);
    this.pos += n;
  }
  async u32(what: string): Promise<number> {
    return (await this.take(4, what)).readUInt32LE(0);
  }
  async i32(what: string): Promise<number> {
    return (await this.take(4, what)).readInt32LE(0);
  }
  get left(): number {
    return this.end - this.pos;
  }
}

async function readHeader(c: Cursor, path: string): Promise<SessionFileHeader> {
  const magic = (await c.take(8, 'the magic')).toString('latin1');
  if (magic !== MAGIC) throw new SessionFileError(`${path} is not a Folio session file`);
  const version = await c.u32('the version');
  if (version < OLDEST_VERSION || version > VERSION)
    throw new SessionFileError(
      `${path} was written by another version of Folio (format ${version}, this one reads ${OLDEST_VERSION} to ${VERSION})`,
    );
  c.skip(16, 'the model fingerprint'); // fingerprint and model size: the engine checks them when it loads the file
  const type = async (what: string) => {
    const id = await c.u32(what);
    const t = TYPE_OF_ID.get(id);
    if (!t) throw new SessionFileError(`${path} is damaged: unknown cache type ${id}`);
    return t;
  };
  const k = await type('the cache type');
  const v = version >= 3 ? await type('the values’ type') : k;
  const rotation = version >= 3 ? await c.u32('the rotation') : 0;
  if (rotation > 3) throw new SessionFileError(`${path} is damaged: unknown rotation ${rotation}`);
  const layers = await c.u32('the layer count');
  const kvHeads = await c.u32('the head count');
  const headDim = await c.u32('the head size');
  const headDimV = await c.u32('the value head size');
  const nPast = await c.i32('the position');
  const tokens = await c.u32('the token count');
  if (tokens * 4 > c.left) throw new SessionFileError(`${path} is damaged: the token count is larger than the file`);
  c.skip(tokens * 4, 'the tokens');
  const logits = await c.u32('the logit count');
  if (logits * 4 > c.left) throw new SessionFileError(`${path} is damaged: the logit count is larger than the file`);
  c.skip(logits * 4, 'the logits');
  const metaLen = await c.u32('the meta length');
  const meta = (await c.take(metaLen, 'the meta')).toString('utf8');
  const kv = { k, v, rotate: rotation !== 0 };
  return { version, kv, layers, kvHeads, headDim, headDimV, nPast, tokens, meta };
}

/**
 * The positions one KV head of one layer kept, in the order the cache holds them, and the file's header.
 * Throws SessionFileError for a file that is not a session file, is damaged, or has no such head.
 */
export async function readKeptPositions(
  path: string,
  layer: number,
  head: number,
): Promise<{ header: SessionFileHeader; positions: Int32Array }> {
  const fh = await open(path, 'r');
  try {
    const size = (await fh.stat()).size;
    if (size < 8 + 4 + CHECKSUM_BYTES) throw new SessionFileError(`${path} is damaged: it is truncated`);
    const c = new Cursor(fh, size - CHECKSUM_BYTES, path);
    const header = await readHeader(c, path);
    if (layer < 0 || layer >= header.layers || head < 0 || head >= header.kvHeads)
      throw new SessionFileError(
        `the cache has ${header.layers} layers of ${header.kvHeads} KV heads: there is no layer ${layer}, head ${head}`,
      );
    const entryBytes = kvEntryBytes(header.kv.k, header.headDim) + kvEntryBytes(header.kv.v, header.headDimV);
    // Every head's length is read (the rest skipped), so that the file's layout is checked to its end.
    let positions: Int32Array | null = null;
    let entries = 0;
    for (let l = 0; l < header.layers; l++)
      for (let h = 0; h < header.kvHeads; h++) {
        const len = await c.i32('a head’s length');
        if (len < 0 || len * (4 + entryBytes) > c.left)
          throw new SessionFileError(`${path} is damaged: layer ${l}, head ${h} is larger than the file`);
        entries += len;
        if (l === layer && h === head) {
          const b = await c.take(len * 4, 'the positions');
          positions = new Int32Array(len);
          for (let i = 0; i < len; i++) positions[i] = b.readInt32LE(i * 4);
          c.skip(len * entryBytes, 'the cache entries');
        } else c.skip(len * (4 + entryBytes), 'the cache entries');
      }
    // Format 2: the kept scores, a float per entry, after a flag.
    if (header.version >= 2 && (await c.take(1, 'the scores’ flag'))[0] === 1) c.skip(entries * 4, 'the kept scores');
    if (c.left !== 0) throw new SessionFileError(`${path} is damaged: it has trailing bytes`);
    if (!positions) throw new SessionFileError(`${path} is damaged: it ends before layer ${layer}, head ${head}`);
    return { header, positions };
  } finally {
    await fh.close();
  }
}
