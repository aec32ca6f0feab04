// The library and chats on a real app core (storage, the engine process, stories260K): a file imported twice
// is refused as a duplicate before any work (then kept when asked); documents renamed; an encrypted PDF
// asks for its password, again when it was wrong, and opens with the right one, which is stored nowhere; a
// damaged file's failure offers nothing to try again; one empty chat per document; titles from the first
// question; search and export; a regenerated answer keeps its earlier version, and the next question
// replays the version shown.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { EngineParams } from '../electron/engine/protocol.ts';
import type { AppCore } from '../electron/services/app-core.ts';
import { encryptedPdf } from './helpers/make-pdf.ts';
import { missing, sharedModel } from './helpers/shared.ts';
import { taskDone, testCore } from './helpers/test-core.ts';

const model = sharedModel('stories260K.gguf');
const skip = missing(model);
const dir = mkdtempSync(join(tmpdir(), 'folio-library-service-'));
let core: AppCore;

before(async () => {
  if (skip) return;
  core = await testCore(join(dir, 'library'), model);
  core.storage.settings.update({ systemPrompt: '', sampling: { maxTokens: 12, temperature: 0 } });
});
after(async () => {
  await core?.close();
  rmSync(dir, { recursive: true, force: true });
});

const story =
  'Once upon a time, there was a little dog named Max. Max liked to run in the park. One day, Max found a red ball. ' +
  'He took the ball home to show his friend Sue.\n';
const base64 = (s: string | Uint8Array) => Buffer.from(s).toString('base64');

async function importText(fileName: string, text: string, more: { keepDuplicate?: boolean } = {}) {
  const r = await core.documents.imports.import({ fileName, dataBase64: base64(text), ...more });
  const done = await taskDone(core, r.taskId);
  assert.equal(done.ok, true, done.error ?? '');
  return r.documentId;
}

function rejection(code: string, message?: RegExp) {
  return (e: { code?: string; message: string }) => {
    assert.equal(e.code, code, e.message);
    if (message) assert.match(e.message, message);
    return true;
  };
}

let docId = '';

test('a file already in the library is refused before any work, and kept when asked; rename', { skip }, async () => {
  docId = await importText('max.txt', story);
  const count = core.documents.library.list().length;
  let details: unknown;
  await assert.rejects(
    core.documents.imports.import({ fileName: 'copy of max.txt', dataBase64: base64(story) }),
    (e: { code: string; message: string; details: unknown }) => {
      details = e.details;
      return (
        e.code === 'DUPLICATE' && /^copy of max\.txt is already in the library as “.+”: open that one/.test(e.message)
      );
    },
  );
  assert.deepEqual(details, { documentId: docId, title: core.documents.library.get(docId).title });
  assert.equal(core.documents.library.list().length, count, 'nothing was added');
  const twin = await importText('copy of max.txt', story, { keepDuplicate: true });
  assert.notEqual(twin, docId);
  assert.equal(core.documents.library.get(twin).fileName, 'copy of max.txt');
  // A kept copy is told apart by its title (the same file name gives the same title), a further one too; the
  // first keeps its own.
  const title = core.documents.library.get(docId).title;
  const kept = [await importText('max.txt', story, { keepDuplicate: true })];
  kept.push(await importText('max.txt', story, { keepDuplicate: true }));
  assert.deepEqual(
    kept.map((id) => core.documents.library.get(id).title),
    [`${title} (2)`, `${title} (3)`],
  );
  assert.equal(core.documents.library.get(docId).title, title);
  for (const id of kept) await core.documents.library.delete(id);

  const renamed = await core.dispatcher.dispatch('documents.rename', { documentId: twin, title: '  Max,  again ' });
  assert.equal((renamed as { title: string }).title, 'Max, again');
  assert.equal(core.documents.library.get(twin).fileName, 'copy of max.txt', 'the file name stays');
  await assert.rejects(
    core.dispatcher.dispatch('documents.rename', { documentId: twin, title: '   ' }),
    rejection('BAD_REQUEST', /title: the title is empty/),
  );
  await core.documents.library.delete(twin);
});

