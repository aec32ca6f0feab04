// Who may use the web host. It listens on 127.0.0.1, but every web page the user visits can send it
// requests, and so can every local program, including other users' on a shared machine. Only a secret
// proves who a caller is; headers only refuse web pages. The rules, checked on every route, WebSocket
// upgrades included:
//   - Host must be a loopback name (a page elsewhere cannot reach us through DNS rebinding);
//   - a request that carries an Origin must come from the app's own origin (a loopback name on the port
//     the browser addressed) or from the allow-list (FOLIO_ORIGINS); any other Origin is refused;
//   - every route but the harmless reads (the static UI, /api/health) needs the secret: either
//     `Authorization: Bearer <token>` (programs, allow-listed pages), or the session cookie the browser got by
//     opening the token link `folio serve` prints (as Jupyter's server does). The cookie counts only on the
//     app's own requests: with our Origin, or with none and Sec-Fetch-Site same-origin or none, because
//     cookies are not kept apart by port and a page on another localhost port is "same-site".
// Origin and Sec-Fetch-Site are set by browsers and cannot be forged by pages, but any program can send
// them: they refuse pages, never admit anyone. JSON endpoints also refuse the content types a page may post
// cross-site (see body.ts).
import { createHash, createHmac, timingSafeEqual, type BinaryLike } from 'node:crypto';
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

/**
 * Who the caller turned out to be: a holder of the token, the app's own page with its session cookie, or
 * nobody known (harmless reads only). `corsOrigin`: an allow-listed origin the answer must name for CORS.
 */
export interface Caller {
  via: 'token' | 'session' | 'anonymous';
  corsOrigin: string | null;
}

/** The session cookie's name carries the port: browsers keep cookies per host, not per port. */
export const SESSION_COOKIE_PREFIX = 'folio-session-';
/** How long a browser stays signed in without opening the token link again. */
export const SESSION_MAX_AGE_S = 30 * 24 * 3600;
/** The query parameter of the link `folio serve` prints: `http://127.0.0.1:8080/?token=...`. */
export const TOKEN_QUERY_PARAM = 'token';

export interface AccessPolicyOptions {
  /** The bearer token programs present. */
  token: string;
  /** Origins besides the app's own that may call the API from a browser (`*`: any). */
  allowedOrigins?: string[];
}

const digest = (s: BinaryLike) => createHash('sha256').update(s).digest();

export class AccessPolicy {
  private readonly tokenDigest: Buffer;
  /** The session cookie's value: derived from the token, so it lasts across restarts and ends with the token. */
  private readonly session: string;
  private readonly allowed: Set<string>;

  constructor(o: AccessPolicyOptions) {
    if (!o.token) throw new Error('the web host needs an API token');
    this.tokenDigest = digest(o.token);
    this.session = createHmac('sha256', o.token).update('folio web session v1').digest('base64url');
    this.allowed = new Set(o.allowedOrigins ?? []);
  }

  /** True when `token` is the API token (compared in constant time). */
  isToken(token: string): boolean {
    return timingSafeEqual(digest(token), this.tokenDigest);
  }

  /** The Set-Cookie value that signs the browser in on the port the request addressed. */
  sessionCookie(headers: IncomingHttpHeaders): string {
    const port = splitHost(headers.host ?? '')?.port ?? '80';
    return `${SESSION_COOKIE_PREFIX}${port}=${this.session}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${SESSION_MAX_AGE_S}`;
  }

  /** The request carries this server's session cookie (for the port it addressed). */
  private hasSession(headers: IncomingHttpHeaders): boolean {
    const port = splitHost(headers.host ?? '')?.port ?? '80';
    const value = readCookie(headers.cookie, `${SESSION_COOKIE_PREFIX}${port}`);
    return value !== null && timingSafeEqual(digest(value), digest(this.session));
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
    return !!m && this.isToken(m[1]);
  }

  /**
   * Checks Host, Origin and the caller's secret (HttpError 421 / 403 / 401). A token that is sent must be
   * right, whatever else the request carries; a page of another origin is refused even with the secret.
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
    let ownPage: boolean;
    let corsOrigin: string | null = null;
    if (origin !== undefined) {
      ownPage = this.sameOrigin(origin, headers.host);
      if (!ownPage) corsOrigin = this.originAllowed(origin);
      if (!ownPage && !corsOrigin)
        throw new HttpError(
          403,
          `requests from ${clip(origin)} are refused: only this app's own pages may call it (add the origin to FOLIO_ORIGINS to allow it)`,
          'FORBIDDEN_ORIGIN',
        );
    } else {
      // No Origin: a program, a navigation, or a page's no-cors GET (<img>), which browsers mark as not ours.
      const site = headers['sec-fetch-site'];
      ownPage = site === undefined || site === 'same-origin' || site === 'none';
    }
    if (token) return { via: 'token', corsOrigin };
    if (ownPage && this.hasSession(headers)) return { via: 'session', corsOrigin: null };
    if (access === 'open') return { via: 'anonymous', corsOrigin };
    throw new HttpError(
      401,
      'this API needs the token: send `Authorization: Bearer <token>`, or open the link with ?token= that folio serve printed (the token is in the api-token file of the library; Settings → API access shows it)',
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

/** A cookie's value from a Cookie header, or null. */
export function readCookie(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

function clip(s: string): string {
  return (s.length > 100 ? s.slice(0, 100) + '…' : s).replace(/[^\x20-\x7e]/g, '?');
}
