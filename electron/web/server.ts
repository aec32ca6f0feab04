// The local web host: the built renderer, the app's API over HTTP and WebSocket, and the
// OpenAI-compatible endpoints, on 127.0.0.1 only. The same Dispatcher serves the Electron shell over IPC.
//   POST /api/call            { method, params } -> { result } | { error }
//   GET  /api/ws              WebSocket: { type: 'call', id, method, params } -> { type: 'result' | 'error', id, ... };
//                             the server pushes { type: 'event', event, payload }
//   GET  /v1/models, POST /v1/chat/completions   OpenAI-compatible
//   GET  /*                   the renderer (index.html for unknown paths, so client-side routes work)
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createReadStream, existsSync, statSync } from 'node:fs';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';

import { ApiError } from '../api/contract.ts';
import { toApiError, type Dispatcher } from '../api/dispatcher.ts';
import { handleChatCompletions, handleModels, OpenAiError, sendOpenAiError, type OpenAiBackend } from './openai.ts';

export interface WebHostOptions {
  dispatcher: Dispatcher;
  openai?: OpenAiBackend;
  /** The built renderer (index.html and assets); when missing, / explains how to build it. */
  staticDir?: string;
  port?: number;  // 0: any free port
  /** Largest request body (documents are uploaded base64-encoded in one call). */
  maxBodyBytes?: number;
}

export interface WebHost {
  url: string;
  port: number;
  server: Server;
  close(): Promise<void>;
}

const types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.json': 'application/json', '.svg': 'image/svg+xml', '.png': 'image/png',
  '.ico': 'image/x-icon', '.woff2': 'font/woff2', '.wasm': 'application/wasm', '.map': 'application/json',
};

class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

function readBody(req: IncomingMessage, limit: number): Promise<unknown> {
  return new Promise((ok, fail) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        // Answer 413 and discard the rest of the body (destroying the socket would hide the answer).
        req.removeAllListeners('data');
        req.on('data', () => {});
        fail(new HttpError(413, `the request body exceeds ${limit} bytes`));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      if (text.trim() === '') return ok({});
      try {
        ok(JSON.parse(text));
      } catch {
        fail(new HttpError(400, 'the request body is not valid JSON'));
      }
    });
    req.on('error', fail);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

/** HTTP status of an API error code. */
function statusOf(e: ApiError): number {
  if (e.code === 'BAD_REQUEST' || e.code === 'UNKNOWN_METHOD') return 400;
  if (e.code.endsWith('NOT_FOUND')) return 404;
  if (e.code === 'BUSY' || e.code === 'CONFLICT') return 409;
  return e.code === 'INTERNAL' ? 500 : 422;
}

