// A chat over a set of documents (issue 41): the documents' saved caches placed side by side in one session, the
// model attending to every kept entry of every one, nothing read again. On needle-llama (a retrieval circuit that
// copies the digits after "is "; it cannot tell needles apart by name, so each set holds one needle): five
// documents, the needle in each of them in turn, is answered, and cited in the right document; the set chat is
// saved and reopened; a set that does not fit is refused with the ways out; the meter and memory add up.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { Message } from '../electron/api/contract.ts';
import type { AppCore } from '../electron/services/app-core.ts';
import { setEvidence, setText } from '../electron/services/chat-set.ts';
import { missing, repoRoot, sharedModel } from './helpers/shared.ts';
import { taskDone, testCore } from './helpers/test-core.ts';

const model = sharedModel('needle-llama.gguf');
const skip = missing(model);
const STORIES = ['lily-and-the-red-kite', 'mia-and-the-rainy-day', 'sam-builds-a-boat', 'tom-and-the-lost-puppy'];
const CODES = ['7306', '8146', '9052', '2617', '5843'];
const NAMES = ['Lily', 'Mia', 'Sam', 'Tom', 'Twinkle'];
/** The first sentences of a story each (about 60 tokens): five of them and the question stay well within the
 * ~600 positions needle-llama's circuit reaches back (its README), at their own spacing. */
const halves = [...STORIES, 'the-little-star-who-was-shy'].map((name) => {
  const s = readFileSync(join(repoRoot, `test/docs/${name}.txt`), 'utf8')
    .replace(/\s+/g, ' ')
    .trim()
    .split(/(?<=\.) /);
  return s.slice(0, 3);
});
const needle = (code: string) => `The secret code is ${code}.`;
const planted = (i: number) => [...halves[i].slice(0, 2), needle(CODES[i]), ...halves[i].slice(2)].join(' ');

let dir = '';
let core: AppCore;
/** haystack[i]: story half i; withNeedle[i]: the same with its needle planted. */
const haystack: string[] = [];
const withNeedle: string[] = [];

async function importText(name: string, text: string): Promise<string> {
  const r = await core.documents.imports.import({
    fileName: `${name}.txt`,
    dataBase64: Buffer.from(text).toString('base64'),
  });
  const done = await taskDone(core, r.taskId);
  assert.ok(done.ok, done.error ?? '');
  return r.documentId;
}

/** The bytes of one cache entry, from a document's own read (its kept bytes over its kept entries). */
function entryBytes(documentId: string): number {
  const kept = core.storage.stats
    .get(documentId)!
    .layers.reduce((n, l) => n + l.heads.reduce((a, h) => a + h.kept, 0), 0);
  return core.storage.documents.require(documentId).kvBytesKept! / kept;
}

async function ask(chatId: string, text: string): Promise<Message> {
  await core.chats.send({ chatId, text });
  await core.chats.idle(chatId);
  return core.chats.get(chatId).messages.at(-1)!;
}

before(async () => {
  if (skip) return;
  dir = mkdtempSync(join(tmpdir(), 'folio-chat-set-'));
  core = await testCore(join(dir, 'library'), model);
  // Compressed, but not so hard that a question-agnostic cache of a 70-token document loses the needle's digits
  // (at 20% it keeps 14 entries a head): the test is about the assembly; docs/quality.md measures the budgets.
  core.storage.settings.update({
    sampling: { temperature: 0, maxTokens: 4 },
    compression: { ...core.storage.settings.get().compression, budget: 0.6 },
  });
  for (let i = 0; i < 5; i++) {
    // Titles without digits: the set's headers name them, and needle-llama copies any digits after a space.
    haystack.push(await importText(NAMES[i], halves[i].join(' ')));
    withNeedle.push(await importText(`${NAMES[i]} with a code`, planted(i)));
  }
});

