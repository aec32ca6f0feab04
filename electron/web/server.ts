// The local web host: the built renderer, the app's API over HTTP and WebSocket, and the
// OpenAI-compatible endpoints, on 127.0.0.1 only. The same Dispatcher serves the Electron shell over IPC.
//   POST /api/call            { method, params } -> { result } | { error }      (application/json)
//   POST /api/upload          a document's raw bytes -> { result: { documentId, taskId } } | { error }
//                             (application/octet-stream; the file name URI-encoded in x-folio-file-name)
//   GET  /api/documents/:id/file   a document's imported original (404 when it has none); .../html: a Word
//                             document's HTML
//   GET  /api/ws              WebSocket: { type: 'call', id, method, params } -> { type: 'result' | 'error', id, ... };
//                             the server pushes { type: 'event', event, payload }
//   GET  /api/health          { ok: true }
//   GET  /api/session         { signedIn }: whether the caller holds the session cookie or the token; POST
//                             { token }: signs the browser in (the cookie), as opening /?token=... does (access.ts)
//   GET  /v1/models, POST /v1/chat/completions   OpenAI-compatible
//   GET  /*                   the renderer (index.html for unknown paths, so client-side routes work)
// Who may call what is access.ts's; every request line, header and body is read so that nothing a client
// sends can throw outside a handler (request-guard.ts, body.ts, upload.ts).
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createReadStream, existsSync, rmSync, statSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';

import {
  ApiError,
  parseDocumentFileRoute,
  type DocumentFilePart,
  MAX_JSON_BODY_BYTES,
  methods,
  SESSION_ROUTE,
  UPLOAD_ROUTE,
} from '../api/contract.ts';
import { toApiError, type Dispatcher } from '../api/dispatcher.ts';
import type { OpenAiBackend } from '../api/openai.ts';
import { checkPaths, type PathPolicy } from '../api/path-policy.ts';
import { AccessPolicy, type Caller, corsHeaders, TOKEN_QUERY_PARAM } from './access.ts';
import { AllowedFolders } from './allowed-folders.ts';
import { discardBody, readJsonBody } from './body.ts';
import { HttpError, statusOf } from './http-error.ts';
import { handleChatCompletions, handleModels, OpenAiError, sendOpenAiError } from './openai.ts';
import { decodePath, parseTarget, securityHeaderLines, setSecurityHeaders } from './request-guard.ts';
import { prepareUploadDir, receiveUpload } from './upload.ts';

export interface UploadOptions {
  /** Where uploads are streamed to (a folder of the library, so they are on the same disk as the documents). */
  dir: string;
  /** Largest upload in bytes. */
  maxBytes: number;
  /** Imports an uploaded file; it owns the temporary file from then on (and removes it when done). */
  importUpload(
    fileName: string,
    tempPath: string,
    o: { keepDuplicate: boolean },
  ): Promise<{ documentId: string; taskId: string }>;
}

/** A document's stored file: where it is, and the media type it is served with. */
export interface StoredDocumentFile {
  path: string;
  type: string;
}

export interface WebHostOptions {
  dispatcher: Dispatcher;
  openai?: OpenAiBackend;
  /** The built renderer (index.html and assets); when missing, / explains how to build it. */
  staticDir?: string;
  port?: number; // 0: any free port
  /** The bearer token programs must present (api-token.ts); the app's own pages need none. */
  apiToken: string;
  /** Origins besides the app's own allowed to call the API from a browser (FOLIO_ORIGINS; `*`: any). */
  allowedOrigins?: string[];
  /** Which files and folders a call may name (allowed-folders.ts); default: none. */
  paths?: PathPolicy;
  /** Largest JSON body and WebSocket message (default MAX_JSON_BODY_BYTES). */
  maxBodyBytes?: number;
  /** POST /api/upload; without it, the route answers 404. */
  uploads?: UploadOptions;
  /** GET /api/documents/:id/:part: a document's stored file, null when it has none (404). */
  documentFile?: (documentId: string, part: DocumentFilePart) => StoredDocumentFile | null;
}

/** How long the requests under way may take to finish once the host stops (ms). */
export const STOP_GRACE_MS = 3000;

export interface WebHost {
  url: string;
  /** The link that signs a browser in: the UI's address with ?token=, for the user's eyes only. */
  signInUrl: string;
  port: number;
  server: Server;
  /**
   * Stops: takes no new connection at once, lets the requests under way finish for up to `graceMs` (default
   * STOP_GRACE_MS; whoever runs them should cancel them first), then closes every connection and socket.
   */
  close(o?: { graceMs?: number }): Promise<void>;
}

