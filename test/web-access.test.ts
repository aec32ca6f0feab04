// Who may use the web host (issue 14 item 8): pages of other sites and of other localhost ports are
// refused on every route, /v1 included; JSON endpoints refuse the content types a page may post without a
// preflight; programs need the bearer token; the allow-list (FOLIO_ORIGINS) gets proper CORS; WebSocket
// upgrades follow the same rules. The token file: made once, kept with the user's rights only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';

import { Dispatcher, EventBus, type Handlers } from '../electron/api/dispatcher.ts';
import { connectApi } from '../electron/api/ws-client.ts';
import { normalizeOrigin, parseOriginList } from '../electron/web/access.ts';
import { API_TOKEN_ENV, API_TOKEN_FILE, resolveApiToken } from '../electron/web/api-token.ts';
import type { OpenAiBackend } from '../electron/web/openai.ts';
import { startWebHost, type WebHost } from '../electron/web/server.ts';

const dir = mkdtempSync(join(tmpdir(), 'folio-web-access-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

const apiToken = 'access-token-0123456789abcdef';
let systemPrompt = '';
const handlers = {
  'settings.get': () => ({ systemPrompt }),
  'settings.update': (p: { systemPrompt?: string }) => (
    (systemPrompt = p.systemPrompt ?? systemPrompt), { systemPrompt }
  ),
} as unknown as Handlers;
// The stand-in results are not Settings: the dispatcher refuses them (500), but the handler ran (the point).
const dispatcher = new Dispatcher(handlers, new EventBus());

let generations = 0;
const backend: OpenAiBackend = {
  async listModels() {
    return [{ id: 'tiny', created: 0, owned_by: 'folio' }];
  },
  async complete(req) {
    generations++;
    return { model: req.model, text: 'hi', finishReason: 'stop', promptTokens: 1, completionTokens: 1 };
  },
};

const ALLOWED = 'http://localhost:5173';

async function withHost(fn: (host: WebHost, own: string) => Promise<void>) {
  const host = await startWebHost({
    dispatcher,
    apiToken,
    openai: backend,
    allowedOrigins: parseOriginList(`${ALLOWED}, chrome-extension://abcdefgh`),
  });
  try {
    await fn(host, `http://127.0.0.1:${host.port}`);
  } finally {
    await host.close();
  }
}

const completion = JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }] });
const call = JSON.stringify({ method: 'settings.update', params: { systemPrompt: 'pwned' } });

function post(host: WebHost, path: string, body: string, headers: Record<string, string>) {
  return fetch(host.url + path, { method: 'POST', body, headers });
}

test('cross-site posts are refused on /v1 and /api/call: no generation runs, nothing changes', async () => {
  await withHost(async (host, own) => {
    for (const [path, body] of [
      ['/v1/chat/completions', completion],
      ['/api/call', call],
    ]) {
      // What a page on another site can send without a preflight (fetch no-cors, a form).
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
        const foreign = await post(host, path, body, { origin: 'https://evil.example', 'content-type': type });
        assert.equal(foreign.status, 403, `${path} ${type} from another site`);
        const otherPort = await post(host, path, body, { origin: 'http://127.0.0.1:1', 'content-type': type });
        assert.equal(otherPort.status, 403, `${path} ${type} from another localhost port`);
        // Even from the app's own origin, a body a page could have forged is not accepted as JSON.
        const ownPlain = await post(host, path, body, { origin: own, 'content-type': type });
        assert.equal(ownPlain.status, 415, `${path} ${type} from the app itself`);
        assert.match(await ownPlain.text(), /application\/json/);
      }
      const noType = await post(host, path, body, { origin: own });
      assert.equal(noType.status, 415, `${path} without a Content-Type`);
      assert.equal(
        (await post(host, path, body, { origin: 'null', 'content-type': 'application/json' })).status,
        403,
        'a sandboxed page',
      );
      assert.equal(
        (
          await post(host, path, body, {
            origin: 'https://evil.example',
            'content-type': 'application/json',
            authorization: `Bearer ${apiToken}`,
          })
        ).status,
        403,
        'a foreign page holding the token is still a foreign page',
      );
    }
    assert.equal(generations, 0, 'no generation ran');
    assert.equal(systemPrompt, '', 'the system prompt is unchanged');
    // OpenAI-shaped refusals on /v1.
    const v1 = await post(host, '/v1/chat/completions', completion, {
      origin: 'https://evil.example',
      'content-type': 'application/json',
    });
    assert.equal((await v1.json()).error.type, 'invalid_request_error');
  });
});

