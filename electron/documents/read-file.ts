// Reading a document file by path, safely: `stat` first, so that only regular files are opened (never a
// device such as /dev/zero, a FIFO that would block, a socket or a folder), then the size against the cap,
// then a read in chunks that counts bytes as they come, so a file that grows while it is read (or one whose
// size the system does not know, like /proc files) is refused at the cap rather than read without bound.
// Everything is asynchronous (libuv's threads do the reading): the event loop never waits on the disk.
import type { Hash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';

import { baseName } from './detect.ts';
import { ImportError, throwIfAborted } from './errors.ts';
import { MAX_DOCUMENT_BYTES, mib } from '../shared/limits.ts';

const CHUNK = 8 * 1024 * 1024;

/** What a path is when it is not a regular file, for the message. */
function notAFile(st: Stats): string | null {
  if (st.isFile()) return null;
  if (st.isDirectory()) return 'is a folder, not a document';
  if (st.isFIFO()) return 'is a named pipe (FIFO), not a document';
  if (st.isSocket()) return 'is a socket, not a document';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'is a device, not a document';
  return 'is not a regular file';
}

/**
 * A copy of `bytes` that owns its ArrayBuffer (one that can be transferred to a worker), made 16 MiB at a
 * time with the event loop let through between: a 200 MB file in one copy holds it for a tenth of a second.
 */
export async function copyOwned(bytes: Uint8Array): Promise<Uint8Array> {
  const out = new Uint8Array(Buffer.allocUnsafeSlow(bytes.length).buffer, 0, bytes.length);
  const SLICE = 16 * 1024 * 1024;
  for (let at = 0; at < bytes.length; at += SLICE) {
    out.set(bytes.subarray(at, at + SLICE), at);
    if (at + SLICE < bytes.length) await new Promise((ok) => setImmediate(ok));
  }
  return out;
}

export function tooLarge(fileName: string, size: number, max: number, growing = false): ImportError {
  return new ImportError(
    'TOO_LARGE',
    growing
      ? `${fileName} grew past ${mib(max)} while it was read; Folio imports files up to ${mib(max)}`
      : `${fileName} is ${mib(size)}; Folio imports files up to ${mib(max)}`,
    { details: { size, max } },
  );
}

function readError(path: string, e: unknown): ImportError {
  const err = e as NodeJS.ErrnoException;
  const why =
    err.code === 'ENOENT' || err.code === 'ENOTDIR'
      ? 'there is no such file'
      : err.code === 'EACCES' || err.code === 'EPERM'
        ? 'permission denied'
        : err.code === 'EISDIR'
          ? 'it is a folder, not a document'
          : err.message;
  return new ImportError('READ_FAILED', `cannot read ${path}: ${why}`, { cause: e });
}

/**
 * The bytes of the regular file at `path`, at most `maxBytes` of them. The result owns its ArrayBuffer (it may
 * be transferred to another thread). `hash` is fed every chunk as it is read, so a large file is hashed a
 * few milliseconds at a time between reads, never in one long stretch. Throws ImportError READ_FAILED
 * (missing, not a regular file, no permission), TOO_LARGE (over the cap, before reading or while reading)
 * or ABORTED.
 */
export async function readDocumentFile(
  path: string,
  opts: { maxBytes?: number; signal?: AbortSignal; hash?: Hash } = {},
): Promise<Uint8Array> {
  const max = opts.maxBytes ?? MAX_DOCUMENT_BYTES;
  const name = baseName(path);
  throwIfAborted(opts.signal, name);
  let st: Stats;
  try {
    st = await stat(path);
  } catch (e) {
    throw readError(path, e);
  }
  const what = notAFile(st);
  if (what)
    throw new ImportError(
      'READ_FAILED',
      `cannot import ${path}: it ${what}; choose a document file (PDF, Word, Markdown or text)`,
    );
  if (st.size > max) throw tooLarge(name, st.size, max);

  // O_NONBLOCK: should the path be swapped for a FIFO after the stat, opening it does not wait for a writer;
  // the fstat below then refuses it. (Both flags are 0 or absent on Windows, which has neither problem.)
  let fh: Awaited<ReturnType<typeof open>>;
  try {
    fh = await open(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0));
  } catch (e) {
    throw readError(path, e);
  }
  try {
    const opened = await fh.stat();
    if (notAFile(opened) || opened.ino !== st.ino || opened.dev !== st.dev) {
      throw new ImportError(
        'READ_FAILED',
        `cannot import ${path}: the file was replaced while it was opened; try again`,
      );
    }
    if (opened.size > max) throw tooLarge(name, opened.size, max);
    // Its own ArrayBuffer (never a slice of Node's shared pool), so it can be transferred.
    const head = new Uint8Array(Buffer.allocUnsafeSlow(opened.size).buffer);
    let filled = 0;
    while (filled < head.length) {
      throwIfAborted(opts.signal, name);
      const { bytesRead } = await fh.read(head, filled, Math.min(CHUNK, head.length - filled), filled);
      if (bytesRead === 0) break;
      opts.hash?.update(head.subarray(filled, filled + bytesRead));
      filled += bytesRead;
    }
    if (filled < head.length) return head.subarray(0, filled); // it shrank: what is there is the file
    // Past the size stat gave: a growing file, or one whose size the system does not report (/proc files).
    const more: Uint8Array[] = [];
    let total = filled;
    for (;;) {
      throwIfAborted(opts.signal, name);
      const chunk = new Uint8Array(Math.min(CHUNK, max - total + 1));
      const { bytesRead } = await fh.read(chunk, 0, chunk.length, total);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > max) throw tooLarge(name, total, max, true);
      opts.hash?.update(chunk.subarray(0, bytesRead));
      more.push(chunk.subarray(0, bytesRead));
    }
    if (!more.length) return head;
    const all = new Uint8Array(total);
    all.set(head, 0);
    let at = head.length;
    for (const c of more) {
      all.set(c, at);
      at += c.length;
    }
    return all;
  } catch (e) {
    if (e instanceof ImportError) throw e;
    throw readError(path, e);
  } finally {
    await fh.close().catch(() => {});
  }
}