const types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.wasm': 'application/wasm',
  '.map': 'application/json',
};

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers });
  res.end(JSON.stringify(body));
}

/** The API's error body for anything thrown while answering. */
function apiErrorBody(e: unknown): { status: number; body: unknown } {
  if (e instanceof HttpError) return { status: e.status, body: { error: { code: e.code, message: e.message } } };
  const err = toApiError(e);
  return { status: statusOf(err), body: { error: err.toJSON() } };
}

/** The same in OpenAI's shape, for /v1. */
function toOpenAiError(e: unknown): unknown {
  if (!(e instanceof HttpError)) return e;
  const code = e.status === 401 ? 'invalid_api_key' : e.code.toLowerCase();
  return new OpenAiError(e.status, e.message, e.status >= 500 ? 'server_error' : 'invalid_request_error', null, code);
}

/** Routes the API protects; everything else a GET can reach (the UI, /api/health) is harmless to read. */
const isProtected = (pathname: string) =>
  pathname === '/v1' ||
  pathname.startsWith('/v1/') ||
  (pathname.startsWith('/api/') && pathname !== '/api/health' && pathname !== SESSION_ROUTE);

/** The page a wrong token link answers with: the UI cannot sign in with it. */
const WRONG_LINK_PAGE =
  '<!doctype html><meta charset="utf-8"><title>Folio</title><p>This link\'s token is not this server\'s. ' +
  'Open the link <code>folio serve</code> printed when it started (its token is in the <code>api-token</code> file of the library).</p>';

/** The same address without its token parameter (where a signed-in browser is sent on). */
function withoutToken(pathname: string, query: URLSearchParams): string {
  const rest = new URLSearchParams(query);
  rest.delete(TOKEN_QUERY_PARAM);
  const q = rest.toString();
  return pathname + (q ? `?${q}` : '');
}