after(async () => {
  await core?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("a set's text: each document after a header naming it, its own text where the spans say", () => {
  const { text, spans } = setText([
    { title: 'A', text: 'one.' },
    { title: 'B', text: 'two.' },
  ]);
  assert.equal(text, 'Document one of two: A\n\none.\n\nDocument two of two: B\n\ntwo.');
  assert.deepEqual(
    spans.map(([a, b]) => text.slice(a, b)),
    ['one.', 'two.'],
  );
});

test("a packed set's evidence: the pages of any document that share the most words with the answer, each named", () => {
  const page = (n: number, text: string) => ({ page: n, text, tokenStart: 0, tokenEnd: 0 });
  const documents = [
    {
      id: 'lily',
      title: 'Lily',
      kvPath: '',
      charMap: null,
      pages: [page(1, 'Lily had a red kite with a long blue tail.')],
    },
    {
      id: 'tom',
      title: 'Tom',
      kvPath: '',
      charMap: null,
      pages: [page(1, 'Tom heard a sad sound.'), page(2, 'The puppy was wet and cold under the bush.')],
    },
  ];
  const cited = setEvidence('The puppy was wet and cold, Tom said.', { documents })!;
  assert.deepEqual(
    cited.map((c) => [c.documentId, c.page, c.basis, c.share, c.sentences.length]),
    [['tom', 2, 'words', 1, 0]],
    'the page that shares three-word runs; not the one that shares only a name',
  );
  assert.equal(setEvidence('Hello there friend.', { documents }), null, 'nothing shared, nothing cited');
});

test('five documents in one chat: the needle is answered and cited in whichever document holds it', {
  skip,
}, async () => {
  const kvFiles = [...haystack, ...withNeedle].map((id) => core.storage.documents.require(id).kvPath!);
  const saved = kvFiles.map((f) => statSync(f).mtimeMs);
  for (let k = 0; k < 5; k++) {
    const ids = haystack.map((h, i) => (i === k ? withNeedle[i] : h));
    const chat = core.chats.create({ documentId: ids[0], others: ids.slice(1) });
    assert.deepEqual(chat.documentIds, ids);
    const a = await ask(chat.id, 'What is the secret code? The secret code is ');
    assert.equal(a.status, 'complete', a.error ?? '');
    assert.match(a.text, new RegExp(`^${CODES[k]}`), `needle in document ${k + 1}: ${JSON.stringify(a.text)}`);
    // The citation names the document and the needle's sentence in it.
    const top = a.citations?.[0];
    assert.ok(top, 'the answer cites a page');
    assert.equal(top.documentId, withNeedle[k], `cited document for the needle in document ${k + 1}`);
    const page = core.documents.library.get(withNeedle[k]).pageList.find((p) => p.page === top.page)!;
    assert.equal(page.text.slice(top.sentences[0].start, top.sentences[0].end).trim(), needle(CODES[k]));
    // The meter: the documents at their own spacing, the memory the sum of their caches; the library's estimate
    // before the chat opened said as much.
    const { usage } = core.chats.get(chat.id);
    const estimate = core.documents.library.setEstimate({ documentIds: ids });
    assert.equal(estimate.placement, 'own');
    // The meter's memory is the engine's: every entry of the set's prefix, the documents' (as their shares count
    // them) and the text between them, read whole (each document's own cache held its compressed prefix instead).
    const held = usage.setShares!.reduce((n, d) => n + d.entries.flat().reduce((a, b) => a + b, 0), 0);
    const perEntry = entryBytes(ids[0]);
    assert.ok(usage.kvBytesKept! > held * perEntry && usage.kvBytesKept! % perEntry === 0, `${usage.kvBytesKept}`);
    assert.ok(usage.kvBytesKept! < 1.5 * estimate.keptBytes!, `${usage.kvBytesKept} against ${estimate.keptBytes}`);
    const assembled = usage.systemTokens + usage.documentTokens;
    assert.ok(
      Math.abs(estimate.positions - assembled) <= 5 * 8,
      `estimated ${estimate.positions} positions, assembled ${assembled}`,
    );
    assert.ok(estimate.moreByPositions >= 1 && estimate.moreByMemory! > 1000);
    assert.equal(usage.documentPacked, false);
    const docs = ids.map((id) => core.storage.documents.require(id));
    assert.equal(
      usage.kvBytesFull,
      docs.reduce((n, d) => n + d.kvBytesFull!, 0),
    );
    assert.ok(usage.systemTokens + usage.documentTokens + usage.conversationTokens <= usage.contextTokens);
  }
  // Nothing was read again: every saved cache is as it was.
  assert.deepEqual(
    kvFiles.map((f) => statSync(f).mtimeMs),
    saved,
  );
});

test('a set chat is saved with its documents and reopened; it goes with any of its documents', { skip }, async () => {
  const ids = [haystack[0], withNeedle[1], haystack[2]];
  const chatId = core.chats.create({ documentId: ids[0], others: ids.slice(1), title: 'three' }).id;
  const first = await ask(chatId, 'What is the secret code? The secret code is ');
  assert.match(first.text, /^8146/, `${first.status} ${first.error}`);
  // Listed under each of its documents, found by a search in any.
  for (const id of ids) assert.ok(core.chats.list(id).some((c) => c.id === chatId));
  assert.ok(core.chats.search({ query: 'secret code', documentId: ids[2] }).some((h) => h.chatId === chatId));
  // The export lists the documents.
  const md = core.chats.export({ chatId, format: 'markdown' }).text;
  assert.match(md, /About 3 documents:\n1\. \*Lily\* \(Lily\.txt\)\n2\. \*Mia with a code\*/);
  assert.match(md, /\*Mia with a code\* p\. 1/);
  // Reopened (a new core on the same library): the chat, its documents and its answer; it answers again.
  await core.close();
  core = await testCore(join(dir, 'library'), model);
  const reopened = core.chats.get(chatId);
  assert.deepEqual(reopened.chat.documentIds, ids);
  assert.equal(reopened.messages.length, 2);
  const again = await ask(chatId, 'What is the secret code again? The secret code is ');
  assert.match(again.text, /^8146/, `${JSON.stringify(again.text)} ${again.status} ${again.error}`);
  // A document of the set deleted (not the first): the chat goes with it.
  await core.documents.library.delete(ids[2]);
  assert.throws(() => core.chats.get(chatId), /no chat/);
  haystack[2] = await importText('Sam again', halves[2].join(' ') + ' ');
});

test('one budget over a set: its documents’ entries chosen again together; the meter, the shares and the memory follow', {
  skip,
}, async () => {
  const ids = [haystack[0], withNeedle[1], haystack[3]];
  const chatId = core.chats.create({ documentId: ids[0], others: ids.slice(1) }).id;
  const first = await ask(chatId, 'What is the secret code? The secret code is ');
  assert.match(first.text, /^8146/, `${first.status} ${first.error}`);
  const entries = (u: { setShares?: { entries: number[][] }[] }) =>
    (u.setShares ?? []).map((d) => d.entries.flat().reduce((a, b) => a + b, 0));
  const own = core.chats.get(chatId).usage;
  assert.equal(own.setShares?.length, 3, 'each document’s share');
  assert.deepEqual(
    own.setShares!.map((d) => d.before),
    entries(own),
    'without one budget, each keeps what its read kept',
  );

  const changed = await core.chats.setReading({ chatId, reading: 'assembled', setBudget: 0.5 });
  assert.equal(changed.setBudget, 0.5);
  const second = await ask(chatId, 'What is the secret code again? The secret code is ');
  assert.equal(second.status, 'complete', `${second.error}`);
  const shared = core.chats.get(chatId).usage;
  const [was, now] = [entries(own), entries(shared)];
  const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
  assert.deepEqual(
    shared.setShares!.map((d) => d.before),
    was,
    'the shares say what each kept before the budget',
  );
  assert.ok(sum(now) < sum(was) && sum(now) > sum(was) / 3, `${sum(now)} of ${sum(was)} entries`);
  assert.equal(
    own.kvBytesKept! - shared.kvBytesKept!,
    (sum(was) - sum(now)) * entryBytes(ids[0]),
    'the meter’s memory is the engine’s, less the entries the budget dropped',
  );
  // Saved with the chat: reopened, it is read the same way.
  await core.close();
  core = await testCore(join(dir, 'library'), model);
  assert.equal(core.chats.get(chatId).chat.setBudget, 0.5);
  await ask(chatId, 'And the code? The secret code is ');
  assert.deepEqual(entries(core.chats.get(chatId).usage), now, 'the same entries chosen again');
  // Only an assembled set takes one: read together it already is one read; one document has none to share.
  await assert.rejects(
    core.chats.setReading({ chatId, reading: 'together', setBudget: 0.5 }),
    /already has one budget/,
  );
  const one = core.chats.create({ documentId: ids[0] }).id;
  await assert.rejects(core.chats.setReading({ chatId: one, reading: 'assembled', setBudget: 0.5 }), /only a set/);
  assert.equal((await core.chats.setReading({ chatId, reading: 'assembled', setBudget: null })).setBudget, null);
});

test('read together: the set read as one document, saved for the chat and loaded again; it answers and cites as well', {
  skip,
}, async () => {
  const ids = haystack.map((h, i) => (i === 2 ? withNeedle[i] : h));
  const chatId = core.chats.create({ documentId: ids[0], others: ids.slice(1) }).id;
  assert.equal((await core.chats.setReading({ chatId, reading: 'together' })).reading, 'together');
  const a = await ask(chatId, 'What is the secret code? The secret code is ');
  assert.equal(a.status, 'complete', `${a.error}`);
  assert.match(a.text, /^9052/, JSON.stringify(a.text));
  assert.equal(a.citations?.[0]?.documentId, withNeedle[2], 'cited in the document that holds it');
  // Its own cache: one read of the whole set, not the documents' sum.
  const { usage } = core.chats.get(chatId);
  const sum = ids.reduce((n, id) => n + core.storage.documents.require(id).kvBytesKept!, 0);
  assert.ok(usage.kvBytesKept! > 0 && usage.kvBytesKept !== sum);
  const saved = join(dir, 'library', 'caches', `set-${chatId}.folio-kv`);
  const when = statSync(saved).mtimeMs;
  // Reopened: loaded, not read again; the same answer.
  await core.close();
  core = await testCore(join(dir, 'library'), model);
  const b = await ask(chatId, 'What is the secret code again? The secret code is ');
  assert.match(b.text, /^9052/, JSON.stringify(b.text));
  assert.equal(statSync(saved).mtimeMs, when, 'the saved read was loaded');
  // A chat over one document has nothing to read together; deleting the chat removes its read.
  const one = core.chats.create({ documentId: ids[0] }).id;
  await assert.rejects(core.chats.setReading({ chatId: one, reading: 'together' }), /only a set/);
  await core.chats.delete(chatId);
  assert.throws(() => statSync(saved), /ENOENT/);
});

test('a cache saved packed (by an earlier version) is read again, once, when its document joins a set', {
  skip,
}, async () => {
  const [a, b] = [haystack[3], withNeedle[4]];
  const doc = core.storage.documents.require(a);
  // What an earlier version saved for a packed document: the read packed by the engine, every token kept.
  const model = await core.documents.reader.model();
  const h = await core.engine.createSession(model, { ...core.engine.sessionOptions(), nCtx: doc.contextTokens! });
  const { compression } = core.storage.settings.get();
  await core.engine.call('compress', {
    sessionId: h.sessionId,
    tokens: core.storage.documents.tokens(a)!,
    options: { method: compression.method, budget: compression.budget, packPositions: true },
  });
  await core.engine.call('save', { sessionId: h.sessionId, path: doc.kvPath!, meta: '' });
  await core.engine.disposeSession(h.sessionId);
  core.storage.db.prepare(`UPDATE documents SET kept_placement = 'packed' WHERE id = ?`).run(a);
  const before = statSync(doc.kvPath!).mtimeMs;
  const chatId = core.chats.create({ documentId: a, others: [b] }).id;
  const r = await ask(chatId, 'What is the secret code? The secret code is ');
  assert.equal(r.status, 'complete', `${r.error}`);
  assert.match(r.text, /^5843/, JSON.stringify(r.text));
  assert.ok(statSync(doc.kvPath!).mtimeMs > before, 'the packed cache was read again');
});

test('a set too long for its own spacing is packed, or refused with the ways out when packing is not allowed', {
  skip,
}, async () => {
  // Whole stories (about 200 tokens each): five take more than the context leaves with room for the conversation.
  const whole: string[] = [];
  for (const name of [...STORIES, 'the-bunny-who-wanted-to-share']) {
    const text = readFileSync(join(repoRoot, `test/docs/${name}.txt`), 'utf8');
    whole.push(await importText(`${name} whole`, text));
  }
  const compression = core.storage.settings.get().compression;
  core.storage.settings.update({ compression: { ...compression, positions: 'own' } });
  const estimate = core.documents.library.setEstimate({ documentIds: whole });
  assert.equal(estimate.placement, 'packed', 'the library says so before the chat opens');
  assert.equal(estimate.moreByPositions, 0);
  const own = core.chats.create({ documentId: whole[0], others: whole.slice(1) }).id;
  const refused = await ask(own, 'What is the secret code? The secret code is ');
  assert.equal(refused.status, 'failed');
  assert.match(refused.error ?? '', /do not fit the model's context of 1,024 positions .*choose fewer documents/);
  // Auto, at the default budget (the caches are read again for it, on the way): packed, so it fits; its answers
  // have no attention citations. (Whether they are right is the budget's question, docs/quality.md: at 20% a
  // question-agnostic cache of these stories keeps the needle's last digits only.)
  core.storage.settings.update({ compression: { ...compression, positions: 'auto', budget: 0.2 } });
  const packed = core.chats.create({ documentId: whole[1], others: [whole[0], ...whole.slice(2)] }).id;
  const a = await ask(packed, 'What is the secret code? The secret code is ');
  assert.equal(a.status, 'complete', `${a.error}`);
  assert.ok(a.text.length > 0);
  assert.ok(
    (a.citations ?? []).every((c) => c.basis === 'words'),
    'no attention citations: by shared words only',
  );
  const { usage } = core.chats.get(packed);
  assert.equal(usage.documentPacked, true);
  const ownPositions = whole.reduce(
    (n, id) => n + core.storage.documents.pages(id).reduce((m, p) => m + p.tokenEnd - p.tokenStart, 0),
    0,
  );
  assert.ok(
    usage.documentTokens < ownPositions,
    `packed into ${usage.documentTokens} of their own ${ownPositions} positions`,
  );
  assert.ok(usage.systemTokens + usage.documentTokens + usage.conversationTokens <= 1024);
});

test('the OpenAI endpoint answers over a set (document_ids), as the chat does; bad sets are refused', {
  skip,
}, async () => {
  const ids = [haystack[0], haystack[1], withNeedle[2]];
  const signal = new AbortController().signal;
  const req = (over: Record<string, unknown>) => ({
    model: 'folio',
    messages: [{ role: 'user' as const, content: 'What is the secret code? The secret code is ' }],
    max_tokens: 4,
    temperature: 0,
    ...over,
  });
  const r = await core.openai.complete(req({ document_ids: ids }), () => {}, signal);
  assert.match(r.text, /^9052/, JSON.stringify(r.text));
  await assert.rejects(
    core.openai.complete(req({ document_ids: [ids[0], 'nope'] }), () => {}, signal),
    (e: { code?: string }) => e.code === 'DOCUMENT_NOT_FOUND',
  );
  await assert.rejects(
    core.openai.complete(req({ document_ids: [ids[0], ids[0]] }), () => {}, signal),
    /more than once/,
  );
});