test('an encrypted PDF asks for its password, again when wrong, opens with the right one; it is stored nowhere', {
  skip,
}, async () => {
  const pdf = encryptedPdf({ pages: [['Max found a red ball in the park.']], userPassword: 'hunter2', bits: 128 });
  const first = await core.documents.imports.import({ fileName: 'locked.pdf', dataBase64: base64(pdf) });
  assert.equal((await taskDone(core, first.taskId)).ok, false);
  let d = core.documents.library.get(first.documentId);
  assert.equal(d.status, 'failed');
  assert.equal(d.errorCode, 'PASSWORD_REQUIRED');
  assert.equal(d.remedy, 'password');

  const wrong = await core.documents.imports.import({ documentId: first.documentId, password: 'not-it' });
  assert.equal(wrong.documentId, first.documentId);
  assert.equal((await taskDone(core, wrong.taskId)).ok, false);
  d = core.documents.library.get(first.documentId);
  assert.equal(d.errorCode, 'PASSWORD_WRONG');
  assert.equal(d.remedy, 'password');
  assert.match(d.error!, /the password given is wrong/);

  // Importing the same file again goes into the failed document rather than beside it.
  const again = await core.documents.imports.import({
    fileName: 'locked.pdf',
    dataBase64: base64(pdf),
    password: 'hunter2',
  });
  assert.equal(again.documentId, first.documentId);
  assert.equal((await taskDone(core, again.taskId)).ok, true);
  d = core.documents.library.get(first.documentId);
  assert.equal(d.status, 'ready');
  assert.equal(d.errorCode, null);
  assert.equal(d.fileName, 'locked.pdf');
  assert.match(d.pageList[0].text, /red ball/);
  // Neither password reached the database or the library's files.
  const library = join(dir, 'library');
  for (const f of readdirSync(library, { recursive: true, withFileTypes: true })) {
    if (!f.isFile()) continue;
    const bytes = readFileSync(join(f.parentPath, f.name)).toString('latin1');
    assert.ok(!bytes.includes('hunter2') && !bytes.includes('not-it'), `a password in ${f.name}`);
  }
  // Read again without a failure: nothing to do.
  await assert.rejects(
    core.documents.imports.import({ documentId: first.documentId }),
    rejection('FILE_NOT_HELD', /did not fail to import/),
  );
});

test('a damaged file offers nothing to try again; its file is not held, nor kept', { skip }, async () => {
  const bad = new TextEncoder().encode('%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage without end');
  const r = await core.documents.imports.import({ fileName: 'broken.pdf', dataBase64: base64(bad) });
  assert.equal((await taskDone(core, r.taskId)).ok, false);
  const d = core.documents.library.get(r.documentId);
  assert.equal(d.errorCode, 'CORRUPT');
  assert.equal(d.remedy, null);
  assert.equal(d.hasFile, false, 'its bytes are not kept: reading them again cannot help');
  await assert.rejects(core.documents.imports.import({ documentId: r.documentId }), rejection('FILE_NOT_HELD'));
  await core.documents.library.delete(r.documentId);
});

test('one empty chat per document; a title from the first question; search and export', { skip }, async () => {
  // An empty chat left by an older version is not listed beside the newest one.
  core.storage.chats.create(docId, 'Chat 1');
  const a = core.chats.create({ documentId: docId });
  const b = core.chats.create({ documentId: docId });
  assert.equal(b.id, a.id, 'New chat reuses the empty chat');
  assert.deepEqual(
    core.chats.list(docId).map((c) => c.id),
    [a.id],
  );
  core.chats.send({ chatId: a.id, text: 'Who found   the red ball?\nTell me.' });
  await core.chats.idle(a.id);
  assert.equal(core.storage.chats.require(a.id).title, 'Who found the red ball?');
  const c = core.chats.create({ documentId: docId, title: 'Second' });
  assert.notEqual(c.id, a.id);
  assert.equal(c.title, 'Second');
  core.chats.send({ chatId: c.id, text: 'Where is the park?' });
  await core.chats.idle(c.id);
  assert.equal(core.storage.chats.require(c.id).title, 'Second', 'a chat with a title keeps it');

  const hits = core.chats.search({ query: 'RED BALL', documentId: docId });
  assert.equal(hits.length, 1);
  assert.equal(hits[0].chatId, a.id);
  assert.equal(hits[0].snippet.slice(hits[0].matchStart, hits[0].matchEnd).toLowerCase(), 'red ball');
  assert.equal(core.chats.search({ query: 'park' }).filter((h) => h.role === 'user').length, 1);
  await assert.rejects(core.dispatcher.dispatch('chats.search', { query: ' ' }), rejection('BAD_REQUEST'));

  const md = (await core.dispatcher.dispatch('chats.export', { chatId: a.id, format: 'markdown' })) as {
    text: string;
    fileName: string;
  };
  assert.equal(md.fileName, 'Who found the red ball.md');
  assert.match(
    md.text,
    /^# Who found the red ball\?\n\nAbout \*.*\* \(max\.txt\)\.\n\n## Question\n\nWho found {3}the red ball\?/,
  );
  const json = (await core.dispatcher.dispatch('chats.export', { chatId: a.id, format: 'json' })) as { text: string };
  assert.equal((JSON.parse(json.text) as { messages: unknown[] }).messages.length, 2);
});

