// The library and chats in storage and in the pure helpers, without the engine: versions of a regenerated
// answer (kept in place, browsable, the version shown is what the messages list and so what a chat replays;
// their cache tokens follow them), search across chats, a failed document's code and what can help it,
// chat titles from a question, the export and the search hit's snippet.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ChatSearchHit, DocumentSummary, Message } from '../electron/api/contract.ts';
import { failureRemedy } from '../electron/documents/errors.ts';
import { exportChat, exportFileName } from '../electron/services/chat-export.ts';
import { searchHit } from '../electron/services/chat-search.ts';
import { isUntitled, TITLE_CHARS, titleFromQuestion } from '../electron/services/chat-title.ts';
import { openStorage, StorageError, toSummary, type Storage } from '../electron/storage/index.ts';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function open(): Storage {
  const d = mkdtempSync(join(tmpdir(), 'folio-library-'));
  dirs.push(d);
  return openStorage(d);
}

function chatWithAnswer(s: Storage) {
  const doc = s.documents.create({ title: 'Report', kind: 'text', fileName: 'report.txt', sha256: 'ab'.repeat(32) });
  const chat = s.chats.create(doc.id);
  const q = s.messages.add(chat.id, { role: 'user', text: 'Who flew the kite?', cacheTokens: 9 });
  const first = s.messages.beginAnswer(chat.id);
  first.append('Lily flew it.');
  first.finish('complete', { tokens: 4, cacheTokens: 5, pageRefs: [1] });
  return { doc, chat, q, answerId: first.id };
}

function expectStorageError(fn: () => unknown, code: string): void {
  assert.throws(fn, (e: unknown) => e instanceof StorageError && e.code === code);
}

test('a regenerated answer keeps its earlier versions in place; the one shown is what the chat lists', () => {
  const s = open();
  const { chat, answerId } = chatWithAnswer(s);
  assert.deepEqual(s.messages.require(answerId).version, { index: 1, count: 1 });

  const second = s.messages.reviseAnswer(answerId);
  assert.equal(second.id, answerId, 'the same message, at the same place');
  let m = s.messages.require(answerId);
  assert.equal(m.status, 'streaming');
  assert.equal(m.text, '');
  assert.deepEqual(m.version, { index: 2, count: 2 });
  assert.deepEqual(m.pageRefs, []);
  second.append('Tom flew it, then Lily.');
  const looked = [{ page: 2, share: 0.7, sentences: [{ start: 0, end: 12, share: 0.5 }] }];
  second.finish('complete', { tokens: 7, cacheTokens: 8, pageRefs: [2], citations: looked });
  // Refused while streaming: a third version while the second is written.
  const third = s.messages.reviseAnswer(answerId);
  expectStorageError(() => s.messages.reviseAnswer(answerId), 'BAD_REQUEST');
  expectStorageError(() => s.messages.selectVersion(answerId, 1), 'BAD_REQUEST');
  third.append('A bird.');
  third.finish('complete', { tokens: 2, cacheTokens: 3 });
  assert.deepEqual(s.messages.require(answerId).version, { index: 3, count: 3 });

  // Back to the first: its text, pages and cache tokens are the message's again; the others stay.
  m = s.messages.selectVersion(answerId, 1);
  assert.equal(m.text, 'Lily flew it.');
  assert.deepEqual(m.pageRefs, [1]);
  assert.equal(m.citations, null, 'each version keeps its own citations');
  assert.deepEqual(m.version, { index: 1, count: 3 });
  assert.deepEqual(Message.strict().parse(m), m);
  assert.deepEqual(
    s.messages.list(chat.id).map((x) => x.text),
    ['Who flew the kite?', 'Lily flew it.'],
  );
  assert.deepEqual(s.messages.conversationTokens(chat.id), { tokens: 9 + 5, exact: true });
  assert.equal(s.messages.selectVersion(answerId, 2).text, 'Tom flew it, then Lily.');
  assert.deepEqual(s.messages.require(answerId).citations, looked);
  assert.deepEqual(s.messages.conversationTokens(chat.id), { tokens: 9 + 8, exact: true });
  assert.equal(s.messages.selectVersion(answerId, 3).text, 'A bird.');
  expectStorageError(() => s.messages.selectVersion(answerId, 4), 'NOT_FOUND');
  // A new version after browsing back gets the next number, never one in use.
  s.messages.selectVersion(answerId, 1);
  const fourth = s.messages.reviseAnswer(answerId);
  assert.deepEqual(s.messages.require(answerId).version, { index: 4, count: 4 });
  // An empty answer that failed is replaced, not kept as a version.
  fourth.finish('failed', { error: 'the engine stopped' });
  s.messages.reviseAnswer(answerId).finish('complete', {});
  assert.deepEqual(s.messages.require(answerId).version, { index: 4, count: 4 });
  // Only answers have versions; an edit that cuts the answer drops its versions with it.
  expectStorageError(() => s.messages.reviseAnswer(s.messages.list(chat.id)[0].id), 'NOT_FOUND');
  s.messages.truncateFrom(chat.id, answerId);
  assert.equal(s.messages.list(chat.id).length, 1);
  s.close();
});

