// `folio serve` stops when told to (issue 38 item 2): on SIGTERM or Ctrl-C it takes no new connection,
// cancels the answers under way, gives clients a few seconds, then closes every connection, the engine and
// the database and exits; a second signal exits at once. A client holding a half-sent request or a running
// /v1 stream cannot keep it up. Run as a user runs it: the command in a process of its own, on a random model
// large enough that an answer of a few thousand tokens takes seconds.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { openStorage } from '../electron/storage/index.ts';
import { SLOW_MODEL, writeRandomModel } from './helpers/random-model.ts';
import { repoRoot } from './helpers/shared.ts';

const dir = mkdtempSync(join(tmpdir(), 'folio-serve-stop-'));
const model = join(dir, 'model.gguf');
const token = 'serve-stop-token-0123456789';
const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

before(() => {
  // ~300 tokens/s on two cores: a 4,000-token answer runs for many seconds.
  writeRandomModel(model, SLOW_MODEL);
});
after(() => rmSync(dir, { recursive: true, force: true }));

interface Served {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

async function serve(library: string): Promise<Served> {
  const child = spawn(
    process.execPath,
    [
      join(repoRoot, 'electron/cli/folio.mjs'),
      'serve',
      '--port',
      '0',
      '--no-open',
      '--data',
      library,
      '--model',
      model,
      '--token',
      token,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  // When it exited; resolved once its output is all read ('close').
  let exitAt = 0;
  child.on('exit', () => (exitAt = Date.now()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((ok) =>
    child.on('close', (code, signal) => ok({ code, signal, at: exitAt })),
  );
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`folio serve did not start:\n${out}`)), 60_000);
    const look = () => {
      const m = /Folio is at (http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
      if (m) {
        clearTimeout(timer);
        ok(m[1]);
      }
    };
    child.stdout!.on('data', look);
    void exited.then(() => fail(new Error(`folio serve exited at start:\n${out}`)));
  });
  return { child, url, output: () => out, exited };
}

/** A client that sends the start of a request and then nothing: the headers never end. */
function holdHalfRequest(url: string): Promise<Socket> {
  const { port } = new URL(url);
  return new Promise((ok, fail) => {
    const s = connect(Number(port), '127.0.0.1', () => {
      s.write('POST /api/call HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n');
      ok(s);
    });
    s.on('error', () => {}); // reset when the server closes it
    s.once('error', fail);
  });
}

/** The library's database opens with its integrity checked (quick_check), and holds what it held. */
function checkLibrary(library: string) {
  const storage = openStorage(library);
  try {
    return storage.settings.get();
  } finally {
    storage.close();
  }
}

test('SIGTERM with a half-sent request held open: the server exits within seconds, the library intact', async () => {
  const library = join(dir, 'half');
  const s = await serve(library);
  const held = await holdHalfRequest(s.url);
  const idle = await fetch(`${s.url}/api/health`); // a keep-alive connection with nothing under way
  assert.equal(idle.status, 200);
  const sent = Date.now();
  s.child.kill('SIGTERM');
  const { code, at } = await s.exited;
  held.destroy();
  assert.equal(code, 0, s.output());
  assert.ok(at - sent < 10_000, `exited ${at - sent} ms after SIGTERM`);
  assert.match(s.output(), /stopping[\s\S]*stopped/);
  assert.ok(checkLibrary(library).modelId, 'the library opens, integrity checked, with its model chosen');
});

test('SIGTERM during a /v1 stream: the answer is cancelled and says why, the server exits within seconds', async () => {
  const library = join(dir, 'stream');
  const s = await serve(library);
  const r = await fetch(`${s.url}/v1/chat/completions`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({
      model: 'model',
      stream: true,
      max_tokens: 4000,
      temperature: 0,
      messages: [{ role: 'user', content: 'Tell me a long story.' }],
    }),
  });
  assert.equal(r.status, 200);
  const reader = r.body!.getReader();
  let text = '';
  while ((text.match(/"content"/g) ?? []).length < 5) text += new TextDecoder().decode((await reader.read()).value);
  const sent = Date.now();
  s.child.kill('SIGTERM');
  for (;;) {
    const chunk = await reader.read().catch(() => ({ done: true, value: undefined }));
    if (chunk.done) break;
    text += new TextDecoder().decode(chunk.value);
  }
  const ended = Date.now();
  const { code, at } = await s.exited;
  assert.equal(code, 0, s.output());
  assert.ok(ended - sent < 5_000, `the stream ended ${ended - sent} ms after SIGTERM`);
  assert.ok(at - sent < 10_000, `exited ${at - sent} ms after SIGTERM`);
  assert.match(text, /the server is stopping/, 'the stream says why it ended');
  assert.doesNotMatch(text, /\[DONE\]/, 'not as if the answer were complete');
  checkLibrary(library);
});

test('a second signal exits at once, without waiting for the grace period', async () => {
  const s = await serve(join(dir, 'twice'));
  const held = await holdHalfRequest(s.url);
  const sent = Date.now();
  s.child.kill('SIGINT');
  await new Promise((r) => setTimeout(r, 300));
  s.child.kill('SIGINT');
  const { code, at } = await s.exited;
  held.destroy();
  assert.equal(code, 130, s.output());
  assert.ok(at - sent < 2_500, `exited ${at - sent} ms after the first signal (the grace is 3 s)`);
  assert.match(s.output(), /stopped at once/);
});
