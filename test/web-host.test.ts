// The web host as a transport: the API over HTTP and WebSocket, validation and error shapes, events,
// the loopback-only rules, static files, and the OpenAI-compatible protocol. The handlers here are small
// stand-ins so the transport is tested on its own; test/app-core.test.ts runs the real core behind it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';

import { ApiError, type Settings } from '../electron/api/contract.ts';
import { Dispatcher, EventBus, type Handlers } from '../electron/api/dispatcher.ts';
import { connectApi } from '../electron/api/ws-client.ts';
import { startWebHost } from '../electron/web/server.ts';
import type { OpenAiBackend } from '../electron/api/openai.ts';

const dir = mkdtempSync(join(tmpdir(), 'folio-web-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
mkdirSync(join(dir, 'ui', 'assets'), { recursive: true });
writeFileSync(join(dir, 'ui', 'index.html'), '<!doctype html><title>Folio</title>');
writeFileSync(join(dir, 'ui', 'assets', 'app.js'), 'console.log(1)');
writeFileSync(join(dir, 'secret.txt'), 'do not serve');

let settings: Settings = {
  modelId: null,
  compression: { method: 'ada-snapkv', budget: 0.2, alpha: 0.2, window: 32, kernel: 7 },
  sampling: { temperature: 0.7, topK: 40, topP: 0.95, minP: 0.05, repeatPenalty: 1.1, maxTokens: 64, seed: null },
  systemPrompt: '',
  nCtx: null,
  conversationRoom: null,
  threads: null,
  kvType: 'f16',
  kvTypeV: null,
  kvRotate: false,
  backend: 'auto',
  theme: 'system',
  modelFolders: [],
  ocrLanguages: ['eng'],
};
const bus = new EventBus();
const handlers = {
  'settings.get': () => settings,
  'settings.update': (p) => {
    settings = {
      ...settings,
      ...p,
      compression: { ...settings.compression, ...p.compression },
      sampling: { ...settings.sampling, ...p.sampling },
    };
    bus.emit('settings.changed', settings);
    return settings;
  },
  'chats.delete': () => {
    throw new ApiError('CHAT_NOT_FOUND', 'no such chat');
  },
  'engine.status': () => ({ state: 'ready', modelId: null, backend: 'cpu', message: null, restarts: 'many' }) as never,
} as Partial<Handlers> as Handlers;
const dispatcher = new Dispatcher(handlers, bus);
/** The API token the hosts here are started with; the helpers below send it, as a program would. */
const apiToken = 'test-token-0123456789abcdef';
const auth = { authorization: `Bearer ${apiToken}` };

const backend: OpenAiBackend = {
  async listModels() {
    return [{ id: 'stories260K', created: 0, owned_by: 'folio' }];
  },
  async complete(req, onDelta) {
    const words = ['Once', ' upon', ' a', ' time'];
    for (const w of words) onDelta(w);
    return { model: req.model, text: words.join(''), finishReason: 'length', promptTokens: 3, completionTokens: 4 };
  },
};

function http(port: number, method: string, path: string, body?: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: Record<string, unknown>; text: string }>((ok, fail) => {
    const req = request(
      { host: '127.0.0.1', port, method, path, headers: { 'content-type': 'application/json', ...auth, ...headers } },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => ok({ status: res.statusCode!, headers: res.headers, text }));
      },
    );
    req.on('error', fail);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

test('the API over HTTP: results, validation, error codes', async () => {
  const host = await startWebHost({ dispatcher, apiToken, staticDir: join(dir, 'ui'), maxBodyBytes: 4096 });
  try {
    const get = await http(host.port, 'POST', '/api/call', JSON.stringify({ method: 'settings.get', params: {} }));
    assert.equal(get.status, 200);
    assert.equal(JSON.parse(get.text).result.compression.method, 'ada-snapkv');
    const upd = await http(
      host.port,
      'POST',
      '/api/call',
      JSON.stringify({ method: 'settings.update', params: { compression: { budget: 0.4 } } }),
    );
    assert.equal(JSON.parse(upd.text).result.compression.budget, 0.4);
    const bad = await http(
      host.port,
      'POST',
      '/api/call',
      JSON.stringify({ method: 'settings.update', params: { compression: { kernel: 4 } } }),
    );
    assert.equal(bad.status, 400);
    assert.equal(JSON.parse(bad.text).error.code, 'BAD_REQUEST');
    assert.match(JSON.parse(bad.text).error.message, /compression\.kernel: the pooling kernel must be odd/);
    const unknown = await http(
      host.port,
      'POST',
      '/api/call',
      JSON.stringify({ method: 'documents.explode', params: {} }),
    );
    assert.equal(JSON.parse(unknown.text).error.code, 'UNKNOWN_METHOD');
    const notJson = await http(host.port, 'POST', '/api/call', '{nope');
    assert.equal(notJson.status, 400);
    const big = await http(
      host.port,
      'POST',
      '/api/call',
      JSON.stringify({ method: 'settings.get', params: { pad: 'x'.repeat(10000) } }),
    );
    assert.equal(big.status, 413);
    const missing = await http(
      host.port,
      'POST',
      '/api/call',
      JSON.stringify({ method: 'chats.delete', params: { chatId: 'x' } }),
    );
    assert.equal(missing.status, 404);
    assert.deepEqual(JSON.parse(missing.text).error, { code: 'CHAT_NOT_FOUND', message: 'no such chat' });
    const broken = await http(host.port, 'POST', '/api/call', JSON.stringify({ method: 'engine.status', params: {} }));
    assert.equal(JSON.parse(broken.text).error.code, 'INTERNAL', 'a result outside the contract is refused');
    const foreign = await http(host.port, 'POST', '/api/call', JSON.stringify({ method: 'settings.get' }), {
      host: 'evil.example:80',
    });
    assert.equal(foreign.status, 421, 'DNS rebinding: a foreign Host is refused');
    const cross = await http(host.port, 'POST', '/api/call', JSON.stringify({ method: 'settings.get' }), {
      origin: 'https://evil.example',
    });
    assert.equal(cross.status, 403);
  } finally {
    await host.close();
  }
});

test('static files: the renderer, client-side routes, no way out of the folder', async () => {
  const host = await startWebHost({ dispatcher, apiToken, staticDir: join(dir, 'ui') });
  try {
    assert.match((await http(host.port, 'GET', '/')).text, /<title>Folio/);
    const js = await http(host.port, 'GET', '/assets/app.js');
    assert.match(String(js.headers['content-type']), /javascript/);
    assert.match((await http(host.port, 'GET', '/chats/123')).text, /<title>Folio/, 'unknown paths get the app');
    const traversal = await http(host.port, 'GET', '/..%2fsecret.txt');
    assert.ok(traversal.status === 403 || !traversal.text.includes('do not serve'));
    assert.ok(!(await http(host.port, 'GET', '/../secret.txt')).text.includes('do not serve'));
  } finally {
    await host.close();
  }
  const bare = await startWebHost({ dispatcher, apiToken });
  try {
    assert.match((await http(bare.port, 'GET', '/')).text, /not built/);
  } finally {
    await bare.close();
  }
});

test('the API over WebSocket: calls, errors, pushed events, reconnection', async () => {
  const host = await startWebHost({ dispatcher, apiToken });
  const api = connectApi(`ws://127.0.0.1:${host.port}/api/ws`, WebSocket as never, { token: apiToken });
  try {
    const seen: number[] = [];
    api.on('settings.changed', (s) => seen.push(s.compression.budget));
    assert.equal((await api.call('settings.get', {})).kvType, 'f16');
    await api.call('settings.update', { compression: { budget: 0.6 } });
    await assert.rejects(
      api.call('settings.update', { theme: 'purple' as never }),
      (e: ApiError) => e.code === 'BAD_REQUEST',
    );
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(seen, [0.6]);
    // raw protocol errors
    const raw = new WebSocket(`ws://127.0.0.1:${host.port}/api/ws`, { headers: auth });
    await new Promise((r) => raw.on('open', r));
    const reply = new Promise<string>((r) => raw.once('message', (d) => r(String(d))));
    raw.send('not json');
    assert.equal(JSON.parse(await reply).error.code, 'BAD_REQUEST');
    raw.close();
    // a foreign origin cannot open the socket
    const evil = new WebSocket(`ws://127.0.0.1:${host.port}/api/ws`, { origin: 'https://evil.example' });
    await new Promise<void>((r) => evil.on('error', () => r()));
  } finally {
    api.close();
    await host.close();
  }
});

test('OpenAI-compatible endpoints: models, completions, streaming, error bodies', async () => {
  const host = await startWebHost({ dispatcher, apiToken, openai: backend });
  try {
    const models = JSON.parse((await http(host.port, 'GET', '/v1/models')).text);
    assert.deepEqual(models, {
      object: 'list',
      data: [{ object: 'model', id: 'stories260K', created: 0, owned_by: 'folio' }],
    });
    const body = { model: 'stories260K', messages: [{ role: 'user', content: 'Tell me a story' }] };
    const plain = JSON.parse((await http(host.port, 'POST', '/v1/chat/completions', JSON.stringify(body))).text);
    assert.equal(plain.object, 'chat.completion');
    assert.equal(plain.choices[0].message.content, 'Once upon a time');
    assert.equal(plain.choices[0].finish_reason, 'length');
    assert.deepEqual(plain.usage, { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
    const sse = await http(host.port, 'POST', '/v1/chat/completions', JSON.stringify({ ...body, stream: true }));
    assert.match(String(sse.headers['content-type']), /text\/event-stream/);
    const events = sse.text
      .split('\n\n')
      .filter(Boolean)
      .map((e) => e.replace(/^data: /, ''));
    assert.equal(events.at(-1), '[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    assert.equal(chunks.map((c) => c.choices[0].delta.content ?? '').join(''), 'Once upon a time');
    assert.equal(chunks.at(-1).choices[0].finish_reason, 'length');
    assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0].id));
    const bad = await http(host.port, 'POST', '/v1/chat/completions', JSON.stringify({ model: 'x', messages: [] }));
    assert.equal(bad.status, 400);
    const err = JSON.parse(bad.text).error;
    assert.equal(err.type, 'invalid_request_error');
    assert.equal(err.param, 'messages');
    assert.equal((await http(host.port, 'POST', '/v1/chat/completions', '{')).status, 400);
    assert.equal((await http(host.port, 'GET', '/v1/embeddings')).status, 404);
  } finally {
    await host.close();
  }
});