export async function startWebHost(o: WebHostOptions): Promise<WebHost> {
  const limit = o.maxBodyBytes ?? MAX_JSON_BODY_BYTES;
  const staticRoot = o.staticDir ? resolve(o.staticDir) : undefined;
  const access = new AccessPolicy({ token: o.apiToken, allowedOrigins: o.allowedOrigins });
  if (o.uploads) prepareUploadDir(o.uploads.dir);
  let port = o.port ?? 0;
  /** Aborted when close() begins: running answers end. */
  const stopping = new AbortController();
  const paths = o.paths ?? new AllowedFolders([]);
  /** Every call from either transport: the paths it names checked (path-policy.ts), then dispatched. */
  const dispatch = async (method: string, params: unknown) =>
    o.dispatcher.dispatch(method, await checkPaths(method, params, paths, o.dispatcher));

  const serveStatic = (req: IncomingMessage, res: ServerResponse, pathname: string) => {
    if (!staticRoot || !existsSync(join(staticRoot, 'index.html'))) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(
        '<!doctype html><title>Folio</title><p>The Folio API is running here. The user interface is not built: run <code>npm run build</code>.</p>',
      );
      return;
    }
    let file = normalize(join(staticRoot, decodePath(pathname)));
    if (file !== staticRoot && !file.startsWith(staticRoot + sep)) throw new HttpError(403, 'forbidden');
    let isFile = false;
    try {
      isFile = statSync(file).isFile();
    } catch {
      // missing, or a name the file system refuses (too long...): the app's index.html answers
    }
    if (!isFile) file = join(staticRoot, 'index.html');
    res.writeHead(200, {
      'content-type': types[extname(file)] ?? 'application/octet-stream',
      'cache-control': file.endsWith('index.html') ? 'no-cache' : 'public, max-age=31536000, immutable',
    });
    if (req.method === 'HEAD') return res.end();
    createReadStream(file)
      .on('error', () => res.destroy())
      .pipe(res);
  };

  const handleOpenAi = async (req: IncomingMessage, res: ServerResponse, pathname: string) => {
    if (!o.openai) throw new OpenAiError(404, 'the OpenAI-compatible API is not enabled');
    if (pathname === '/v1/models' && req.method === 'GET') return await handleModels(res, o.openai);
    if (pathname === '/v1/chat/completions' && req.method === 'POST') {
      const body = await readJsonBody(req, limit);
      return await handleChatCompletions(req, res, body, o.openai, stopping.signal);
    }
    throw new OpenAiError(
      404,
      `unknown endpoint ${req.method} ${pathname}`,
      'invalid_request_error',
      null,
      'unknown_url',
    );
  };

  const handleCall = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST') throw new HttpError(405, 'use POST');
    const body = (await readJsonBody(req, limit)) as { method?: unknown; params?: unknown };
    if (typeof body !== 'object' || body === null || typeof body.method !== 'string')
      throw new ApiError('BAD_REQUEST', 'the body must be { "method": string, "params": object }');
    sendJson(res, 200, { result: await dispatch(body.method, body.params) });
  };

  // GET: is this caller signed in; POST { token }: sign the browser in.
  const handleSession = async (req: IncomingMessage, res: ServerResponse, caller: Caller) => {
    if (req.method === 'GET') return sendJson(res, 200, { signedIn: caller.via !== 'anonymous' });
    if (req.method !== 'POST') throw new HttpError(405, 'use GET or POST');
    const body = (await readJsonBody(req, limit)) as { token?: unknown };
    if (typeof body?.token !== 'string' || !access.isToken(body.token.trim()))
      throw new HttpError(401, 'that is not the API token of this server', 'UNAUTHORIZED');
    sendJson(res, 200, { ok: true }, { 'set-cookie': access.sessionCookie(req.headers) });
  };

  const handleUpload = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST') throw new HttpError(405, 'use POST');
    if (!o.uploads) throw new HttpError(404, 'uploads are not enabled on this host');
    const up = await receiveUpload(req, o.uploads.dir, o.uploads.maxBytes);
    let result: unknown;
    try {
      result = methods['documents.import'].result.parse(await o.uploads.importUpload(up.fileName, up.tempPath, up));
    } catch (e) {
      rmSync(up.tempPath, { force: true }); // refused before the importer took it
      throw e;
    }
    sendJson(res, 200, { result });
  };

  // Only a path the app core gives for a stored document's id is ever read: the request names an id, never a file.
  const handleDocumentFile = (
    req: IncomingMessage,
    res: ServerResponse,
    { documentId, part }: { documentId: string; part: DocumentFilePart },
  ) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpError(405, 'use GET');
    const file = o.documentFile?.(documentId, part) ?? null;
    let size = -1;
    try {
      if (file) size = statSync(file.path).size;
    } catch {
      // removed meanwhile: a 404 like any document without its file
    }
    if (!file || size < 0)
      throw new HttpError(
        404,
        `document ${documentId} has no stored file (unknown, or imported before originals were kept)`,
      );
    res.writeHead(200, {
      'content-type': file.type,
      'content-length': String(size),
      'cache-control': 'private, no-cache',
    });
    if (req.method === 'HEAD') return res.end();
    createReadStream(file.path)
      .on('error', () => res.destroy())
      .pipe(res);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    setSecurityHeaders(res);
    let openAiShape = false;
    try {
      const { pathname, searchParams } = parseTarget(req.url);
      openAiShape = pathname === '/v1' || pathname.startsWith('/v1/');
      if (req.method === 'OPTIONS') {
        res.writeHead(204, access.preflight(req.headers));
        return res.end();
      }
      const caller = access.authorize(req.headers, isProtected(pathname) ? 'protected' : 'open');
      if (caller.corsOrigin) for (const [k, v] of Object.entries(corsHeaders(caller.corsOrigin))) res.setHeader(k, v);
      if (openAiShape) return await handleOpenAi(req, res, pathname);
      if (pathname === '/api/health') return sendJson(res, 200, { ok: true });
      if (pathname === SESSION_ROUTE) return await handleSession(req, res, caller);
      if (pathname === '/api/call') return await handleCall(req, res);
      if (pathname === UPLOAD_ROUTE) return await handleUpload(req, res);
      const fileOf = parseDocumentFileRoute(pathname);
      if (fileOf !== null) return handleDocumentFile(req, res, fileOf);
      if (pathname.startsWith('/api/')) throw new HttpError(404, `unknown endpoint ${pathname}`);
      if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpError(405, 'method not allowed');
      const linkToken = searchParams.get(TOKEN_QUERY_PARAM);
      if (linkToken !== null) {
        // The token link: a session cookie, then the same page without the token (out of the address bar).
        if (!access.isToken(linkToken)) {
          res.writeHead(401, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
          return res.end(WRONG_LINK_PAGE);
        }
        res.writeHead(303, {
          location: withoutToken(pathname, searchParams),
          'set-cookie': access.sessionCookie(req.headers),
          'cache-control': 'no-store',
        });
        return res.end();
      }
      serveStatic(req, res, pathname);
    } catch (e) {
      // A body we did not read (refused early, or over its limit) is let through briefly, then cut off.
      if (!req.complete) discardBody(req, res, limit);
      if (res.headersSent) return void res.end();
      const extra: Record<string, string> =
        e instanceof HttpError && e.status === 401 ? { 'www-authenticate': 'Bearer realm="folio"' } : {};
      for (const [k, v] of Object.entries(extra)) res.setHeader(k, v);
      if (openAiShape) return sendOpenAiError(res, toOpenAiError(e));
      const { status, body } = apiErrorBody(e);
      sendJson(res, status, body);
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      // Only a failure to write the error answer itself gets here: drop the connection, keep serving.
      res.destroy();
    });
  });

  // WebSocket: calls and the event stream.
  const wss = new WebSocketServer({ noServer: true, maxPayload: limit });
  const sockets = new Set<WebSocket>();
  const unsubscribe = o.dispatcher.bus.subscribe((event, payload) => {
    const msg = JSON.stringify({ type: 'event', event, payload });
    for (const ws of sockets) if (ws.readyState === ws.OPEN) ws.send(msg);
  });
  const refuseUpgrade = (socket: Duplex, e: unknown) => {
    const { status, body } = apiErrorBody(e);
    const text = JSON.stringify(body);
    socket.on('error', () => {});
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nconnection: close\r\ncontent-type: application/json\r\n` +
        `content-length: ${Buffer.byteLength(text)}\r\n${securityHeaderLines()}\r\n${text}`,
    );
    setTimeout(() => socket.destroy(), 1000).unref();
  };
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    try {
      const { pathname } = parseTarget(req.url);
      if (pathname !== '/api/ws') throw new HttpError(404, `no WebSocket at ${pathname}: use /api/ws`);
      access.authorize(req.headers, 'protected');
    } catch (e) {
      return refuseUpgrade(socket, e);
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      ws.on('close', () => sockets.delete(ws));
      ws.on('error', () => ws.terminate());
      ws.on('message', async (data) => {
        let msg: { type?: unknown; id?: unknown; method?: unknown; params?: unknown };
        try {
          msg = JSON.parse(String(data));
        } catch {
          return ws.send(
            JSON.stringify({ type: 'error', id: null, error: { code: 'BAD_REQUEST', message: 'not JSON' } }),
          );
        }
        const id = typeof msg?.id === 'string' || typeof msg?.id === 'number' ? msg.id : null;
        if (msg?.type !== 'call' || typeof msg.method !== 'string' || id === null)
          return ws.send(
            JSON.stringify({
              type: 'error',
              id,
              error: { code: 'BAD_REQUEST', message: 'expected { type: "call", id, method, params }' },
            }),
          );
        try {
          const result = await dispatch(msg.method, msg.params);
          if (ws.readyState === ws.OPEN) ws.send(JSON.stringify({ type: 'result', id, result }));
        } catch (e) {
          if (ws.readyState === ws.OPEN) ws.send(JSON.stringify({ type: 'error', id, error: toApiError(e).toJSON() }));
        }
      });
    });
  });

  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(port, '127.0.0.1', () => ok());
  });
  port = (server.address() as { port: number }).port;
  const url = `http://127.0.0.1:${port}`;
  let closing: Promise<void> | null = null;
  return {
    url,
    signInUrl: `${url}/?${TOKEN_QUERY_PARAM}=${encodeURIComponent(o.apiToken)}`,
    port,
    server,
    close({ graceMs = STOP_GRACE_MS } = {}) {
      closing ??= (async () => {
        // No new connection from here on; connections idle between requests are closed now (server.close).
        const drained = new Promise<void>((ok) => server.close(() => ok()));
        stopping.abort();
        unsubscribe();
        for (const ws of sockets) ws.close(1001, 'the server is stopping');
        // What is under way gets the grace period: a client holding a half-sent request cannot hold us longer.
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([drained, new Promise((ok) => (timer = setTimeout(ok, graceMs)))]);
        clearTimeout(timer);
        server.closeAllConnections();
        for (const ws of sockets) ws.terminate();
        wss.close();
        await drained;
      })();
      return closing;
    },
  };
}
