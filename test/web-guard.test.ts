// The web host against what a hostile page or a clumsy client sends (issue 14): request lines that URL
// parsers choke on, bodies over their limits, uploads over the cap, client mistakes that must be 4xx, and
// the headers that stop the UI from being framed. Each request is checked for its answer and for the server
// still answering afterwards. Raw sockets send what a client library would refuse to.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  ApiError,
  MAX_GENERATE_TOKENS,
  MAX_JSON_BODY_BYTES,
  UPLOAD_FILE_NAME_HEADER,
  UPLOAD_ROUTE,
} from '../electron/api/contract.ts';
import { Dispatcher, EventBus, type Handlers } from '../electron/api/dispatcher.ts';
import type { OpenAiBackend } from '../electron/api/openai.ts';
import { startWebHost, type WebHost } from '../electron/web/server.ts';
import { rawRequest } from './helpers/raw-http.ts';

const dir = mkdtempSync(join(tmpdir(), 'folio-web-guard-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
mkdirSync(join(dir, 'ui'), { recursive: true });
writeFileSync(join(dir, 'ui', 'index.html'), '<!doctype html><title>Folio</title>');
const uploadDir = join(dir, 'tmp');

const apiToken = 'guard-token-0123456789abcdef';
const handlers = { 'settings.get': () => ({ ok: 'not settings' }) } as unknown as Handlers;
const dispatcher = new Dispatcher(handlers, new EventBus());

let completions = 0;
const backend: OpenAiBackend = {
  async listModels() {
    return [{ id: 'tiny', created: 0, owned_by: 'folio' }];
  },
  async complete(req) {
    completions++;
    if (req.model === 'unsupported') throw new ApiError('UNSUPPORTED_MODEL', 'tiny-bert: the engine does not run bert');
    return { model: req.model, text: 'hi', finishReason: 'stop', promptTokens: 1, completionTokens: 1 };
  },
};

/** What importUpload received: the bytes of the temporary file, which it then owns and removes. */
const received: { fileName: string; bytes: Buffer }[] = [];
const UPLOAD_CAP = 256 * 1024;

async function withHost(fn: (host: WebHost) => Promise<void>) {
  const host = await startWebHost({
    dispatcher,
    apiToken,
    openai: backend,
    staticDir: join(dir, 'ui'),
    uploads: {
      dir: uploadDir,
      maxBytes: UPLOAD_CAP,
      async importUpload(fileName, tempPath) {
        received.push({ fileName, bytes: readFileSync(tempPath) });
        rmSync(tempPath);
        if (fileName === 'refused.txt') throw new ApiError('NO_MODEL', 'choose a model first');
        return { documentId: 'd1', taskId: 't1' };
      },
    },
  });
  try {
    await fn(host);
  } finally {
    await host.close();
  }
}

const head = (host: WebHost, line: string, headers: Record<string, string | number> = {}) =>
  [
    line,
    `host: 127.0.0.1:${host.port}`,
    'connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ].join('\r\n');

async function assertAlive(host: WebHost) {
  const r = await rawRequest(host.port, head(host, 'GET /api/health HTTP/1.1'));
  assert.equal(r.status, 200, 'the server still answers');
}

const MALFORMED_TARGETS = ['//[x', '//[::1', '/%', '/%E0%A4%A', 'http://[x/', '//[x/api/call', '/assets/%zz.js'];

test('malformed request targets are 400, on plain requests and on WebSocket upgrades, and the server lives on', async () => {
  await withHost(async (host) => {
    for (const target of MALFORMED_TARGETS) {
      const r = await rawRequest(host.port, head(host, `GET ${target} HTTP/1.1`));
      assert.equal(r.status, 400, `GET ${target}`);
      assert.equal(JSON.parse(r.body).error.code, 'BAD_URL', `GET ${target}: ${r.body}`);
      await assertAlive(host);
      const up = await rawRequest(
        host.port,
        head(host, `GET ${target} HTTP/1.1`, {
          upgrade: 'websocket',
          connection: 'Upgrade',
          'sec-websocket-version': 13,
          'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
          authorization: `Bearer ${apiToken}`,
        }).replace('connection: close\r\n', ''),
      );
      assert.equal(up.status, 400, `upgrade to ${target}`);
      await assertAlive(host);
    }
    // POST too, and with the token: the target is read before anything else.
    const post = await rawRequest(
      host.port,
      head(host, 'POST //[x HTTP/1.1', {
        authorization: `Bearer ${apiToken}`,
        'content-type': 'application/json',
        'content-length': 2,
      }),
      Buffer.from('{}'),
    );
    assert.equal(post.status, 400);
    await assertAlive(host);
  });
});

test('a JSON body over the limit is refused with 413 while it arrives, declared or streamed', async () => {
  await withHost(async (host) => {
    const json = { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' };
    // Declared too long: refused on the headers.
    const declared = await rawRequest(
      host.port,
      head(host, 'POST /api/call HTTP/1.1', { ...json, 'content-length': 600 * 2 ** 20 }),
    );
    assert.equal(declared.status, 413);
    assert.match(JSON.parse(declared.body).error.message, /larger than the limit of 4 MiB/);
    await assertAlive(host);
    // Streamed without a length: refused once the bytes pass the limit, without waiting for the end.
    function* pieces() {
      yield Buffer.from(
        `${(MAX_JSON_BODY_BYTES + 2 ** 20).toString(16)}\r\n{"method":"settings.get","params":{"pad":"`,
      );
      const piece = Buffer.alloc(64 * 1024, 'x');
      for (let sent = 0; sent < MAX_JSON_BODY_BYTES + 2 ** 20 - 64; sent += piece.length) yield piece;
    }
    const streamed = await rawRequest(
      host.port,
      head(host, 'POST /api/call HTTP/1.1', { ...json, 'transfer-encoding': 'chunked' }),
      pieces(),
    );
    assert.equal(streamed.status, 413);
    await assertAlive(host);
    // The same on /v1, in OpenAI's error shape.
    const v1 = await rawRequest(
      host.port,
      head(host, 'POST /v1/chat/completions HTTP/1.1', { ...json, 'content-length': MAX_JSON_BODY_BYTES + 1 }),
    );
    assert.equal(v1.status, 413);
    assert.equal(JSON.parse(v1.body).error.type, 'invalid_request_error');
    assert.equal(completions, 0);
    await assertAlive(host);
  });
});

test('uploads: streamed to a temporary file, 413 over the cap with no file left, clear errors', async () => {
  await withHost(async (host) => {
    const upload = (name: string | null, body: Buffer, extra: Record<string, string> = {}) =>
      fetch(host.url + UPLOAD_ROUTE, {
        method: 'POST',
        body: new Uint8Array(body),
        headers: {
          authorization: `Bearer ${apiToken}`,
          'content-type': 'application/octet-stream',
          ...(name === null ? {} : { [UPLOAD_FILE_NAME_HEADER]: encodeURIComponent(name) }),
          ...extra,
        },
      });
    const story = Buffer.from('Once upon a time there was a kite.');
    const ok = await upload('Lily & the kite ü.txt', story);
    assert.equal(ok.status, 200);
    assert.deepEqual(await ok.json(), { result: { documentId: 'd1', taskId: 't1' } });
    assert.equal(received.at(-1)!.fileName, 'Lily & the kite ü.txt');
    assert.deepEqual(received.at(-1)!.bytes, story, 'the importer got the exact bytes');
    // Over the cap, declared: refused before a byte is stored.
    const big = await upload('big.pdf', Buffer.alloc(UPLOAD_CAP + 1));
    assert.equal(big.status, 413);
    assert.match((await big.json()).error.message, /big\.pdf is larger than the limit of 256 KiB/);
    // Over the cap, streamed (no length): refused as it passes the cap, the partial file removed.
    function* chunks() {
      yield Buffer.from(`${(4 * UPLOAD_CAP).toString(16)}\r\n`);
      for (let i = 0; i < 64; i++) yield Buffer.alloc(UPLOAD_CAP / 16, 1);
    }
    const streamed = await rawRequest(
      host.port,
      head(host, `POST ${UPLOAD_ROUTE} HTTP/1.1`, {
        authorization: `Bearer ${apiToken}`,
        'content-type': 'application/octet-stream',
        [UPLOAD_FILE_NAME_HEADER]: 'streamed.pdf',
        'transfer-encoding': 'chunked',
      }),
      chunks(),
    );
    assert.equal(streamed.status, 413);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(readdirSync(uploadDir), [], 'no temporary file is left');
    // What the importer refuses is answered, and its file removed.
    const refused = await upload('refused.txt', story);
    assert.equal(refused.status, 422);
    assert.equal((await refused.json()).error.code, 'NO_MODEL');
    assert.deepEqual(readdirSync(uploadDir), []);
    // Malformed requests.
    assert.equal((await upload(null, story)).status, 400, 'no file name');
    assert.equal(
      (await upload('x', story, { [UPLOAD_FILE_NAME_HEADER]: '%E0%A4%A' })).status,
      400,
      'a malformed escape',
    );
    assert.equal(
      (await upload('a.txt', story, { 'content-type': 'text/plain' })).status,
      415,
      'a page could post text/plain',
    );
    assert.equal((await upload('a.txt', story, { 'content-type': 'multipart/form-data; boundary=x' })).status, 415);
    assert.equal(received.length, 2, 'nothing else reached the importer');
    await assertAlive(host);
  });
});

test('client mistakes are 4xx: max_tokens over the engine limit, bad escapes, unsupported models', async () => {
  await withHost(async (host) => {
    const post = (body: object) =>
      fetch(host.url + '/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' },
      });
    const messages = [{ role: 'user', content: 'hi' }];
    const before = completions;
    for (const key of ['max_tokens', 'max_completion_tokens']) {
      const r = await post({ model: 'tiny', messages, [key]: 2 ** 25 });
      assert.equal(r.status, 400, key);
      const e = (await r.json()).error;
      assert.equal(e.param, key);
      assert.match(e.message, new RegExp(`at most ${MAX_GENERATE_TOKENS} tokens`));
    }
    assert.equal((await post({ model: 'tiny', messages, seed: -1 })).status, 400);
    assert.equal(completions, before, 'nothing reached the engine');
    assert.equal((await post({ model: 'tiny', messages, max_tokens: MAX_GENERATE_TOKENS })).status, 200);
    const unsupported = await post({ model: 'unsupported', messages });
    assert.equal(unsupported.status, 422);
    assert.equal((await unsupported.json()).error.type, 'invalid_request_error');
    const badEscape = await rawRequest(host.port, head(host, 'GET /docs/%E0%A4%A HTTP/1.1'));
    assert.equal(badEscape.status, 400);
    const call = await fetch(host.url + '/api/call', {
      method: 'POST',
      body: '{"method":"settings.get"}',
      headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' },
    });
    assert.equal(call.status, 500, 'a result outside the contract is our bug, and says so');
  });
});

test('no answer can be framed or sniffed: frame-ancestors, X-Frame-Options, nosniff everywhere', async () => {
  await withHost(async (host) => {
    const answers = [
      await fetch(host.url + '/'),
      await fetch(host.url + '/chats/1'),
      await fetch(host.url + '/api/health'),
      await fetch(host.url + '/api/call', { method: 'POST' }),
      await fetch(host.url + '/v1/models', { headers: { authorization: `Bearer ${apiToken}` } }),
      await fetch(host.url + '/v1/models'),
    ];
    for (const r of answers) {
      assert.equal(r.headers.get('content-security-policy'), "frame-ancestors 'none'", r.url);
      assert.equal(r.headers.get('x-frame-options'), 'DENY', r.url);
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff', r.url);
    }
    const bad = await rawRequest(host.port, head(host, 'GET //[x HTTP/1.1'));
    assert.equal(bad.headers['x-frame-options'], 'DENY');
    assert.ok(existsSync(uploadDir));
  });
});
