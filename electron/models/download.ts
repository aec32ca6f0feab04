// Downloads a GGUF model from Hugging Face (a file URL, a repo page URL plus a file name, or a catalog
// entry) into a folder, the way a user expects a big download to behave:
//
// - streamed to `<name>.part` with progress (bytes, total, speed, time left), and renamed to `<name>`
//   only when complete and verified, so a partial file never looks like a model;
// - resumed after an interruption with `Range: bytes=<size of the .part>-` (and If-Range with the
//   server's ETag), and started again from zero when the server ignores the range (200), when the file
//   changed (another ETag, X-Linked-Etag or length), or when the .part is longer than the file;
//   a sidecar `<name>.part.json` remembers what the .part belongs to;
// - checked with SHA-256 when a digest is known: the catalog's, else the X-Linked-Etag that
//   huggingface.co sends for files stored in Git LFS (its value is the file's SHA-256), else an ETag
//   that is a SHA-256; a mismatch deletes the .part and fails with CHECKSUM_MISMATCH;
// - cancellable with an AbortSignal (the .part stays, for a later resume);
// - errors as ApiError with a code: OFFLINE (DNS or connection failure), HTTP_ERROR (with the
//   status), INTERRUPTED, CHECKSUM_MISMATCH, ABORTED, DISK_FULL, EXISTS, BUSY, BAD_URL, BAD_REDIRECT.
// Only Node's own http/https modules are used.
import { createHash, type Hash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, statfs, writeFile } from 'node:fs/promises';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import { ApiError, type CatalogEntry } from '../api/contract.ts';

// ---------------------------------------------------------------------------------------------------
// Hugging Face URLs

const HF_HOSTS = ['huggingface.co', 'www.huggingface.co', 'hf.co'];

export interface HfFileRef {
  org: string;
  repo: string;
  revision: string;
  /** Path of the file in the repo. */
  file: string;
  /** The download URL: https://huggingface.co/<org>/<repo>/resolve/<revision>/<file>. */
  url: string;
}

/**
 * Understands https://huggingface.co/<org>/<repo>/resolve/<rev>/<file>.gguf, the same with /blob/,
 * and a repo page (…/<org>/<repo>, …/tree/<rev>) together with `fileName`. Throws ApiError BAD_URL.
 */
export function parseHuggingFaceUrl(input: string, fileName?: string): HfFileRef {
  let u: URL;
  try {
    u = new URL(input);
  } catch {
    throw new ApiError('BAD_URL', `not a URL: ${input}`);
  }
  if (!HF_HOSTS.includes(u.hostname)) throw new ApiError('BAD_URL', `not a Hugging Face URL: ${input}`);
  const segs = u.pathname.split('/').filter(Boolean);
  if (segs.length < 2) throw new ApiError('BAD_URL', `the URL names no repository: ${input}`);
  const [org, repo, kind, revision, ...rest] = segs;
  let file: string;
  let rev = 'main';
  if ((kind === 'resolve' || kind === 'blob') && revision && rest.length) {
    rev = revision;
    file = rest.map(decodeURIComponent).join('/');
  } else if (kind === undefined || kind === 'tree') {
    if (!fileName) throw new ApiError('BAD_URL', `${input} is a repository page: say which .gguf file to download`);
    if (kind === 'tree' && revision) rev = revision;
    file = fileName.replace(/^\/+/, '');
  } else {
    throw new ApiError('BAD_URL', `not a Hugging Face file URL: ${input}`);
  }
  if (!/\.gguf$/i.test(file)) throw new ApiError('BAD_URL', `${file} is not a .gguf file`);
  if (file.split('/').some((s) => s === '' || s === '.' || s === '..'))
    throw new ApiError('BAD_URL', `bad file path ${file}`);
  const url = `https://huggingface.co/${org}/${repo}/resolve/${rev}/${file.split('/').map(encodeURIComponent).join('/')}`;
  return { org, repo, revision: decodeURIComponent(rev), file, url };
}

