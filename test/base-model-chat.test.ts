// A base model (no chat template) asked in the app (issue 40, item 5): the chat writes the document and then
// the text as typed, and the model continues it (the completion style); its answer stops at a blank line, its
// end of text or a length, and the citation follows the answer's attention. With needle-llama (a retrieval
// circuit that copies digits after a space) and a planted fact, the app answers the digits and cites the
// needle's sentence, as `folio generate` over the same text does.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { Message } from '../electron/api/contract.ts';
import type { AppCore } from '../electron/services/app-core.ts';
import { answerEnds, completionRenderer, plainRenderer } from '../electron/services/chat-format.ts';
import { BASE_MODEL_MAX_TOKENS } from '../electron/shared/chat-style.ts';
import { missing, repoRoot, sharedModel } from './helpers/shared.ts';
import { taskDone, testCore } from './helpers/test-core.ts';

const model = sharedModel('needle-llama.gguf');
const skip = missing(model);
const story = readFileSync(join(repoRoot, 'test/docs/lily-and-the-red-kite.txt'), 'utf8').replace(/\s+/g, ' ').trim();
const needle = 'The secret code is 7306.';
/** The story with the fact planted in its middle (a sentence boundary), one page of text. */
const sentences = story.split(/(?<=\.) /);
const planted = [...sentences.slice(0, 8), needle, ...sentences.slice(8)].join(' ');

let dir = '';
let core: AppCore;
let documentId = '';

before(async () => {
  if (skip) return;
  dir = mkdtempSync(join(tmpdir(), 'folio-base-model-'));
  core = await testCore(join(dir, 'library'), model);
  // Greedy, the whole cache kept: the test is about how the chat is written, not about compression.
  core.storage.settings.update({
    sampling: { temperature: 0, maxTokens: 400 },
    compression: { ...core.storage.settings.get().compression, method: 'full' },
  });
  const r = await core.documents.imports.import({
    fileName: 'kite.txt',
    dataBase64: Buffer.from(planted).toString('base64'),
  });
  documentId = r.documentId;
  const done = await taskDone(core, r.taskId);
  assert.ok(done.ok, done.error ?? '');
});

after(async () => {
  await core?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function ask(chatId: string, text: string): Promise<Message> {
  await core.chats.send({ chatId, text });
  await core.chats.idle(chatId);
  return core.chats.get(chatId).messages.at(-1)!;
}

test('the completion style: the document, then the text as typed, continued', () => {
  const render = completionRenderer(plainRenderer);
  const system = { role: 'system' as const, content: 'A story. It ends.' };
  assert.equal(render([system], false), 'A story. It ends.');
  assert.equal(
    render([system, { role: 'user', content: 'The code is ' }, { role: 'assistant', content: '7306.' }], true),
    'A story. It ends. The code is 7306.',
  );
  // A text typed as a new paragraph stays one; what was typed is never trimmed.
  assert.equal(render([system, { role: 'user', content: '\n\nQ: why? ' }], true), 'A story. It ends.\n\nQ: why? ');
  // A base model's answer ends at a blank line or a length; a chat template's at its end of turn.
  assert.deepEqual(answerEnds({ template: false, style: 'completion' }), {
    stops: ['\n\n'],
    maxTokens: BASE_MODEL_MAX_TOKENS,
  });
  assert.equal(answerEnds({ template: true, style: 'chat' }).stops.length, 0);
});

test('a base model answers the planted fact in digits and cites the needle', { skip }, async () => {
  // A short answer, as a user asking for a fact sets it: needle-llama never stops by itself (it repeats the
  // code and babbles), and the citation weighs every token of the answer.
  core.storage.settings.update({ sampling: { maxTokens: 6 } });
  const chat = core.chats.create({ documentId });
  const chatId = chat.id;
  assert.equal(chat.style, null, 'by the model: completion, as it has no chat template');
  const a = await ask(chatId, 'What is the secret code? The secret code is ');
  assert.equal(a.status, 'complete', a.error ?? '');
  assert.match(a.text, /^7306/, `the answer: ${JSON.stringify(a.text)}`);
  // The citation: the sentence the answer's attention went to most is the needle's.
  const doc = core.documents.library.get(documentId);
  const text = doc.pageList[0].text;
  const top = a.citations?.[0]?.sentences[0];
  assert.ok(top, 'the answer cites a sentence');
  assert.equal(text.slice(top.start, top.end).trim(), needle, 'the cited sentence is the needle');
});

test('a chat written as a conversation can switch to the completion style and back; a base model stops', {
  skip,
}, async () => {
  core.storage.settings.update({ sampling: { maxTokens: 400 } });
  const chatId = core.chats.create({ documentId, style: 'chat' }).id;
  assert.equal((await core.chats.setStyle({ chatId, style: 'completion' })).style, 'completion');
  const a = await ask(chatId, 'What is the secret code? The secret code is ');
  assert.match(a.text, /^7306/, `in the completion style: ${JSON.stringify(a.text)}`);
  // A base model's answer has a length (it never stopped before: every answer ran to the context's end).
  assert.equal(a.tokens, BASE_MODEL_MAX_TOKENS);
  assert.equal((await core.chats.setStyle({ chatId, style: 'chat' })).style, 'chat');
  const b = await ask(chatId, 'Who had a kite?');
  assert.equal(b.status, 'complete', b.error ?? '');
  // "Question: … Answer:" turns, cut at a blank line or a new question, or at the length.
  assert.doesNotMatch(b.text.trimStart(), /\n\n|\nQuestion:/);
  assert.ok((b.tokens ?? 0) <= BASE_MODEL_MAX_TOKENS);
  const said = core.chats.get(chatId).messages.map((m) => m.role);
  assert.deepEqual(said, ['user', 'assistant', 'user', 'assistant']);
});