test("programs need the bearer token; the app's own pages do not", async () => {
  await withHost(async (host, own) => {
    const json = { 'content-type': 'application/json' };
    const none = await post(host, '/v1/chat/completions', completion, json);
    assert.equal(none.status, 401);
    assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer/);
    assert.equal((await none.json()).error.code, 'invalid_api_key');
    assert.equal((await fetch(host.url + '/v1/models')).status, 401, 'an <img> of /v1/models gets nothing');
    assert.equal((await post(host, '/api/call', call, json)).status, 401);
    assert.equal(
      (await post(host, '/api/call', call, { ...json, authorization: 'Bearer wrong-token-0123456789' })).status,
      401,
    );
    assert.equal(
      (await post(host, '/api/call', call, { ...json, origin: own, authorization: 'Bearer wrong-token-0123456789' }))
        .status,
      401,
      'a wrong token is wrong anywhere',
    );
    assert.equal(generations, 0);
    assert.equal(systemPrompt, '');
    const withToken = await post(host, '/v1/chat/completions', completion, {
      ...json,
      authorization: `Bearer ${apiToken}`,
    });
    assert.equal(withToken.status, 200);
    assert.equal((await withToken.json()).choices[0].message.content, 'hi');
    assert.equal(
      (await fetch(host.url + '/v1/models', { headers: { authorization: `bearer ${apiToken}` } })).status,
      200,
    );
    // The browser UI: its posts carry its own Origin (any loopback name on this port), its GETs Sec-Fetch-Site.
    for (const origin of [own, `http://localhost:${host.port}`, `http://[::1]:${host.port}`])
      assert.equal((await post(host, '/v1/chat/completions', completion, { ...json, origin })).status, 200, origin);
    assert.equal((await fetch(host.url + '/v1/models', { headers: { 'sec-fetch-site': 'same-origin' } })).status, 200);
    assert.equal((await fetch(host.url + '/v1/models', { headers: { 'sec-fetch-site': 'cross-site' } })).status, 401);
    // Harmless reads need nothing.
    assert.equal((await fetch(host.url + '/api/health')).status, 200);
    assert.equal((await fetch(host.url + '/')).status, 200);
    assert.equal(
      (await fetch(host.url + '/', { headers: { origin: 'https://evil.example' } })).status,
      403,
      'but not for another site',
    );
    assert.equal(generations, 4);
  });
});

test('allow-listed origins get CORS; preflights from others get none', async () => {
  await withHost(async (host) => {
    const preflight = (origin: string) =>
      fetch(host.url + '/v1/chat/completions', {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type, authorization',
        },
      });
    const ok = await preflight(ALLOWED);
    assert.equal(ok.status, 204);
    assert.equal(ok.headers.get('access-control-allow-origin'), ALLOWED);
    assert.match(ok.headers.get('access-control-allow-headers') ?? '', /content-type/);
    const evil = await preflight('https://evil.example');
    assert.equal(evil.status, 403);
    assert.equal(evil.headers.get('access-control-allow-origin'), null);
    const otherPort = await preflight('http://localhost:5174');
    assert.equal(otherPort.status, 403);
    const r = await post(host, '/v1/chat/completions', completion, {
      origin: ALLOWED,
      'content-type': 'application/json',
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('access-control-allow-origin'), ALLOWED);
    assert.equal(
      (
        await post(host, '/v1/chat/completions', completion, {
          origin: 'chrome-extension://abcdefgh',
          'content-type': 'application/json',
        })
      ).status,
      200,
    );
    assert.throws(() => parseOriginList('localhost:3000'), /not an origin/);
    assert.equal(normalizeOrigin('HTTP://LocalHost:80/'), 'http://localhost');
  });
});

test('WebSocket upgrades: Origin checked, the token needed without one', async () => {
  await withHost(async (host, own) => {
    const status = (headers: Record<string, string>) =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(`ws://127.0.0.1:${host.port}/api/ws`, { headers });
        ws.on('open', () => (ws.close(), resolve(101)));
        ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.on('error', () => {});
      });
    assert.equal(await status({ origin: 'https://evil.example' }), 403);
    assert.equal(await status({ origin: 'http://localhost:1' }), 403, 'a page on another localhost port');
    assert.equal(await status({}), 401, 'a program without the token');
    assert.equal(await status({ authorization: 'Bearer nope-nope-nope-nope' }), 401);
    assert.equal(await status({ origin: own }), 101, 'the app itself');
    assert.equal(await status({ origin: ALLOWED }), 101);
    assert.equal(await status({ authorization: `Bearer ${apiToken}` }), 101);
    const api = connectApi(`ws://127.0.0.1:${host.port}/api/ws`, WebSocket as never, { token: apiToken });
    try {
      await assert.rejects(api.call('settings.get', {}), /outside the contract/, 'the call reached the dispatcher');
    } finally {
      api.close();
    }
  });
});

test('the token: made once with random bytes, stored for the user only; --token and the variable override it', () => {
  const lib = join(dir, 'library');
  const first = resolveApiToken({ dataDir: lib, env: {} });
  assert.match(first.token, /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url');
  assert.equal(first.source, join(lib, API_TOKEN_FILE));
  assert.equal(statSync(first.source).mode & 0o777, 0o600);
  assert.equal(resolveApiToken({ dataDir: lib, env: {} }).token, first.token, 'the same token next time');
  assert.notEqual(resolveApiToken({ dataDir: join(dir, 'other'), env: {} }).token, first.token);
  assert.deepEqual(resolveApiToken({ dataDir: lib, flag: 'from-the-flag-123456', env: {} }), {
    token: 'from-the-flag-123456',
    source: '--token',
  });
  assert.equal(
    resolveApiToken({ dataDir: lib, env: { [API_TOKEN_ENV]: 'from-the-environment' } }).token,
    'from-the-environment',
  );
  assert.throws(() => resolveApiToken({ dataDir: lib, flag: 'short' }), /16 to 512 visible ASCII/);
  writeFileSync(first.source, 'has spaces in it, so it is no token\n');
  assert.throws(() => resolveApiToken({ dataDir: lib, env: {} }), /16 to 512/);
});