/** The local file name for a download: the URL's last path segment, checked to be a plain *.gguf name. */
export function fileNameFromUrl(url: string): string {
  const last = new URL(url).pathname.split('/').filter(Boolean).pop() ?? '';
  const name = decodeURIComponent(last);
  if (!/\.gguf$/i.test(name) || name.startsWith('.') || /[\\/:*?"<>|\x00-\x1f]/.test(name)) {
    throw new ApiError('BAD_URL', `the URL does not end in a .gguf file name: ${url}`);
  }
  return name;
}

// ---------------------------------------------------------------------------------------------------
// Options and results

export interface DownloadProgress {
  /** Bytes of the file on disk so far (including what an earlier attempt left). */
  bytes: number;
  /** The file's size, when the server says. */
  total: number | null;
  /** Over the last few seconds. */
  bytesPerSecond: number;
  etaMs: number | null;
  /** Where this transfer started (0, or the .part's size when resuming). */
  resumedFrom: number;
}

export interface DownloadRequest {
  /** A Hugging Face file URL, a repo page URL with `fileName`, or an http(s) URL on `allowedHosts`. */
  url?: string;
  fileName?: string;
  /** A catalog entry (its URL, size and digest); used when `url` is absent. */
  catalog?: CatalogEntry;
  /** Folder the model is saved in (created when missing). */
  destDir: string;
  /** Expected SHA-256 (hex); overrides the catalog's. */
  sha256?: string | null;
  signal?: AbortSignal;
  onProgress?: (p: DownloadProgress) => void;
  /** Extra request headers, e.g. Authorization for gated repos (sent to the first host only). */
  headers?: Record<string, string>;
  /** Hosts the download may start at; default huggingface.co and hf.co (redirects may go elsewhere). */
  allowedHosts?: string[];
  /** Further attempts after an interruption, each resuming the .part; default 3. */
  retries?: number;
  /** Wait before the first retry, doubling each time; default 1000 ms. */
  retryDelayMs?: number;
  /** A connection idle this long counts as interrupted; default 30 s. */
  idleTimeoutMs?: number;
  /** Least time between two progress calls; default 250 ms (the last call always comes). */
  progressIntervalMs?: number;
  /** Replace an existing file of the same name; default false (EXISTS). */
  overwrite?: boolean;
  /** DNS lookup for the connections (tests use it to fail name resolution without a network). */
  lookup?: LookupFunction;
}

export interface DownloadResult {
  path: string;
  bytes: number;
  /** SHA-256 of the file (always computed). */
  sha256: string;
  /** What the digest was checked against: the catalog or caller, the server's header, or nothing. */
  verifiedWith: 'expected' | 'server' | null;
  /** Bytes that were already on disk when the last transfer started. */
  resumedFrom: number;
  /** Times the .part was thrown away and the download started over. */
  restarts: number;
}

interface PartState {
  url: string;
  etag: string | null;
  linkedEtag: string | null;
  total: number | null;
}

const active = new Set<string>();

// ---------------------------------------------------------------------------------------------------

/** Downloads a model file; see the top of this file. */
export async function downloadModel(req: DownloadRequest): Promise<DownloadResult> {
  const source = resolveSource(req);
  const finalPath = join(req.destDir, source.fileName);
  const partPath = `${finalPath}.part`;
  const statePath = `${partPath}.json`;

  if (req.signal?.aborted) throw aborted();
  if (!req.overwrite && (await exists(finalPath))) {
    throw new ApiError('EXISTS', `${finalPath} already exists`, { path: finalPath });
  }
  if (active.has(partPath)) throw new ApiError('BUSY', `${source.fileName} is already being downloaded`);
  active.add(partPath);
  try {
    await mkdir(req.destDir, { recursive: true, mode: 0o700 });
    const retries = req.retries ?? 3;
    let restarts = 0;
    for (let attempt = 0; ; attempt++) {
      try {
        const r = await attemptOnce(req, source, { finalPath, partPath, statePath });
        if (r === 'restart') {
          if (++restarts > 3)
            throw new ApiError('INTERRUPTED', `the server keeps changing ${source.fileName}; try again later`);
          attempt--; // a restart is not a failed attempt
          continue;
        }
        return { ...r, restarts };
      } catch (e) {
        const err = toApiError(e, req.signal);
        const retryable =
          err.code === 'INTERRUPTED' ||
          (err.code === 'OFFLINE' && attempt > 0) ||
          (err.code === 'HTTP_ERROR' &&
            [429, 500, 502, 503, 504].includes((err.details as { status?: number })?.status ?? 0));
        if (!retryable || attempt >= retries || req.signal?.aborted) throw err;
        await sleep((req.retryDelayMs ?? 1000) * 2 ** attempt, req.signal);
      }
    }
  } finally {
    active.delete(partPath);
  }
}

interface Source {
  url: string;
  fileName: string;
  expectedSha256: string | null;
  expectedBytes: number | null;
}

function resolveSource(req: DownloadRequest): Source {
  const raw = req.url ?? req.catalog?.url;
  if (!raw) throw new ApiError('BAD_URL', 'a download needs a URL or a catalog entry');
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ApiError('BAD_URL', `not a URL: ${raw}`);
  }
  let url: string;
  if (HF_HOSTS.includes(u.hostname)) {
    url = parseHuggingFaceUrl(raw, req.fileName).url;
  } else {
    const allowed = req.allowedHosts ?? [];
    if (!allowed.includes(u.hostname) && !allowed.includes(u.host)) {
      throw new ApiError('BAD_URL', `downloads come from huggingface.co, not ${u.host}`);
    }
    if (u.protocol !== 'https:' && u.protocol !== 'http:')
      throw new ApiError('BAD_URL', `unsupported protocol ${u.protocol}`);
    url = raw;
  }
  const expected = req.sha256 !== undefined ? req.sha256 : req.catalog && !req.url ? req.catalog.sha256 : null;
  if (expected !== null && expected !== undefined && !/^[0-9a-f]{64}$/i.test(expected)) {
    throw new ApiError('BAD_REQUEST', `not a SHA-256 digest: ${expected}`);
  }
  return {
    url,
    fileName: fileNameFromUrl(url),
    expectedSha256: expected ? expected.toLowerCase() : null,
    expectedBytes: req.catalog && !req.url ? req.catalog.fileBytes : null,
  };
}

