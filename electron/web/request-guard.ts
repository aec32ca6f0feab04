// Everything the web host reads from a request line before routing, read so that it cannot throw: a
// request target that `new URL` or `decodeURIComponent` refuses (`GET //[x`, `GET /%E0%A4%A`) is a 400,
// never an exception on the server's event loop. And the headers every response carries.
import type { ServerResponse } from 'node:http';

import { HttpError } from './http-error.ts';

export interface RequestTarget {
  pathname: string;
  searchParams: URLSearchParams;
}

/** The path and query of a request target; HttpError 400 when it is not a valid origin-form path. */
export function parseTarget(raw: string | undefined): RequestTarget {
  // Only origin-form ("/path?query") is served: an absolute URL or "*" is for proxies, "//host" is a trap
  // for URL parsers (it reads as an authority).
  if (raw?.[0] !== '/' || raw.startsWith('//'))
    throw new HttpError(400, `the request target '${clip(raw)}' is not a path starting with a single /`, 'BAD_URL');
  let url: URL;
  try {
    url = new URL(raw, 'http://localhost');
  } catch {
    throw new HttpError(400, `the request target '${clip(raw)}' is not a valid URL path`, 'BAD_URL');
  }
  decodePath(url.pathname); // a malformed %-escape is a malformed target, whatever route it is for
  return { pathname: url.pathname, searchParams: url.searchParams };
}

/** A path segment's percent-escapes decoded; HttpError 400 for a malformed escape or a NUL byte. */
export function decodePath(pathname: string): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    throw new HttpError(400, `the path '${clip(pathname)}' has a malformed %-escape`, 'BAD_URL');
  }
  if (decoded.includes('\0')) throw new HttpError(400, 'the path contains a NUL byte', 'BAD_URL');
  return decoded;
}

/** A header's value decoded from percent-escapes (file names are sent URI-encoded); HttpError 400 when malformed. */
export function decodeHeader(name: string, value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) throw new HttpError(400, `the ${name} header appears more than once`);
  try {
    return decodeURIComponent(value);
  } catch {
    throw new HttpError(400, `the ${name} header is not URI-encoded text (encodeURIComponent)`);
  }
}

/**
 * Sent with every answer: the UI must not be framed by another site (clickjacking: frame-ancestors for
 * browsers that read CSP, X-Frame-Options for the rest), and no answer may be sniffed into another type.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

export function setSecurityHeaders(res: ServerResponse): void {
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
}

/** The same headers for a raw answer written on a socket (a refused WebSocket upgrade). */
export function securityHeaderLines(): string {
  return Object.entries(SECURITY_HEADERS)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
}

function clip(s: string | undefined): string {
  const t = s ?? '';
  return (t.length > 80 ? t.slice(0, 80) + '…' : t).replace(/[^\x20-\x7e]/g, '?');
}
