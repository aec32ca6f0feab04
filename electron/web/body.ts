// Request bodies, with the limit enforced while they arrive: a body over it is refused as soon as its
// Content-Length says so or its bytes pass the limit, and is never gathered or turned into a string.
import type { IncomingMessage, ServerResponse } from 'node:http';

import { HttpError } from './http-error.ts';

/** The media type of a Content-Type header, lower-cased, without parameters ('' when missing). */
export function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
}

/**
 * HttpError 415 unless the body is declared as `expected`. A page may post text/plain, form encodings
 * and multipart to any site without asking first (no CORS preflight); requiring application/json (or
 * application/octet-stream for uploads) means a browser must ask, and we never say yes to a foreign page.
 */
export function requireMediaType(req: IncomingMessage, expected: string): void {
  const got = mediaType(req);
  if (got !== expected)
    throw new HttpError(
      415,
      `send the body as ${expected} (got ${got ? `'${got}'` : 'no Content-Type'})`,
      'UNSUPPORTED_MEDIA_TYPE',
    );
}

/** HttpError 413 when Content-Length alone shows the body is over `limit`. */
export function checkDeclaredLength(req: IncomingMessage, limit: number, what: string): void {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit, what);
}

export function tooLarge(limit: number, what: string): HttpError {
  return new HttpError(413, `${what} is larger than the limit of ${formatBytes(limit)}`, 'TOO_LARGE');
}

export function formatBytes(n: number): string {
  return n % 2 ** 20 === 0 ? `${n / 2 ** 20} MiB` : n % 1024 === 0 ? `${n / 1024} KiB` : `${n} bytes`;
}

/**
 * After refusing a body, lets the client finish sending (up to `drain` more bytes) so it reads the answer
 * instead of a reset connection, then closes the connection; a client that keeps sending is cut off.
 */
export function discardBody(req: IncomingMessage, res: ServerResponse, drain: number): void {
  if (!res.headersSent) res.setHeader('connection', 'close');
  if (req.complete) return;
  let left = drain;
  req.removeAllListeners('data');
  req.on('data', (c: Buffer) => {
    left -= c.length;
    if (left < 0) req.destroy();
  });
  req.on('error', () => {});
  req.resume();
}

/** A JSON body of at most `limit` bytes, as application/json; HttpError 413 / 415 / 400. */
export function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  return new Promise((ok, fail) => {
    try {
      requireMediaType(req, 'application/json');
      checkDeclaredLength(req, limit, 'the request body');
    } catch (e) {
      return fail(e);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (f: () => void) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      f();
    };
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        chunks.length = 0;
        return finish(() => fail(tooLarge(limit, 'the request body')));
      }
      chunks.push(c);
    };
    req.on('data', onData);
    req.on('end', () =>
      finish(() => {
        // Under the limit, so the text is far below V8's longest string.
        const text = Buffer.concat(chunks, size).toString('utf8');
        if (text.trim() === '') return ok({});
        try {
          ok(JSON.parse(text));
        } catch {
          fail(new HttpError(400, 'the request body is not valid JSON', 'BAD_REQUEST'));
        }
      }),
    );
    req.on('error', (e) => finish(() => fail(e)));
    req.on('aborted', () => finish(() => fail(new HttpError(400, 'the client stopped sending the body'))));
  });
}