interface Paths {
  finalPath: string;
  partPath: string;
  statePath: string;
}

async function attemptOnce(
  req: DownloadRequest,
  src: Source,
  p: Paths,
): Promise<Omit<DownloadResult, 'restarts'> | 'restart'> {
  let state = await readState(p.statePath);
  let offset = (await fileSizeOrNull(p.partPath)) ?? 0;
  if (offset > 0 && (!state || state.url !== src.url)) {
    // a .part we cannot vouch for: start over
    await discard(p);
    offset = 0;
    state = null;
  }

  const headers: Record<string, string> = {
    'user-agent': 'folio/0.1',
    'accept-encoding': 'identity',
    ...(req.headers ?? {}),
  };
  if (offset > 0) {
    headers.range = `bytes=${offset}-`;
    if (state?.etag && !state.etag.startsWith('W/')) headers['if-range'] = state.etag;
  }
  const { res, linkedEtag, linkedSize } = await get(new URL(src.url), headers, req);
  const status = res.statusCode ?? 0;
  const etag = headerString(res, 'etag');

  try {
    let start = 0;
    let total: number | null = null;
    if (status === 206) {
      const cr = parseContentRange(headerString(res, 'content-range'));
      const changed =
        !cr ||
        cr.start !== offset ||
        (state?.total != null && cr.total !== null && cr.total !== state.total) ||
        (state?.etag && etag && state.etag !== etag) ||
        (state?.linkedEtag && linkedEtag && state.linkedEtag !== linkedEtag);
      if (changed) {
        res.destroy();
        await discard(p);
        return 'restart';
      }
      start = offset;
      total = cr.total;
    } else if (status === 200) {
      // full body: a fresh download, or the server ignored the range (or the file changed): from zero
      const len = headerString(res, 'content-length');
      total = len !== null && /^\d+$/.test(len) ? Number(len) : null;
    } else if (status === 416 && offset > 0) {
      // nothing after the .part: it may already be whole, or the file got shorter
      res.resume();
      const cr = parseContentRange(headerString(res, 'content-range'));
      const size = cr?.total ?? linkedSize ?? state?.total ?? null;
      if (size === offset) return await finish(req, src, p, null, offset, offset, { linkedEtag, etag });
      await discard(p);
      return 'restart';
    } else {
      res.resume();
      throw httpError(status, res.statusMessage ?? '', src.url);
    }
    total ??= linkedSize;

    if (src.expectedBytes !== null && total !== null && total !== src.expectedBytes) {
      throw new ApiError(
        'CHECKSUM_MISMATCH',
        `the server's ${src.fileName} has ${total} bytes, the catalog expects ` +
          `${src.expectedBytes}: the file changed upstream`,
      );
    }
    const serverSha = sha256Of(linkedEtag) ?? sha256Of(etag);
    if (src.expectedSha256 && serverSha && serverSha !== src.expectedSha256) {
      throw new ApiError(
        'CHECKSUM_MISMATCH',
        `Hugging Face reports SHA-256 ${serverSha} for ${src.fileName}, ` +
          `but ${src.expectedSha256} is expected: the file changed upstream`,
      );
    }
    await checkDiskSpace(req.destDir, total !== null ? total - start : null);

    await writeState(p.statePath, { url: src.url, etag, linkedEtag, total });
    const hash = createHash('sha256');
    if (start > 0) await hashFile(p.partPath, start, hash);

    const meter = new ProgressMeter(req, start, total);
    let received = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        hash.update(chunk);
        received += chunk.length;
        meter.update(start + received);
        cb(null, chunk);
      },
    });
    const out = createWriteStream(p.partPath, { flags: start > 0 ? 'a' : 'w', mode: 0o600 });
    try {
      await pipeline(res, counter, out);
    } catch (e) {
      // let the file settle before anyone looks at the .part again (its size is the resume point)
      if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
      throw toApiError(e, req.signal, 'transfer');
    }
    const bytes = start + received;
    meter.done(bytes);
    if (total !== null && bytes !== total) {
      throw new ApiError('INTERRUPTED', `the connection ended after ${bytes} of ${total} bytes`);
    }
    return await finish(req, src, p, hash, bytes, start, { linkedEtag, etag });
  } finally {
    if (!res.destroyed && !res.readableEnded) res.destroy();
  }
}