test('regenerate keeps the earlier answer as a version; the next question replays the version shown', {
  skip,
}, async () => {
  core.storage.settings.update({ sampling: { maxTokens: 10, temperature: 1, seed: 1 } });
  const chat = core.chats.create({ documentId: docId, title: 'Versions' });
  const sent = core.chats.send({ chatId: chat.id, text: 'What did Max like?' });
  await core.chats.idle(chat.id);
  const v1 = core.storage.messages.require(sent.assistant.id).text;
  // Another seed until the second version differs from the first (sampling at temperature 1).
  let v2 = v1;
  for (let seed = 2; seed < 12 && (v2.includes(v1) || v1.includes(v2)); seed++) {
    core.storage.settings.update({ sampling: { seed } });
    const r = core.chats.regenerate(chat.id);
    assert.equal(r.assistant.id, sent.assistant.id, 'the answer is rewritten in place');
    await core.chats.idle(chat.id);
    v2 = core.storage.messages.require(sent.assistant.id).text;
  }
  assert.ok(!v2.includes(v1) && !v1.includes(v2), `two different answers: ${JSON.stringify([v1, v2])}`);
  let m = core.chats.get(chat.id).messages;
  assert.equal(m.length, 2);
  const count = m[1].version.count;
  assert.ok(count >= 2);
  assert.deepEqual(m[1].version, { index: count, count });

  const shown = await core.chats.selectVersion({ chatId: chat.id, messageId: sent.assistant.id, version: 1 });
  assert.equal(shown.text, v1);
  // What the engine is given to read from now on: the conversation replayed with the version shown.
  const read: string[] = [];
  const call = core.engine.call.bind(core.engine);
  core.engine.call = (method, params, opts) => {
    if (method === 'tokenize') read.push((params as EngineParams<'tokenize'>).text);
    return call(method, params, opts);
  };
  try {
    core.chats.send({ chatId: chat.id, text: 'And then?' });
    await core.chats.idle(chat.id);
  } finally {
    core.engine.call = call;
  }
  assert.ok(
    read.some((t) => t.includes(v1)),
    `the version shown was replayed: ${JSON.stringify(read)}`,
  );
  assert.ok(!read.some((t) => t.includes(v2)), 'the version not shown was not');
  m = core.chats.get(chat.id).messages;
  assert.deepEqual(
    m.map((x) => [x.role, x.status]),
    [
      ['user', 'complete'],
      ['assistant', 'complete'],
      ['user', 'complete'],
      ['assistant', 'complete'],
    ],
  );
  assert.deepEqual(m[1].version, { index: 1, count });
  // The meter counts what the cache held after the answer, recorded with the chat.
  const usage = core.chats.get(chat.id).usage;
  assert.equal(usage.conversationTokens, core.storage.chats.conversationPositions(chat.id));
  assert.ok(usage.conversationTokens > 0);
  // Browsing versions is refused while an answer is written.
  core.chats.send({ chatId: chat.id, text: 'Why?' });
  await assert.rejects(
    core.chats.selectVersion({ chatId: chat.id, messageId: sent.assistant.id, version: 2 }),
    rejection('BUSY'),
  );
  await core.chats.idle(chat.id);
});
