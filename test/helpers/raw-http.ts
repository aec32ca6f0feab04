// HTTP at the byte level, for requests a client library refuses to send (a malformed request line, a
// WebSocket upgrade with a bad target) and for bodies streamed in pieces.
import { connect } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Parses the first response on a connection's bytes (status 0 when nothing came back). */
export function parseResponse(text: string): RawResponse {
  const end = text.indexOf('\r\n\r\n');
  const head = end < 0 ? text : text.slice(0, end);
  const [statusLine, ...lines] = head.split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const raw = end < 0 ? '' : text.slice(end + 4);
  return { status, headers, body: /chunked/i.test(headers['transfer-encoding'] ?? '') ? dechunk(raw) : raw };
}

/** The data of a chunked body (as far as it arrived). */
function dechunk(raw: string): string {
  let out = '';
  let at = 0;
  for (;;) {
    const eol = raw.indexOf('\r\n', at);
    if (eol < 0) return out;
    const n = parseInt(raw.slice(at, eol), 16);
    if (!(n > 0)) return out;
    out += raw.slice(eol + 2, eol + 2 + n);
    at = eol + 2 + n + 2;
  }
}

/**
 * Sends `head` (request line and headers, without the blank line) and then `body` (or pieces of it from
 * a generator, written as the socket drains), and resolves with what came back once the server closes the
 * connection or `timeoutMs` passes.
 */
export function rawRequest(
  port: number,
  head: string,
  body?: Buffer | Iterable<Buffer>,
  timeoutMs = 10_000,
): Promise<RawResponse> {
  return new Promise((ok, fail) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      ok(parseResponse(Buffer.concat(chunks).toString('utf8')));
    };
    const timer = setTimeout(finish, timeoutMs);
    socket.on('data', (c) => chunks.push(c));
    socket.on('close', finish);
    // A server that refuses a body may close while we still write: what it answered is what counts.
    socket.on('error', (e: NodeJS.ErrnoException) =>
      chunks.length || e.code === 'ECONNRESET' || e.code === 'EPIPE' ? finish() : fail(e),
    );
    socket.on('connect', async () => {
      socket.write(head + '\r\n\r\n');
      if (!body) return;
      const pieces = Buffer.isBuffer(body) ? [body] : body;
      for (const p of pieces) {
        if (done || socket.destroyed) return;
        if (!socket.write(p)) await new Promise((r) => socket.once('drain', r).once('close', r));
      }
    });
  });
}