/** Verifies the whole .part and renames it into place. */
async function finish(
  req: DownloadRequest,
  src: Source,
  p: Paths,
  hash: Hash | null,
  bytes: number,
  resumedFrom: number,
  server: { linkedEtag: string | null; etag: string | null },
): Promise<Omit<DownloadResult, 'restarts'>> {
  if (!hash) {
    hash = createHash('sha256');
    await hashFile(p.partPath, bytes, hash);
  }
  const digest = hash.digest('hex');
  const serverSha = sha256Of(server.linkedEtag) ?? sha256Of(server.etag);
  const expected = src.expectedSha256 ?? serverSha;
  if (expected && digest !== expected) {
    await discard(p);
    throw new ApiError(
      'CHECKSUM_MISMATCH',
      `${src.fileName} is damaged: its SHA-256 is ${digest}, ${expected} was ` +
        `expected. The partial file was deleted; download it again.`,
      { expected, actual: digest },
    );
  }
  if (req.signal?.aborted) throw aborted();
  await rename(p.partPath, p.finalPath);
  await rm(p.statePath, { force: true });
  return {
    path: p.finalPath,
    bytes,
    sha256: digest,
    verifiedWith: src.expectedSha256 ? 'expected' : serverSha ? 'server' : null,
    resumedFrom,
  };
}

// ---------------------------------------------------------------------------------------------------
// HTTP

/** GET with redirects followed by hand, so huggingface.co's X-Linked-Etag on the redirect is seen. */
async function get(
  url: URL,
  headers: Record<string, string>,
  req: DownloadRequest,
): Promise<{ res: IncomingMessage; linkedEtag: string | null; linkedSize: number | null }> {
  let linkedEtag: string | null = null;
  let linkedSize: number | null = null;
  let h = { ...headers };
  for (let hop = 0; hop <= 10; hop++) {
    const res = await send(url, h, req);
    linkedEtag = headerString(res, 'x-linked-etag') ?? linkedEtag;
    const ls = headerString(res, 'x-linked-size');
    if (ls && /^\d+$/.test(ls)) linkedSize = Number(ls);
    const status = res.statusCode ?? 0;
    const location = headerString(res, 'location');
    if ([301, 302, 303, 307, 308].includes(status) && location) {
      res.resume();
      const next = new URL(location, url);
      if (url.protocol === 'https:' && next.protocol !== 'https:') {
        throw new ApiError('BAD_REDIRECT', `refusing a redirect from https to ${next.protocol} (${next.host})`);
      }
      if (next.protocol !== 'https:' && next.protocol !== 'http:')
        throw new ApiError('BAD_REDIRECT', `redirect to ${next.protocol}`);
      if (next.host !== url.host) {
        // credentials stay with the host they were meant for
        h = Object.fromEntries(
          Object.entries(h).filter(([k]) => !['authorization', 'cookie'].includes(k.toLowerCase())),
        );
      }
      url = next;
      continue;
    }
    return { res, linkedEtag, linkedSize };
  }
  throw new ApiError('BAD_REDIRECT', 'too many redirects');
}

