// Document uploads: the raw bytes of one file (POST, application/octet-stream, its name URI-encoded in a
// header) streamed to a temporary file with the cap enforced as bytes arrive; the file then belongs to
// whoever imports it. Nothing of an upload is held in memory, and a refused or broken one leaves no file.
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { basename, join } from 'node:path';

import { UPLOAD_FILE_NAME_HEADER, UPLOAD_KEEP_DUPLICATE_HEADER } from '../api/contract.ts';
import { checkDeclaredLength, requireMediaType, tooLarge } from './body.ts';
import { HttpError } from './http-error.ts';
import { decodeHeader } from './request-guard.ts';

const PREFIX = 'upload-';
/** A file of an older build (no process id in its name) is removed when a host starts, once this old. */
const STALE_MS = 60 * 60 * 1000;

/** Is the process `pid` alive (on this machine)? EPERM: alive, another user's. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface ReceivedUpload {
  fileName: string;
  tempPath: string;
  bytes: number;
  /** The upload keeps a file the library has already (documents.import's keepDuplicate). */
  keepDuplicate: boolean;
}

/**
 * Makes the folder and removes the uploads of processes that are gone (a crash mid-upload): each file names
 * the process that writes it (`upload-<pid>-<random>.part`), so another server on the same library, still
 * receiving, keeps its files.
 */
export function prepareUploadDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(PREFIX)) continue;
    const p = join(dir, name);
    const pid = /^upload-(\d+)-[0-9a-f]+\.part$/.exec(name)?.[1];
    try {
      const dead = pid !== undefined ? Number(pid) !== process.pid && !alive(Number(pid)) : false;
      if (dead || Date.now() - statSync(p).mtimeMs > STALE_MS) rmSync(p, { force: true });
    } catch {
      // gone meanwhile
    }
  }
}

/** The file name an upload declares: required, a plain name (no folders), at most 1024 characters. */
export function uploadFileName(req: IncomingMessage): string {
  const raw = decodeHeader(UPLOAD_FILE_NAME_HEADER, req.headers[UPLOAD_FILE_NAME_HEADER]);
  const name = raw === undefined ? '' : basename(raw.replace(/\\/g, '/')).trim();
  if (!name || name === '.' || name === '..')
    throw new HttpError(400, `name the file in the ${UPLOAD_FILE_NAME_HEADER} header (URI-encoded)`, 'BAD_REQUEST');
  if (name.length > 1024 || /[\0-\x1f]/.test(name))
    throw new HttpError(400, 'the file name is longer than 1024 characters or has control characters', 'BAD_REQUEST');
  return name;
}

/** Streams the body to a new file in `dir`; HttpError 413 (file removed) when it passes `cap` bytes. */
export function receiveUpload(req: IncomingMessage, dir: string, cap: number): Promise<ReceivedUpload> {
  requireMediaType(req, 'application/octet-stream');
  const fileName = uploadFileName(req);
  const keepDuplicate = req.headers[UPLOAD_KEEP_DUPLICATE_HEADER] !== undefined;
  checkDeclaredLength(req, cap, fileName);
  const tempPath = join(dir, `${PREFIX}${process.pid}-${randomBytes(12).toString('hex')}.part`);
  return new Promise((ok, fail) => {
    const out = createWriteStream(tempPath, { flags: 'wx', mode: 0o600 });
    let bytes = 0;
    let settled = false;
    const abandon = (e: unknown) => {
      if (settled) return;
      settled = true;
      req.unpipe(out);
      out.destroy();
      // The stream may still be opening the file: remove it once it is closed.
      out.once('close', () => rmSync(tempPath, { force: true }));
      rmSync(tempPath, { force: true });
      fail(e);
    };
    req.on('data', (c: Buffer) => {
      bytes += c.length;
      if (bytes > cap) abandon(tooLarge(cap, fileName));
    });
    req.on('aborted', () => abandon(new HttpError(400, 'the upload was interrupted')));
    req.on('error', abandon);
    out.on('error', (e) => abandon(new HttpError(500, `cannot store the upload: ${e.message}`, 'FILE_WRITE_FAILED')));
    // 'close': written and the descriptor released, so the importer may read (or remove) the file.
    out.on('close', () => {
      if (settled || !out.writableFinished) return;
      settled = true;
      ok({ fileName, tempPath, bytes, keepDuplicate });
    });
    req.pipe(out);
  });
}