test('an edited question keeps its earlier version with what followed it: a branch the user can go back to', () => {
  const s = open();
  const { chat, q, answerId } = chatWithAnswer(s);
  // A second turn, whose answer was regenerated once (two versions).
  const q2 = s.messages.add(chat.id, { role: 'user', text: 'And then?', cacheTokens: 4 });
  const a2 = s.messages.beginAnswer(chat.id);
  a2.append('They went home.');
  a2.finish('complete', {});
  s.messages.reviseAnswer(a2.id).finish('complete', { text: 'They ate cake.' });
  const branch = () => s.messages.list(chat.id).map((m) => `${m.role}:${m.text}:${m.version.index}/${m.version.count}`);
  const before = branch();
  assert.deepEqual(before, [
    'user:Who flew the kite?:1/1',
    'assistant:Lily flew it.:1/1',
    'user:And then?:1/1',
    'assistant:They ate cake.:2/2',
  ]);

  // Edit the first question: a new version in place; what followed it leaves with the old one.
  const edited = s.messages.reviseQuestion(q.id, 'Who had a kite?');
  assert.equal(edited.id, q.id);
  assert.deepEqual(edited.version, { index: 2, count: 2 });
  assert.deepEqual(branch(), ['user:Who had a kite?:2/2']);
  const a3 = s.messages.beginAnswer(chat.id);
  a3.append('Lily had one.');
  a3.finish('complete', {});
  const after = branch();

  // Back to the first version: the whole conversation that followed it, its versions too.
  s.messages.selectVersion(q.id, 1);
  assert.deepEqual(branch(), [
    'user:Who flew the kite?:1/2',
    'assistant:Lily flew it.:1/1',
    'user:And then?:1/1',
    'assistant:They ate cake.:2/2',
  ]);
  assert.equal(s.messages.selectVersion(a2.id, 1).text, 'They went home.', "the branch's answer kept its versions");
  s.messages.selectVersion(a2.id, 2);
  assert.deepEqual(s.messages.require(answerId).text, 'Lily flew it.');
  assert.deepEqual(s.messages.require(q2.id).text, 'And then?');
  // And forward again to the edited branch, as it was.
  s.messages.selectVersion(q.id, 2);
  assert.deepEqual(branch(), after);
  // Only a question's versions carry a branch; an unknown version, or a question being answered, is refused.
  expectStorageError(() => s.messages.selectVersion(q.id, 3), 'NOT_FOUND');
  const streaming = s.messages.beginAnswer(chat.id);
  expectStorageError(() => s.messages.reviseQuestion(q.id, 'Again?'), 'BAD_REQUEST');
  streaming.finish('complete', {});
  expectStorageError(() => s.messages.reviseQuestion(answerId, 'not a question'), 'NOT_FOUND');
  s.close();
});

test('search: the versions shown, case-insensitive, in one document’s chats or in all, newest first', () => {
  const s = open();
  const a = chatWithAnswer(s);
  const other = s.documents.create({ title: 'Other', kind: 'text', fileName: 'other.txt' });
  const chatB = s.chats.create(other.id, 'Kites');
  s.messages.add(chatB.id, { role: 'user', text: 'Is there a KITE in this one?' });
  const all = s.messages.search('kite', { limit: 10 });
  assert.deepEqual(
    all.map((r) => r.chatId),
    [chatB.id, a.chat.id],
  );
  assert.deepEqual(
    s.messages.search('kite', { documentId: a.doc.id, limit: 10 }).map((r) => r.messageId),
    [a.q.id],
  );
  assert.equal(s.messages.search('kite', { limit: 1 }).length, 1);
  // An earlier version is not searched; the one shown is.
  s.messages.reviseAnswer(a.answerId).finish('complete', { tokens: 1 });
  assert.equal(s.messages.search('lily', { limit: 10 }).length, 0);
  s.messages.selectVersion(a.answerId, 1);
  assert.equal(s.messages.search('LILY', { limit: 10 })[0].messageId, a.answerId);
  // LIKE's wildcards are plain characters here.
  assert.equal(s.messages.search('%', { limit: 10 }).length, 0);
  s.close();
});