function send(url: URL, headers: Record<string, string>, req: DownloadRequest): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const mod = url.protocol === 'https:' ? https : http;
    const r = mod.request(
      url,
      {
        method: 'GET',
        headers,
        signal: req.signal,
        timeout: req.idleTimeoutMs ?? 30_000,
        ...(req.lookup ? { lookup: req.lookup } : {}),
      },
      resolve,
    );
    r.on('timeout', () =>
      r.destroy(Object.assign(new Error(`no data for ${req.idleTimeoutMs ?? 30_000} ms`), { code: 'ETIMEDOUT' })),
    );
    r.on('error', (e) => reject(toApiError(e, req.signal, 'connect', url)));
    r.end();
  });
}

function headerString(res: IncomingMessage, name: string): string | null {
  const v = res.headers[name];
  if (Array.isArray(v)) return v[0] ?? null;
  return v ?? null;
}

function parseContentRange(v: string | null): { start: number; end: number | null; total: number | null } | null {
  if (!v) return null;
  let m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(v.trim());
  if (m) return { start: Number(m[1]), end: Number(m[2]), total: m[3] === '*' ? null : Number(m[3]) };
  m = /^bytes \*\/(\d+)$/.exec(v.trim());
  if (m) return { start: -1, end: null, total: Number(m[1]) };
  return null;
}

/** The SHA-256 in an ETag-like header value ("<hex>", W/"<hex>"), or null when it is not one. */
function sha256Of(v: string | null): string | null {
  if (!v) return null;
  const m = /^(?:W\/)?"?([0-9a-fA-F]{64})"?$/.exec(v.trim());
  return m ? m[1].toLowerCase() : null;
}

const OFFLINE_CODES = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_NONAME',
  'EAI_FAIL',
  'ECONNREFUSED',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'ENETDOWN',
  'EHOSTDOWN',
  'EADDRNOTAVAIL',
  'ETIMEDOUT',
  'ECONNRESET',
  'EPIPE',
  'ECONNABORTED',
]);

function aborted(): ApiError {
  return new ApiError('ABORTED', 'the download was cancelled; the partial file is kept for a later resume');
}

/** Maps whatever went wrong to an ApiError with one of this module's codes. */
function toApiError(e: unknown, signal: AbortSignal | undefined, phase?: 'connect' | 'transfer', url?: URL): ApiError {
  if (e instanceof ApiError) return e;
  if (signal?.aborted) return aborted();
  const err = e as NodeJS.ErrnoException;
  const code = err?.code ?? '';
  if (code === 'ABORT_ERR' || err?.name === 'AbortError') return aborted();
  if (code === 'ENOSPC' || code === 'EDQUOT') return new ApiError('DISK_FULL', `the disk is full: ${err.message}`);
  if (phase === 'connect' && OFFLINE_CODES.has(code)) {
    const host = url ? url.host : 'the server';
    const why =
      code.startsWith('EAI') || code === 'ENOTFOUND' ? `cannot resolve ${host}` : `cannot connect to ${host} (${code})`;
    return new ApiError(
      'OFFLINE',
      `offline: ${why}. Check the network connection; the download resumes where it stopped.`,
      { code },
    );
  }
  if (
    phase === 'transfer' ||
    OFFLINE_CODES.has(code) ||
    code === 'ERR_STREAM_PREMATURE_CLOSE' ||
    /aborted/i.test(err?.message ?? '')
  ) {
    if (code.startsWith('E') && !OFFLINE_CODES.has(code) && code !== 'ERR_STREAM_PREMATURE_CLOSE') {
      return new ApiError('FILE_WRITE_FAILED', `cannot write the download: ${err.message}`);
    }
    return new ApiError('INTERRUPTED', `the download was interrupted (${code || err?.message || 'connection closed'})`);
  }
  return new ApiError('DOWNLOAD_FAILED', err?.message ?? String(e));
}

