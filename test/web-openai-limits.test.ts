// Cheap checks before expensive work (issue 14 item 9), on the real core and engine with stories260K: a
// prompt whose byte length alone proves it cannot fit the context is refused at once, before the engine
// tokenizes it (a 50 MB prompt took 40-57 s of CPU to be refused); one that might fit is still tokenized
// and checked exactly.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { EngineParams } from '../electron/engine/protocol.ts';
import { createAppCore, type AppCore } from '../electron/services/app-core.ts';
import { ChatCompletionRequest } from '../electron/api/openai.ts';
import { missing, sharedModel } from './helpers/shared.ts';

const model = sharedModel('stories260K.gguf');
const skip = missing(model);
let dir = '';
let core: AppCore;
/** Texts the engine was asked to tokenize, by length. */
const tokenized: number[] = [];

before(async () => {
  if (skip) return;
  dir = mkdtempSync(join(tmpdir(), 'folio-openai-limits-'));
  core = await createAppCore({ dataDir: dir, model });
  const call = core.engine.client.call.bind(core.engine.client);
  core.engine.client.call = (method, params, opts) => {
    if (method === 'tokenize') tokenized.push((params as EngineParams<'tokenize'>).text.length);
    return call(method, params, opts);
  };
});

after(async () => {
  if (skip) return;
  await core.close();
  rmSync(dir, { recursive: true, force: true });
});

const request = (content: string) =>
  ChatCompletionRequest.parse({
    model: 'stories260K',
    messages: [{ role: 'user', content }],
    max_tokens: 4,
    temperature: 0,
  });

test('a prompt too long by its bytes alone is refused before it is tokenized', { skip }, async () => {
  const started = Date.now();
  await assert.rejects(
    core.openai.complete(request('Once upon a time. '.repeat(200_000)), () => {}, new AbortController().signal),
    (e: { code: string; message: string }) => {
      assert.equal(e.code, 'CONTEXT_FULL');
      assert.match(
        e.message,
        /3600\d+ bytes long: even at \d+ bytes a token .* more than the \d+ tokens the context has room for/,
      );
      return true;
    },
  );
  assert.ok(Date.now() - started < 5000, `refused in ${Date.now() - started} ms`);
  assert.deepEqual(
    tokenized.filter((n) => n > 100_000),
    [],
    'the engine never saw the long prompt',
  );
});

test('a prompt that may fit is tokenized and checked exactly; a short one is answered', { skip }, async () => {
  // Longer in bytes than the context in tokens, but not provably too long: the exact check decides.
  await assert.rejects(
    core.openai.complete(
      request('Once upon a time, a little dog ran. '.repeat(60)),
      () => {},
      new AbortController().signal,
    ),
    (e: { code: string; message: string }) => e.code === 'CONTEXT_FULL' && /tokens long/.test(e.message),
  );
  assert.ok(
    tokenized.some((n) => n > 2000),
    'that one was tokenized',
  );
  const r = await core.openai.complete(request('Once upon a time'), () => {}, new AbortController().signal);
  assert.equal(r.completionTokens, 4);
});
