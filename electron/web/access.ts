// Who may use the web host. It listens on 127.0.0.1, but every web page the user visits can send it
// requests, and so can every local program. The rules, checked on every route, WebSocket upgrades included:
//   - Host must be a loopback name (a page elsewhere cannot reach us through DNS rebinding);
//   - a request that carries an Origin must come from the app's own origin (a loopback name on the port
//     the browser addressed) or from the allow-list (FOLIO_ORIGINS); any other Origin is refused;
//   - a request without an allowed Origin (a program, or a page's no-cors <img>) must present
//     `Authorization: Bearer <token>`, except harmless reads: the static UI and /api/health.
// Browsers add Origin (or Sec-Fetch-Site: same-origin) themselves and pages cannot forge either, so the UI
// needs no token; JSON endpoints also refuse the content types a page may post cross-site (see body.ts).
import { createHash, timingSafeEqual, type BinaryLike } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

import { UPLOAD_FILE_NAME_HEADER, UPLOAD_KEEP_DUPLICATE_HEADER } from '../api/contract.ts';
import { HttpError } from './http-error.ts';

const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '::1']);

/** The host name and port of a Host header value ("127.0.0.1:8080", "[::1]:8080"); null when malformed. */
function splitHost(host: string): { name: string; port: string } | null {
  const m = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/i.exec(host.trim());
  if (!m) return null;
  return { name: m[1].replace(/^\[|\]$/g, '').toLowerCase(), port: m[2] ?? '80' };
}

export function isLoopbackHost(host: string | undefined): boolean {
  const h = host ? splitHost(host) : null;
  return !!h && LOOPBACK_NAMES.has(h.name);
}

/**
 * An origin as browsers send it, lower-cased: `scheme://host[:port]` (no path). Non-http schemes
 * (chrome-extension://id, app://x) are kept as written, since URL gives them the opaque origin "null".
 */
export function normalizeOrigin(origin: string): string {
  const o = origin.trim();
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/?#\s]+\/?$/i.test(o))
    throw new Error(`'${origin}' is not an origin (scheme://host[:port])`);
  let url: URL;
  try {
    url = new URL(o);
  } catch {
    throw new Error(`'${origin}' is not an origin (scheme://host[:port])`);
  }
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : o.replace(/\/$/, '').toLowerCase();
}

/** FOLIO_ORIGINS / --origins: comma-separated origins, `*` for any (like Ollama's OLLAMA_ORIGINS). */
export function parseOriginList(list: string | undefined): string[] {
  if (!list?.trim()) return [];
  return list
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)
    .map((x) => (x === '*' ? '*' : normalizeOrigin(x)));
}

/** How a request may be used: a harmless read needs neither an allowed Origin nor a token. */
export type Access = 'open' | 'protected';

/** Who the caller turned out to be. `corsOrigin`: an allow-listed origin the answer must name for CORS. */
export interface Caller {
  via: 'same-origin' | 'allowed-origin' | 'token' | 'anonymous';
  corsOrigin: string | null;
}

export interface AccessPolicyOptions {
  /** The bearer token programs present. */
  token: string;
  /** Origins besides the app's own that may call the API from a browser (`*`: any). */
  allowedOrigins?: string[];
}

const digest = (s: BinaryLike) => createHash('sha256').update(s).digest();

export class AccessPolicy {
  private readonly tokenDigest: Buffer;
  private readonly allowed: Set<string>;

  constructor(o: AccessPolicyOptions) {
    if (!o.token) throw new Error('the web host needs an API token');
    this.tokenDigest = digest(o.token);
    this.allowed = new Set(o.allowedOrigins ?? []);
  }

  /** HttpError 421 unless the request is addressed to this machine by a loopback name. */
  checkHost(headers: IncomingHttpHeaders): void {
    if (!isLoopbackHost(headers.host))
      throw new HttpError(421, 'this server answers only on 127.0.0.1 / localhost / [::1]');
  }

  /** The origin is the page this server itself served: a loopback name on the port the browser addressed. */
  private sameOrigin(origin: string, host: string | undefined): boolean {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    const h = host ? splitHost(host) : null;
    if (!h || url.protocol !== 'http:' || !LOOPBACK_NAMES.has(url.hostname.replace(/^\[|\]$/g, ''))) return false;
    return (url.port || '80') === h.port;
  }

  private originAllowed(origin: string): string | null {
    if (this.allowed.has('*')) return origin;
    try {
      const o = normalizeOrigin(origin);
      return this.allowed.has(o) ? origin : null;
    } catch {
      return null;
    }
  }

  /** The token in an Authorization header: true / false, or null when none was sent. */
  private tokenMatches(authorization: string | undefined): boolean | null {
    if (authorization === undefined) return null;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    return !!m && timingSafeEqual(digest(m[1]), this.tokenDigest);
  }

  /**
   * Checks Host, Origin and the token (HttpError 421 / 403 / 401). A token that is sent must be right,
   * whatever else the request carries.
   */
  authorize(headers: IncomingHttpHeaders, access: Access): Caller {
    this.checkHost(headers);
    const token = this.tokenMatches(headers.authorization);
    if (token === false)
      throw new HttpError(
        401,
        'the API token is wrong: send `Authorization: Bearer <token>` with the token shown in Settings → API access',
        'UNAUTHORIZED',
      );
    const origin = headers.origin;
    if (origin !== undefined) {
      if (this.sameOrigin(origin, headers.host)) return { via: 'same-origin', corsOrigin: null };
      const cors = this.originAllowed(origin);
      if (cors) return { via: 'allowed-origin', corsOrigin: cors };
      throw new HttpError(
        403,
        `requests from ${clip(origin)} are refused: only this app's own pages may call it (add the origin to FOLIO_ORIGINS to allow it)`,
        'FORBIDDEN_ORIGIN',
      );
    }
    // Browsers mark their own requests; a page cannot set this header, so "same-origin" is our UI.
    if (headers['sec-fetch-site'] === 'same-origin') return { via: 'same-origin', corsOrigin: null };
    if (token) return { via: 'token', corsOrigin: null };
    if (access === 'open') return { via: 'anonymous', corsOrigin: null };
    throw new HttpError(
      401,
      'this API needs a token: send `Authorization: Bearer <token>` (folio serve prints where the token is; Settings → API access shows it)',
      'UNAUTHORIZED',
    );
  }

  /** The CORS answer to a preflight (OPTIONS): only for allow-listed origins; others get none, so the browser blocks them. */
  preflight(headers: IncomingHttpHeaders): Record<string, string> {
    this.checkHost(headers);
    const origin = headers.origin;
    const cors = origin !== undefined ? this.originAllowed(origin) : null;
    if (!cors)
      throw new HttpError(
        403,
        'cross-origin requests are refused (add the origin to FOLIO_ORIGINS to allow it)',
        'FORBIDDEN_ORIGIN',
      );
    return {
      ...corsHeaders(cors),
      'access-control-allow-methods': 'GET, POST, OPTIONS',
      'access-control-allow-headers': `authorization, content-type, ${UPLOAD_FILE_NAME_HEADER}, ${UPLOAD_KEEP_DUPLICATE_HEADER}`,
      'access-control-max-age': '600',
    };
  }
}

export function corsHeaders(origin: string): Record<string, string> {
  return { 'access-control-allow-origin': origin, vary: 'Origin' };
}

function clip(s: string): string {
  return (s.length > 100 ? s.slice(0, 100) + '…' : s).replace(/[^\x20-\x7e]/g, '?');
}