export async function startWebHost(o: WebHostOptions): Promise<WebHost> {
  const limit = o.maxBodyBytes ?? 512 * 2 ** 20;
  const staticRoot = o.staticDir ? resolve(o.staticDir) : undefined;
  let port = o.port ?? 0;

  // Only requests addressed to this host by a loopback name are served: a web page elsewhere cannot reach
  // the API through DNS rebinding.
  const hostAllowed = (host: string | undefined) => {
    if (!host) return false;
    const name = host.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
    return name === '127.0.0.1' || name === 'localhost' || name === '::1';
  };
  const originAllowed = (origin: string | undefined) => {
    if (!origin) return true; // non-browser clients
    try {
      return hostAllowed(new URL(origin).host);
    } catch {
      return false;
    }
  };

  const serveStatic = (req: IncomingMessage, res: ServerResponse, path: string) => {
    if (!staticRoot || !existsSync(join(staticRoot, 'index.html'))) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><title>Folio</title><p>The Folio API is running here. The user interface is not built: run <code>npm run build</code>.</p>');
      return;
    }
    let file = normalize(join(staticRoot, decodeURIComponent(path)));
    if (file !== staticRoot && !file.startsWith(staticRoot + sep)) throw new HttpError(403, 'forbidden');
    if (!existsSync(file) || statSync(file).isDirectory()) file = join(staticRoot, 'index.html');
    res.writeHead(200, {
      'content-type': types[extname(file)] ?? 'application/octet-stream',
      'cache-control': file.endsWith('index.html') ? 'no-cache' : 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
    });
    if (req.method === 'HEAD') return res.end();
    createReadStream(file).pipe(res);
  };

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    try {
      if (!hostAllowed(req.headers.host)) throw new HttpError(421, 'this server answers only on 127.0.0.1 / localhost');
      if (url.pathname.startsWith('/v1/')) {
        if (!o.openai) throw new OpenAiError(404, 'the OpenAI-compatible API is not enabled');
        try {
          if (url.pathname === '/v1/models' && req.method === 'GET') return await handleModels(res, o.openai);
          if (url.pathname === '/v1/chat/completions' && req.method === 'POST') {
            const body = await readBody(req, limit).catch((e: HttpError) => {
              throw new OpenAiError(e.status ?? 400, e.message);
            });
            return await handleChatCompletions(req, res, body, o.openai);
          }
          throw new OpenAiError(404, `unknown endpoint ${req.method} ${url.pathname}`, 'invalid_request_error', null, 'unknown_url');
        } catch (e) {
          if (!res.headersSent) sendOpenAiError(res, e);
          else res.end();
          return;
        }
      }
      if (url.pathname === '/api/health') return sendJson(res, 200, { ok: true });
      if (url.pathname === '/api/call') {
        if (req.method !== 'POST') throw new HttpError(405, 'use POST');
        if (!originAllowed(req.headers.origin)) throw new HttpError(403, 'cross-origin requests are refused');
        const body = (await readBody(req, limit)) as { method?: unknown; params?: unknown };
        if (typeof body !== 'object' || body === null || typeof body.method !== 'string')
          throw new ApiError('BAD_REQUEST', 'the body must be { "method": string, "params": object }');
        try {
          return sendJson(res, 200, { result: await o.dispatcher.dispatch(body.method, body.params) });
        } catch (e) {
          const err = toApiError(e);
          return sendJson(res, statusOf(err), { error: err.toJSON() });
        }
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpError(405, 'method not allowed');
      serveStatic(req, res, url.pathname);
    } catch (e) {
      if (res.headersSent) return res.end();
      if (e instanceof ApiError) return sendJson(res, statusOf(e), { error: e.toJSON() });
      const status = e instanceof HttpError ? e.status : 500;
      sendJson(res, status, { error: { code: status === 500 ? 'INTERNAL' : 'HTTP_' + status, message: (e as Error).message } });
    }
  });

  // WebSocket: calls and the event stream.
  const wss = new WebSocketServer({ noServer: true, maxPayload: limit });
  const sockets = new Set<WebSocket>();
  const unsubscribe = o.dispatcher.bus.subscribe((event, payload) => {
    const msg = JSON.stringify({ type: 'event', event, payload });
    for (const ws of sockets) if (ws.readyState === ws.OPEN) ws.send(msg);
  });
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== '/api/ws' || !hostAllowed(req.headers.host) || !originAllowed(req.headers.origin)) {
      socket.write('HTTP/1.1 403 Forbidden\r\nconnection: close\r\n\r\n');
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      ws.on('close', () => sockets.delete(ws));
      ws.on('message', async (data) => {
        let msg: { type?: unknown; id?: unknown; method?: unknown; params?: unknown };
        try {
          msg = JSON.parse(String(data));
        } catch {
          return ws.send(JSON.stringify({ type: 'error', id: null, error: { code: 'BAD_REQUEST', message: 'not JSON' } }));
        }
        const id = typeof msg.id === 'string' || typeof msg.id === 'number' ? msg.id : null;
        if (msg.type !== 'call' || typeof msg.method !== 'string' || id === null)
          return ws.send(JSON.stringify({ type: 'error', id, error: { code: 'BAD_REQUEST', message: 'expected { type: "call", id, method, params }' } }));
        try {
          const result = await o.dispatcher.dispatch(msg.method, msg.params);
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
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    server,
    async close() {
      unsubscribe();
      for (const ws of sockets) ws.terminate();
      wss.close();
      await new Promise<void>((ok) => server.close(() => ok()));
      server.closeAllConnections?.();
    },
  };
}