function httpError(status: number, statusText: string, url: string): ApiError {
  let hint = '';
  if (status === 401 || status === 403)
    hint = ': the model may be gated (accept its licence on huggingface.co and give an access token)';
  else if (status === 404) hint = ': no such file (check the repository, revision and file name)';
  else if (status === 429) hint = ': too many requests, try again later';
  return new ApiError('HTTP_ERROR', `HTTP ${status}${statusText ? ' ' + statusText : ''} for ${url}${hint}`, {
    status,
  });
}

// ---------------------------------------------------------------------------------------------------
// Files and progress

async function exists(p: string): Promise<boolean> {
  return (await fileSizeOrNull(p)) !== null;
}

async function fileSizeOrNull(p: string): Promise<number | null> {
  try {
    return (await stat(p)).size;
  } catch {
    return null;
  }
}

async function discard(p: Paths): Promise<void> {
  await rm(p.partPath, { force: true });
  await rm(p.statePath, { force: true });
}

async function readState(path: string): Promise<PartState | null> {
  try {
    const s = JSON.parse(await readFile(path, 'utf8')) as Partial<PartState>;
    return typeof s.url === 'string'
      ? {
          url: s.url,
          etag: s.etag ?? null,
          linkedEtag: s.linkedEtag ?? null,
          total: typeof s.total === 'number' ? s.total : null,
        }
      : null;
  } catch {
    return null;
  }
}

async function writeState(path: string, s: PartState): Promise<void> {
  await writeFile(path, JSON.stringify(s), { mode: 0o600 });
}

/** Feeds the first `bytes` bytes of a file to a hash. */
async function hashFile(path: string, bytes: number, hash: Hash): Promise<void> {
  if (bytes <= 0) return;
  for await (const chunk of createReadStream(path, { start: 0, end: bytes - 1, highWaterMark: 1 << 20 })) {
    hash.update(chunk as Buffer);
  }
}

async function checkDiskSpace(dir: string, needed: number | null): Promise<void> {
  if (needed === null || needed <= 0) return;
  try {
    const s = await statfs(dir);
    const free = Number(s.bavail) * Number(s.bsize);
    if (free < needed) {
      throw new ApiError(
        'DISK_FULL',
        `not enough disk space in ${dir}: the download needs ${needed} more bytes, ${free} are free`,
      );
    }
  } catch (e) {
    if (e instanceof ApiError) throw e;
    // statfs is not available everywhere; the write itself will tell
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(aborted());
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(aborted());
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Turns byte counts into throttled progress calls with a speed over the last few seconds. */
class ProgressMeter {
  private samples: { t: number; bytes: number }[] = [];
  private lastCall = 0;
  constructor(
    private readonly req: DownloadRequest,
    private readonly resumedFrom: number,
    private readonly total: number | null,
  ) {
    this.samples.push({ t: Date.now(), bytes: resumedFrom });
  }
  update(bytes: number): void {
    if (!this.req.onProgress) return;
    const now = Date.now();
    if (now - this.lastCall < (this.req.progressIntervalMs ?? 250)) return;
    this.emit(now, bytes);
  }
  done(bytes: number): void {
    if (this.req.onProgress) this.emit(Date.now(), bytes);
  }
  private emit(now: number, bytes: number): void {
    this.lastCall = now;
    this.samples.push({ t: now, bytes });
    while (this.samples.length > 2 && now - this.samples[0].t > 5000) this.samples.shift();
    const first = this.samples[0];
    const dt = (now - first.t) / 1000;
    const bytesPerSecond = dt > 0 ? (bytes - first.bytes) / dt : 0;
    const etaMs =
      this.total !== null && bytesPerSecond > 0 ? Math.round(((this.total - bytes) / bytesPerSecond) * 1000) : null;
    this.req.onProgress!({ bytes, total: this.total, bytesPerSecond, etaMs, resumedFrom: this.resumedFrom });
  }
}
