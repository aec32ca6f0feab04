// Who may use the web host (issue 14 item 8, issue 38 item 1): pages of other sites and of other localhost
// ports are refused on every route, /v1 included; JSON endpoints refuse the content types a page may post
// without a preflight; every caller needs the secret, the bearer token or the session cookie the token link
// sets, and no header stands in for it (a local program sending the browser's Sec-Fetch-Site or the app's
// own Origin is refused); the allow-list (FOLIO_ORIGINS) gets proper CORS, with the token; WebSocket upgrades
// follow the same rules; imports by path only from the allowed folders, links resolved. The token file:
// made once, kept with the user's rights only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';

import { Dispatcher, EventBus, type Handlers } from '../electron/api/dispatcher.ts';
import { connectApi } from '../electron/api/ws-client.ts';
import { normalizeOrigin, parseOriginList, SESSION_COOKIE_PREFIX } from '../electron/web/access.ts';
import { AllowedFolders, parseAllowDirs } from '../electron/web/allowed-folders.ts';
import { API_TOKEN_ENV, API_TOKEN_FILE, resolveApiToken } from '../electron/web/api-token.ts';
import type { OpenAiBackend } from '../electron/api/openai.ts';
import { startWebHost, type WebHost } from '../electron/web/server.ts';

const dir = mkdtempSync(join(tmpdir(), 'folio-web-access-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

const apiToken = 'access-token-0123456789abcdef';
let systemPrompt = '';
const imported: string[] = [];
const handlers = {
  'settings.get': () => ({ systemPrompt, modelFolders: [] }),
  'server.info': () => ({ apiUrl: 'http://127.0.0.1', apiToken }),
  'documents.import': (p: { path: string }) => (imported.push(p.path), { documentId: 'd', taskId: 't' }),
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

async function withHost(fn: (host: WebHost, own: string) => Promise<void>, allowDirs: string[] = []) {
  const host = await startWebHost({
    dispatcher,
    apiToken,
    openai: backend,
    allowedOrigins: parseOriginList(`${ALLOWED}, chrome-extension://abcdefgh`),
    paths: new AllowedFolders(allowDirs),
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

/** What a browser holds after opening the token link: its Cookie header. */
async function signedIn(host: WebHost): Promise<string> {
  const r = await fetch(host.signInUrl, { redirect: 'manual' });
  assert.equal(r.status, 303);
  return (r.headers.get('set-cookie') ?? '').split(';')[0];
}

test('cross-site posts are refused on /v1 and /api/call: no generation runs, nothing changes', async () => {
  await withHost(async (host, own) => {
    const cookie = await signedIn(host);
    for (const [path, body] of [
      ['/v1/chat/completions', completion],
      ['/api/call', call],
    ]) {
      // What a page on another site can send without a preflight (fetch no-cors, a form).
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
        const foreign = await post(host, path, body, { origin: 'https://evil.example', cookie, 'content-type': type });
        assert.equal(foreign.status, 403, `${path} ${type} from another site`);
        const otherPort = await post(host, path, body, { origin: 'http://127.0.0.1:1', cookie, 'content-type': type });
        assert.equal(otherPort.status, 403, `${path} ${type} from another localhost port`);
        // Even from the app's own origin, a body a page could have forged is not accepted as JSON.
        const ownPlain = await post(host, path, body, { origin: own, cookie, 'content-type': type });
        assert.equal(ownPlain.status, 415, `${path} ${type} from the app itself`);
        assert.match(await ownPlain.text(), /application\/json/);
      }
      const noType = await post(host, path, body, { origin: own, cookie });
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

test("programs need the bearer token, the app's own pages their session: no header stands in for either", async () => {
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
    // What a browser adds by itself and a page cannot forge, any local program can send: it proves nothing.
    const info = JSON.stringify({ method: 'server.info', params: {} });
    for (const origin of [own, `http://localhost:${host.port}`, `http://[::1]:${host.port}`]) {
      assert.equal((await post(host, '/v1/chat/completions', completion, { ...json, origin })).status, 401, origin);
      assert.equal((await post(host, '/api/call', info, { ...json, origin })).status, 401, origin);
    }
    for (const site of ['same-origin', 'none']) {
      assert.equal((await fetch(host.url + '/v1/models', { headers: { 'sec-fetch-site': site } })).status, 401, site);
      const r = await post(host, '/api/call', info, { ...json, 'sec-fetch-site': site });
      assert.equal(r.status, 401, site);
      assert.doesNotMatch(await r.text(), new RegExp(apiToken), 'server.info did not answer');
    }
    // The browser UI: the token link signs it in (a cookie for this port, HttpOnly, SameSite=Strict) and sends
    // it on without the token; its requests then carry the cookie and its own Origin or Sec-Fetch-Site.
    const link = await fetch(host.signInUrl.replace('/?', '/library?view=1&'), { redirect: 'manual' });
    assert.equal(link.status, 303);
    assert.equal(link.headers.get('location'), '/library?view=1', 'the token is out of the address bar');
    const setCookie = link.headers.get('set-cookie') ?? '';
    assert.match(setCookie, new RegExp(`^${SESSION_COOKIE_PREFIX}${host.port}=[A-Za-z0-9_-]{43};`));
    assert.match(setCookie, /HttpOnly/);
    assert.match(setCookie, /SameSite=Strict/);
    assert.doesNotMatch(setCookie, new RegExp(apiToken), 'the cookie is not the token');
    const cookie = setCookie.split(';')[0];
    for (const origin of [own, `http://localhost:${host.port}`, `http://[::1]:${host.port}`])
      assert.equal(
        (await post(host, '/v1/chat/completions', completion, { ...json, origin, cookie })).status,
        200,
        origin,
      );
    assert.equal((await post(host, '/api/call', info, { ...json, origin: own, cookie })).status, 200);
    for (const site of ['same-origin', 'none'])
      assert.equal((await fetch(host.url + '/v1/models', { headers: { 'sec-fetch-site': site, cookie } })).status, 200);
    // The cookie is sent by a page on another localhost port too (same site): it counts only on our own requests.
    assert.equal(
      (await fetch(host.url + '/v1/models', { headers: { 'sec-fetch-site': 'same-site', cookie } })).status,
      401,
    );
    assert.equal(
      (await fetch(host.url + '/v1/models', { headers: { 'sec-fetch-site': 'cross-site', cookie } })).status,
      401,
    );
    assert.equal(
      (await fetch(host.url + '/v1/models', { headers: { origin: `http://127.0.0.1:${host.port + 1}`, cookie } }))
        .status,
      403,
    );
    // Another port's cookie, or a forged value, is no session.
    const forged = [`${SESSION_COOKIE_PREFIX}${host.port + 1}=${cookie.split('=')[1]}`, `${cookie}x`];
    for (const c of forged)
      assert.equal((await fetch(host.url + '/v1/models', { headers: { origin: own, cookie: c } })).status, 401, c);
    // A wrong token link signs nothing in; /api/session says who is signed in, and POST { token } signs in too.
    const wrong = await fetch(`${host.url}/?token=not-the-token-0123456789`, { redirect: 'manual' });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers.get('set-cookie'), null);
    const session = async (headers: Record<string, string>) =>
      (await (await fetch(host.url + '/api/session', { headers })).json()).signedIn;
    assert.equal(await session({ origin: own }), false);
    assert.equal(await session({ 'sec-fetch-site': 'same-origin' }), false);
    assert.equal(await session({ origin: own, cookie }), true);
    assert.equal(await session({ authorization: `Bearer ${apiToken}` }), true);
    const badPost = await post(host, '/api/session', JSON.stringify({ token: 'wrong-0123456789abc' }), {
      ...json,
      origin: own,
    });
    assert.equal(badPost.status, 401);
    assert.equal(badPost.headers.get('set-cookie'), null);
    const goodPost = await post(host, '/api/session', JSON.stringify({ token: apiToken }), { ...json, origin: own });
    assert.equal(goodPost.status, 200);
    assert.equal((goodPost.headers.get('set-cookie') ?? '').split(';')[0], cookie);
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
    // An allowed page still needs the token: the allow-list only lets it through the browser's CORS.
    const json = { 'content-type': 'application/json' };
    const anonymous = await post(host, '/v1/chat/completions', completion, { ...json, origin: ALLOWED });
    assert.equal(anonymous.status, 401);
    const auth = { ...json, authorization: `Bearer ${apiToken}` };
    const r = await post(host, '/v1/chat/completions', completion, { ...auth, origin: ALLOWED });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('access-control-allow-origin'), ALLOWED);
    assert.equal(
      (await post(host, '/v1/chat/completions', completion, { ...auth, origin: 'chrome-extension://abcdefgh' })).status,
      200,
    );
    const cookie = await signedIn(host);
    assert.equal(
      (await post(host, '/v1/chat/completions', completion, { ...json, cookie, origin: ALLOWED })).status,
      401,
      "the app's session cookie is not an allowed page's",
    );
    assert.throws(() => parseOriginList('localhost:3000'), /not an origin/);
    assert.equal(normalizeOrigin('HTTP://LocalHost:80/'), 'http://localhost');
  });
});

test('WebSocket upgrades: Origin checked, the token or the session needed', async () => {
  await withHost(async (host, own) => {
    const cookie = await signedIn(host);
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
    assert.equal(await status({ origin: own }), 401, "the app's Origin is no secret");
    assert.equal(await status({ 'sec-fetch-site': 'same-origin' }), 401, 'neither is Sec-Fetch-Site');
    assert.equal(await status({ origin: own, cookie }), 101, 'the app itself');
    assert.equal(await status({ origin: 'http://localhost:1', cookie }), 403, 'the cookie from another port');
    assert.equal(await status({ origin: ALLOWED }), 401);
    assert.equal(await status({ origin: ALLOWED, authorization: `Bearer ${apiToken}` }), 101);
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

test('imports by path: only from the allowed folders, with every link resolved first', async () => {
  const allowed = join(dir, 'papers');
  const outside = join(dir, 'private');
  mkdirSync(allowed, { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(allowed, 'paper.txt'), 'a paper');
  writeFileSync(join(allowed, '..notes.txt'), 'a paper whose name starts with two dots');
  writeFileSync(join(outside, 'secret.txt'), 'a secret');
  symlinkSync(join(outside, 'secret.txt'), join(allowed, 'p.txt'));
  symlinkSync('/etc/passwd', join(allowed, 'passwd.txt'));
  symlinkSync(outside, join(allowed, 'inner'));
  const auth = { 'content-type': 'application/json', authorization: `Bearer ${apiToken}` };
  const importPath = (host: WebHost, path: string) =>
    post(host, '/api/call', JSON.stringify({ method: 'documents.import', params: { path } }), auth);
  // No folder allowed (the default): nothing is read by path, over HTTP or the WebSocket.
  await withHost(async (host) => {
    const r = await importPath(host, join(allowed, 'paper.txt'));
    assert.equal(r.status, 403);
    assert.match((await r.json()).error.message, /--allow-dirs/);
    const api = connectApi(`ws://127.0.0.1:${host.port}/api/ws`, WebSocket as never, { token: apiToken });
    try {
      await assert.rejects(api.call('documents.import', { path: '/etc/passwd' }), { code: 'FORBIDDEN' });
    } finally {
      api.close();
    }
  });
  await withHost(
    async (host) => {
      for (const path of [
        join(allowed, 'p.txt'),
        join(allowed, 'passwd.txt'),
        join(allowed, 'inner', 'secret.txt'),
        join(allowed, '..', 'private', 'secret.txt'),
        '/etc/passwd',
        'papers/paper.txt',
      ]) {
        const r = await importPath(host, path);
        assert.equal(r.status, 403, path);
        assert.equal((await r.json()).error.code, 'FORBIDDEN', path);
      }
      // Missing outside says no more than "not allowed"; missing inside says missing.
      assert.equal((await importPath(host, join(outside, 'nope.txt'))).status, 403);
      assert.equal((await importPath(host, join(allowed, 'nope.txt'))).status, 404);
      assert.equal(imported.length, 0, 'nothing reached the importer');
      assert.equal((await importPath(host, join(allowed, 'paper.txt'))).status, 200);
      assert.deepEqual(imported, [join(allowed, 'paper.txt')]);
      // A name that starts with '..' lies inside the folder, not above it.
      assert.equal((await importPath(host, join(allowed, '..notes.txt'))).status, 200);
    },
    parseAllowDirs(allowed, 'test'),
  );
  assert.throws(() => parseAllowDirs(join(dir, 'no-such-folder'), '--allow-dirs'), /--allow-dirs: the folder/);
});