test('a failed document keeps its code; what can help depends on it, on the stage and on the file being held', () => {
  const s = open();
  const d = s.documents.create({ title: 'Scan', kind: 'pdf', fileName: 'scan.pdf' });
  let r = s.documents.update(d.id, { status: 'failed', error: 'scan.pdf is damaged', errorCode: 'CORRUPT' });
  assert.equal(r.errorCode, 'CORRUPT');
  assert.equal(toSummary(r, true).remedy, null, 'a damaged file: trying again cannot help');
  r = s.documents.update(d.id, { status: 'failed', error: 'locked', errorCode: 'PASSWORD_REQUIRED' });
  assert.equal(toSummary(r, true).remedy, 'password');
  assert.equal(toSummary(r, false).remedy, null, 'the file is no longer held');
  r = s.documents.update(d.id, { status: 'failed', error: 'cancelled', errorCode: 'CANCELLED' });
  assert.equal(toSummary(r, true).remedy, 'import');
  assert.deepEqual(DocumentSummary.strict().parse(toSummary(r)), toSummary(r));
  // Once its pages are stored, a failure of the read (an engine crash) is helped by compressing again.
  s.documents.setContent(d.id, { pages: [{ page: 1, text: 'x', tokenStart: 0, tokenEnd: 0 }], tokens: [] });
  r = s.documents.update(d.id, { status: 'failed', error: 'crashed', errorCode: 'ENGINE_CRASHED' });
  assert.equal(toSummary(r).remedy, 'compress');
  // Clearing the error clears the code; a document that is not failed has neither.
  r = s.documents.update(d.id, { status: 'importing', error: null });
  assert.equal(r.errorCode, null);
  assert.equal(r.remedy, null);
  s.close();
});

test('failureRemedy: the file’s own faults get nothing, passwords a prompt, the rest trying again', () => {
  for (const code of ['CORRUPT', 'UNSUPPORTED', 'EMPTY', 'NO_TEXT_LAYER', 'TOO_LARGE', 'ENCRYPTED', 'READ_FAILED'])
    assert.equal(failureRemedy(code, 'import', true), null, code);
  assert.equal(failureRemedy('PASSWORD_WRONG', 'import', true), 'password');
  for (const code of ['ENGINE_CRASHED', 'CANCELLED', 'NO_MODEL', null]) {
    assert.equal(failureRemedy(code, 'compress', false), 'compress', String(code));
    assert.equal(failureRemedy(code, 'import', true), 'import', String(code));
    assert.equal(failureRemedy(code, 'import', false), null, String(code));
  }
});

test('chat titles from the first question: first line with words, short, cut at a word', () => {
  assert.equal(titleFromQuestion('  Who   flew\tthe kite?  \nAnd why?'), 'Who flew the kite?');
  assert.equal(titleFromQuestion('> quoted\n'), 'quoted');
  assert.equal(titleFromQuestion('\n\n## What is on page 2?'), 'What is on page 2?');
  assert.equal(titleFromQuestion('?!\n...'), null);
  const long = titleFromQuestion(
    'What does the report say about the budget of the garden club in the second half of the year?',
  )!;
  assert.ok(long.length <= TITLE_CHARS, long);
  assert.match(long, /^What does the report say about the budget of the garden\w*…$/);
  assert.equal(titleFromQuestion('x'.repeat(100))!.length, TITLE_CHARS);
  assert.ok(isUntitled('New chat') && isUntitled('Chat 12'));
  assert.ok(!isUntitled('Kites') && !isUntitled('Chat about kites'));
});

test('export: Markdown for people, JSON with every field; a safe file name', () => {
  const s = open();
  const { doc, chat, answerId } = chatWithAnswer(s);
  s.messages.reviseAnswer(answerId).finish('complete', {});
  s.messages.selectVersion(answerId, 1);
  const messages = s.messages.list(chat.id);
  const summary = toSummary(s.documents.require(doc.id));
  const md = exportChat({ ...chat, title: 'Kites: who?' }, summary, messages, 'markdown');
  assert.equal(md.fileName, 'Kites who.md');
  assert.equal(md.mimeType, 'text/markdown');
  assert.equal(
    md.text,
    '# Kites: who?\n\nAbout *Report* (report.txt).\n\n## Question\n\nWho flew the kite?\n\n## Answer\n\nLily flew it.\n\n' +
      '*page 1 · version 1 of 2*\n',
  );
  const json = exportChat(chat, summary, messages, 'json');
  assert.equal(json.fileName, 'New chat.json');
  const parsed = JSON.parse(json.text) as { chat: unknown; messages: unknown[]; document: { fileName: string } };
  assert.deepEqual(parsed.messages, messages);
  assert.equal(parsed.document.fileName, 'report.txt');
  assert.equal(exportFileName('../../etc/passwd', 'json'), 'etc passwd.json');
  assert.equal(exportFileName('///', 'markdown'), 'chat.md');
  s.close();
});

test('a search hit: the text around the match, cut at words, with the match marked', () => {
  const text = `${'word '.repeat(30)}the red KITE flew high ${'again '.repeat(30)}`;
  const hit = searchHit(
    {
      messageId: 'm',
      chatId: 'c',
      documentId: 'd',
      chatTitle: 'T',
      role: 'assistant',
      text,
      createdAt: '2026-01-01T00:00:00.000Z',
    },
    'kite',
  );
  assert.deepEqual(ChatSearchHit.strict().parse(hit), hit);
  assert.equal(hit.snippet.slice(hit.matchStart, hit.matchEnd), 'KITE');
  assert.ok(hit.snippet.startsWith('…word') && hit.snippet.endsWith('again…'), hit.snippet);
  assert.ok(hit.snippet.length < 140);
});
