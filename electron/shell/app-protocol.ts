// The app:// protocol: the built renderer (dist/renderer) served as app://folio/..., each response with
// the Content-Security-Policy header (security.ts). A path that leaves the renderer folder (.., encoded
// separators, absolute paths, NUL bytes) is refused; a path without an extension that names no file is a
// client-side route and gets index.html. A document's stored original is served under the same path as on
// the web host (DOCUMENT_FILE_ROUTE), read only from where the app core says that document's file is.
import { readFile, realpath, stat } from 'node:fs/promises';
import { extname, isAbsolute, join, relative, resolve, sep } from 'node:path';

import { parseDocumentFileRoute, type DocumentFilePart } from '../api/contract.ts';
import type { ElectronApi } from './electron-api.ts';
import { APP_HOST, APP_SCHEME, securityHeaders } from './security.ts';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.wasm': 'application/wasm',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * Must run before the app is ready: app:// is a standard, secure scheme (so it has an origin, 'self' in the
 * CSP means it, and fetch works), with a code cache. It does not bypass the CSP and has no CORS.
 */
export function registerAppScheme(protocol: ElectronApi['protocol']): void {
  protocol.registerSchemesAsPrivileged([
    { scheme: APP_SCHEME, privileges: { standard: true, secure: true, supportFetchAPI: true, codeCache: true } },
  ]);
}

/**
 * The file under `root` that a URL path names, or null when the path tries to leave `root` or is not a
 * plain relative path. `pathname` is the URL's (still percent-encoded) path.
 */
export function resolveAppPath(root: string, pathname: string): string | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return null;
  const rel = decoded.replace(/^\/+/, '');
  if (rel === '') return join(root, 'index.html');
  if (rel.split('/').some((part) => part === '..')) return null;
  if (isAbsolute(rel) || /^[a-zA-Z]:/.test(rel)) return null;
  const full = resolve(root, rel);
  const back = relative(root, full);
  if (back === '' || back.startsWith('..') || isAbsolute(back)) return null;
  return full;
}

function text(status: number, body: string): Response {
  return new Response(body, { status, headers: { ...securityHeaders(), 'content-type': 'text/plain; charset=utf-8' } });
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/** A document's stored file: where it is, and its media type (the app core's DocumentLibrary.file). */
export interface StoredDocumentFile {
  path: string;
  type: string;
}

/** The original of a document, or 404 when the id names no document with a stored file. */
async function documentFileResponse(request: Request, file: StoredDocumentFile | null): Promise<Response> {
  try {
    if (!file) throw new Error('no file');
    const body = request.method === 'HEAD' ? null : await readFile(file.path);
    return new Response(body, {
      status: 200,
      headers: { ...securityHeaders(), 'content-type': file.type, 'cache-control': 'no-cache' },
    });
  } catch {
    return text(404, 'this document has no stored file');
  }
}

/**
 * The protocol handler: a Request for app://folio/... → the file, with the security headers. `documentFile`
 * gives a document's stored original (null: none, or the core is not ready).
 */
export function createAppProtocolHandler(
  rendererDir: string,
  documentFile: (documentId: string, part: DocumentFilePart) => StoredDocumentFile | null = () => null,
): (request: Request) => Promise<Response> {
  const root = resolve(rendererDir);
  return async (request) => {
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return text(400, 'bad request');
    }
    if (url.protocol !== `${APP_SCHEME}:` || url.host !== APP_HOST) return text(404, 'not found');
    if (request.method !== 'GET' && request.method !== 'HEAD') return text(405, 'method not allowed');
    const named = parseDocumentFileRoute(url.pathname);
    if (named) return documentFileResponse(request, documentFile(named.documentId, named.part));
    if (url.pathname.startsWith('/api/')) return text(404, 'not found');
    let file = resolveAppPath(root, url.pathname);
    if (!file) return text(403, 'forbidden');
    if (!(await isFile(file))) {
      // Client-side routes (no extension) get the app; missing assets are 404.
      if (extname(file) !== '') return text(404, 'not found');
      file = join(root, 'index.html');
      if (!(await isFile(file))) return text(404, 'the renderer is not built: run `npm run build`');
    }
    try {
      // A symbolic link inside the renderer folder must not lead outside it.
      const real = await realpath(file);
      const realRoot = await realpath(root);
      if (real !== realRoot && !real.startsWith(realRoot + sep)) return text(403, 'forbidden');
      const body = request.method === 'HEAD' ? null : await readFile(real);
      const headers = {
        ...securityHeaders(),
        'content-type': TYPES[extname(real).toLowerCase()] ?? 'application/octet-stream',
        'cache-control': 'no-cache',
      };
      return new Response(body, { status: 200, headers });
    } catch {
      return text(404, 'not found');
    }
  };
}
