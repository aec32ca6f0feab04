// DocumentsService's import entry points on a real app core (storage, the engine process, stories260K):
// a path that is not a regular file is refused at once, before any record is made;
// an upload handed over as a temporary file is imported and its file removed, whether the import goes on or
// the file is refused; the comparison of two methods on a document, by default its method and the counterpart;
// a range of pages to compress instead of a document read with re-based positions, refused when it does not fit;
// after a range read every page keeps its text, the cache's prefix holds the range only, and the whole
// document can be compressed again.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { compareCounterpart, methods, type EventPayload } from '../electron/api/contract.ts';
import { METHOD_NAMES, RECOMMENDED_METHOD } from '../electron/shared/kv/methods.ts';
import { createAppCore, type AppCore } from '../electron/services/app-core.ts';
import { tokenizeFormatted } from '../electron/services/prefix.ts';
import { fittingEnds, fittingPages } from '../electron/shared/room.ts';
import { missing, repoRoot, sharedModel } from './helpers/shared.ts';
import { taskDone, testCore } from './helpers/test-core.ts';

const model = sharedModel('stories260K.gguf');
const skip = missing(model);
const dir = mkdtempSync(join(tmpdir(), 'folio-docs-service-'));
let core: AppCore;

before(async () => {
  if (skip) return;
  core = await testCore(join(dir, 'library'), model);
});
after(async () => {
  await core?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('import by path: /dev/zero is refused at once, with no document made', {
  skip: skip || (process.platform === 'win32' && 'POSIX paths'),
}, async () => {
  const count = core.documents.library.list().length;
  const t0 = performance.now();
  await assert.rejects(
    core.documents.imports.import({ path: '/dev/zero' }),
    (e: { code: string; message: string }) =>
      e.code === 'READ_FAILED' && /cannot import \/dev\/zero: it is a device, not a document/.test(e.message),
  );
  assert.ok(performance.now() - t0 < 1000, `took ${(performance.now() - t0).toFixed(0)} ms`);
  assert.equal(core.documents.library.list().length, count, 'no document record');
  await assert.rejects(core.documents.imports.import({ path: join(dir, 'nope.txt') }), /there is no such file/);
});

test('importUpload: the temporary file is imported, then removed; a refused one is removed too', { skip }, async () => {
  const tempPath = join(dir, 'upload-1');
  writeFileSync(tempPath, 'Once upon a time, there was a little dog named Max.\n\nMax liked to run in the park.\n');
  const r = await core.documents.imports.importUpload({ fileName: 'C:\\Users\\me\\max.txt', tempPath });
  assert.ok(!existsSync(tempPath), 'the service removed the upload once read');
  const done = await taskDone(core, r.taskId);
  assert.equal(done.ok, true, done.error ?? '');
  const doc = core.documents.library.get(r.documentId);
  assert.equal(doc.fileName, 'max.txt');
  assert.equal(doc.title, 'Once upon a time, there was a little dog named Max.');
  assert.match(doc.pageList[0].text, /Max liked to run in the park\./);

  const bad = join(dir, 'upload-2');
  writeFileSync(bad, Buffer.from([0x4d, 0x5a, 0x90, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0xff, 0xff, 0, 0]));
  const count = core.documents.library.list().length;
  await assert.rejects(
    core.documents.imports.importUpload({ fileName: 'setup.exe', tempPath: bad }),
    (e: { code: string }) => e.code === 'UNSUPPORTED',
  );
  assert.ok(!existsSync(bad), 'a refused upload is removed too');
  assert.equal(core.documents.library.list().length, count, 'no document record for a refused upload');
});

test('a long read killed or quit half-way goes on from its last checkpoint', { skip }, async () => {
  const library = join(dir, 'resume-library');
  const open = () =>
    createAppCore({
      dataDir: library,
      model,
      models: { discovery: { knownPlaces: false, systemWide: false } },
      readCheckpointSeconds: 0,
    });
  // Twelve pages of stories: many times stories260K's context, read in chunks with re-based positions. Long
  // enough that the reads below are stopped well before their end: progress events come at most every 100 ms,
  // and a read of six pages (~300 ms) could end before a stop from an event past its middle took effect.
  const story = readFileSync(join(repoRoot, 'test/docs/lily-and-the-red-kite.txt'), 'utf8');
  const text = Array.from({ length: 12 }, (_, i) => `Page ${i + 1}. ${story}`).join('\f');
  const first = await open();
  /** Progress of the document's reads: [done, total] as reported. */
  const progressOf = (c: AppCore, id: string, onEach?: (done: number, total: number) => void) => {
    const seen: number[] = [];
    c.bus.subscribe((event, payload) => {
      const p = payload as EventPayload<'task.progress'>;
      if (event === 'task.progress' && p.documentId === id && p.kind === 'prefill' && p.total > 1) {
        seen.push(p.done);
        onEach?.(p.done, p.total);
      }
    });
    return seen;
  };
  writeFileSync(join(dir, 'long.txt'), text);
  let killed = false;
  const r = await first.documents.imports.import({ path: join(dir, 'long.txt') });
  progressOf(first, r.documentId, (done, total) => {
    if (!killed && done > total / 4 && done < total) {
      killed = true;
      process.kill(first.engine.client.status().pid!, 'SIGKILL');
    }
  });
  const crashed = await taskDone(first, r.taskId);
  assert.equal(crashed.ok, false);
  assert.match(
    first.documents.library.get(r.documentId).error ?? '',
    /trying again continues the read from where it stopped$/,
  );

  // Try again: the read goes on from its checkpoint, past the half.
  const again = progressOf(first, r.documentId);
  const retry = first.documents.reader.recompress({ documentId: r.documentId });
  assert.equal((await taskDone(first, retry.taskId)).ok, true);
  assert.ok(again[0] > 0, `resumed at ${again[0]}`);
  const read = first.documents.library.get(r.documentId);
  assert.equal(read.status, 'ready');
  assert.ok(read.stats!.rebased && read.stats!.prefixTokens === read.tokens);

  // A quit in the middle of a read: the next start goes on by itself.
  let quit: Promise<void> | null = null;
  const re = first.documents.reader.recompress({ documentId: r.documentId });
  progressOf(first, r.documentId, (done, total) => {
    if (!quit && done > total / 4 && done < total) quit = first.close();
  });
  await taskDone(first, re.taskId).catch(() => {});
  await quit;
  const second = await open();
  // (A read that ended before the quit would leave nothing to resume, and the wait below would never end.)
  assert.notEqual(second.documents.library.get(r.documentId).status, 'ready', 'the quit came after the read had ended');
  const resumed = progressOf(second, r.documentId);
  await new Promise<void>((resolve) => {
    const off = second.bus.subscribe((event, payload) => {
      const d = payload as EventPayload<'documents.changed'>;
      if (event === 'documents.changed' && d.id === r.documentId && (d.status === 'ready' || d.status === 'failed')) {
        off();
        resolve();
      }
    });
  });
  assert.equal(
    second.documents.library.get(r.documentId).status,
    'ready',
    second.documents.library.get(r.documentId).error ?? '',
  );
  assert.ok(resumed[0] > 0, `resumed at ${resumed[0]}`);
  await second.close();
});

test('a method that re-reads the document (KVzip) says so while it reads, and reads it whole', { skip }, async () => {
  core.storage.settings.update({
    compression: { ...core.storage.settings.get().compression, method: 'ada-kvzip-global', budget: 0.3 },
  });
  try {
    const story = readFileSync(join(repoRoot, 'test/docs/sam-builds-a-boat.txt'), 'utf8');
    writeFileSync(join(dir, 'boat.txt'), story);
    const r = await core.documents.imports.import({ path: join(dir, 'boat.txt') });
    const messages: string[] = [];
    let last = { done: 0, total: 0 };
    const off = core.bus.subscribe((event, payload) => {
      const p = payload as EventPayload<'task.progress'>;
      if (event === 'task.progress' && p.documentId === r.documentId && p.kind === 'prefill' && p.total > 1) {
        messages.push(p.message);
        last = { done: p.done, total: p.total };
      }
    });
    const done = await taskDone(core, r.taskId);
    off();
    assert.equal(done.ok, true, done.error ?? '');
    const doc = core.documents.library.get(r.documentId);
    assert.equal(doc.stats?.method, 'ada-kvzip-global');
    assert.ok(messages.length > 0, 'progress was reported');
    assert.match(
      messages.at(-1)!,
      new RegExp(`^reading ${doc.tokens} tokens into the model( in chunks)?, each read twice`),
    );
    assert.equal(last.total, 2 * doc.tokens, 'progress counts both reads');
  } finally {
    core.storage.settings.update({
      compression: { ...core.storage.settings.get().compression, method: 'ada-snapkv', budget: 0.2 },
    });
  }
});

test('compare: by default the document’s method against its counterpart; any two named methods otherwise', {
  skip,
}, async () => {
  const tempPath = join(dir, 'upload-compare');
  writeFileSync(tempPath, 'Once upon a time, there was a little cat named Tom.\n\nTom liked to sleep in the sun.\n');
  const r = await core.documents.imports.importUpload({ fileName: 'tom.txt', tempPath });
  const done = await taskDone(core, r.taskId);
  assert.equal(done.ok, true, done.error ?? '');
  const method = core.documents.library.get(r.documentId).compression!.method;
  const byDefault = await core.documents.inspector.compare({ documentId: r.documentId, budget: 0.5 });
  assert.deepEqual([byDefault.a.method, byDefault.b.method], [method, compareCounterpart(method)]);
  assert.equal(byDefault.budget, 0.5);
  const named = await core.documents.inspector.compare({
    documentId: r.documentId,
    budget: 0.5,
    a: 'streaming',
    b: 'critical-global',
  });
  assert.deepEqual([named.a.method, named.b.method], ['streaming', 'critical-global']);
  // A pyramid method is compared with the settings' steepness (beta), as a read with them compresses.
  const layerBudgets = async (beta: number) => {
    core.storage.settings.update({ compression: { ...core.storage.settings.get().compression, beta } });
    const c = await core.documents.inspector.compare({
      documentId: r.documentId,
      budget: 0.5,
      a: 'pyramidkv',
      b: 'pyramidkv',
    });
    return c.a.layers.map((l) => l.budget);
  };
  try {
    assert.notDeepEqual(await layerBudgets(1), await layerBudgets(1000));
  } finally {
    core.storage.settings.update({ compression: { ...core.storage.settings.get().compression, beta: undefined } });
  }
  // The contract names the methods from the table: an unknown one is refused before the service sees it.
  const params = methods['documents.compare'].params;
  assert.equal(params.safeParse({ documentId: r.documentId, a: 'snapkv', b: 'bogus' }).success, false);
});

test('a range of pages: one that fits from a later page is read at its own positions, every page kept; a longer one is refused at once', {
  skip,
}, async () => {
  // A story a paragraph a page: longer than stories260K's 512 positions less the room (128), so read with
  // re-based positions, but a few pages fit.
  const story = readFileSync(join(repoRoot, 'test/docs/mia-and-the-rainy-day.txt'), 'utf8');
  writeFileSync(join(dir, 'mia.txt'), story.trim().split(/\n\n+/).join('\f'));
  const r = await core.documents.imports.import({ path: join(dir, 'mia.txt') });
  assert.equal((await taskDone(core, r.taskId)).ok, true);
  const whole = core.documents.library.get(r.documentId);
  assert.equal(whole.stats?.rebased, true, `${whole.tokens} tokens in ${whole.contextTokens} positions`);
  const read = { pages: whole.pageList, prefixTokens: whole.tokens, contextTokens: whole.contextTokens! };
  const ends = fittingEnds(read, null);
  // The note names the pages that fit from the first, by the same rule.
  const fit = fittingPages(read, null);
  assert.ok(fit, 'the first page fits');
  assert.match(whole.readNote!, new RegExp(`re-based positions.* Pages ${fit[0]} to ${fit[1]} fit\\.$`));
  // A later first page whose longest range stops before the last page.
  const i = ends.findIndex((last, k) => k > 0 && last !== null && last < whole.pageList.at(-1)!.page);
  assert.ok(i > 0, `some range from a later page ends before the last: ${JSON.stringify(ends)}`);
  const first = whole.pageList[i].page;
  const last = ends[i]!;
  const beyond = whole.pageList.find((p) => p.page > last)!.page;

  assert.throws(
    () => core.documents.reader.recompress({ documentId: r.documentId, pages: [first, beyond] }),
    (e: { code: string; message: string }) =>
      e.code === 'PAGES_DO_NOT_FIT' &&
      e.message ===
        `pages ${first} to ${beyond} do not fit the context of 512 positions with 128 kept for the conversation: ` +
          `from page ${first}, compress up to page ${last}`,
  );
  assert.throws(
    () => core.documents.reader.recompress({ documentId: r.documentId, pages: [90, 99] }),
    /no pages 90 to 99/,
  );
  // The contract refuses a range that ends before it starts.
  const params = methods['documents.recompress'].params;
  assert.equal(params.safeParse({ documentId: r.documentId, pages: [3, 2] }).success, false);
  const unchanged = core.documents.library.get(r.documentId);
  assert.deepEqual([unchanged.status, unchanged.pageList], ['ready', whole.pageList], 'nothing started');

  const done = await taskDone(
    core,
    core.documents.reader.recompress({ documentId: r.documentId, pages: [first, last] }).taskId,
  );
  assert.equal(done.ok, true, done.error ?? '');
  const ranged = core.documents.library.get(r.documentId);
  assert.equal(ranged.stats?.rebased, false, ranged.readNote ?? '');
  assert.deepEqual(ranged.readPages, [first, last]);
  const inRange = (page: number) => page >= first && page <= last;
  // Every page keeps its text; those left out have no tokens.
  assert.deepEqual(
    ranged.pageList.map((p) => [p.page, p.text]),
    whole.pageList.map((p) => [p.page, p.text]),
  );
  assert.equal(ranged.pages, whole.pages);
  for (const p of ranged.pageList)
    if (inRange(p.page)) assert.ok(p.tokenStart >= 0 && p.tokenEnd > p.tokenStart, `page ${p.page} was read`);
    else assert.deepEqual([p.tokenStart, p.tokenEnd], [-1, -1], `page ${p.page} was not read`);
  assert.ok(
    ranged.passages.every((x) => inRange(x.page)),
    'the retention map covers the pages read',
  );

  // The prefix chats and the OpenAI endpoint go on from is the cache's: the range's pages only, the very
  // tokens the cache was made from.
  const loaded = core.engine.requireModel();
  const format = await core.engine.chatFormat(loaded);
  const prefix = core.documents.reader.prefixConversation(
    r.documentId,
    format,
    core.storage.settings.get().systemPrompt,
  );
  for (const p of whole.pageList) assert.equal(prefix.prefixText.includes(p.text), inRange(p.page), `page ${p.page}`);
  const t = await tokenizeFormatted(
    (x, o) => core.engine.call('tokenize', { modelId: loaded.engineId, text: x, ...o }),
    format,
    prefix.prefixText,
    true,
  );
  assert.deepEqual(Array.from(t.tokens), Array.from(core.storage.documents.tokens(r.documentId)!));
  assert.equal(t.tokens.length, ranged.tokens);

  // The pages left out were not measured: no range offered reaches them, and the core refuses one that does.
  const rangedRead = { pages: ranged.pageList, prefixTokens: ranged.tokens, contextTokens: ranged.contextTokens! };
  fittingEnds(rangedRead, null).forEach((end, k) => {
    const page = ranged.pageList[k].page;
    if (!inRange(page)) assert.equal(end, null, `no range from page ${page}`);
    else assert.ok(end === null || end <= last, `a range from page ${page} ends by page ${last}`);
  });
  assert.throws(
    () => core.documents.reader.recompress({ documentId: r.documentId, pages: [first, beyond] }),
    (e: { code: string; message: string }) =>
      e.code === 'PAGES_DO_NOT_FIT' &&
      e.message.startsWith(
        `pages ${first} to ${beyond} reach beyond the pages the last read took in (${first} to ${last}): `,
      ),
  );

  // Compressing the whole document again reads every page, as the first read did.
  const again = await taskDone(core, core.documents.reader.recompress({ documentId: r.documentId }).taskId);
  assert.equal(again.ok, true, again.error ?? '');
  const restored = core.documents.library.get(r.documentId);
  assert.equal(restored.readPages, null);
  assert.deepEqual(restored.pageList, whole.pageList, 'every page has its token range again');
  assert.equal(restored.stats?.rebased, true);
  assert.equal(restored.readNote, whole.readNote);
});

test('compareCounterpart: Ada against uniform of the same scorer and schedule, the recommended method for the rest', () => {
  assert.equal(compareCounterpart('ada-snapkv'), 'snapkv');
  assert.equal(compareCounterpart('snapkv'), 'ada-snapkv');
  assert.equal(compareCounterpart('ada-pyramidkv'), 'pyramidkv');
  assert.equal(compareCounterpart('kvzip-global'), 'ada-kvzip-global');
  assert.equal(compareCounterpart('full'), RECOMMENDED_METHOD);
  assert.equal(compareCounterpart('streaming'), RECOMMENDED_METHOD);
  for (const m of METHOD_NAMES) assert.notEqual(compareCounterpart(m), m, m);
});

test('the imported original is kept once by content, served by id, and removed with the last document made from it', {
  skip,
}, async () => {
  await core.dispatcher.dispatch('settings.update', { compression: { method: 'ada-snapkv', budget: 0.3 } });
  // Content of its own (another test imports the story as it is).
  const bytes = Buffer.concat([
    readFileSync(join(repoRoot, 'test/docs/sam-builds-a-boat.txt')),
    Buffer.from('\nAnd that is the story of the boat.\n'),
  ]);
  const dataBase64 = bytes.toString('base64');
  const a = await core.documents.imports.import({ fileName: 'sam.txt', dataBase64 });
  const b = await core.documents.imports.import({ fileName: 'sam again.txt', dataBase64, keepDuplicate: true });
  for (const r of [a, b]) assert.equal((await taskDone(core, r.taskId)).ok, true);
  const fa = core.documents.library.file(a.documentId);
  const fb = core.documents.library.file(b.documentId);
  assert.ok(fa && fb);
  assert.equal(fa.path, fb.path, 'one file for the same content');
  assert.deepEqual(readFileSync(fa.path), bytes);
  assert.equal(fa.type, 'text/plain; charset=utf-8');
  assert.equal(core.documents.library.file(a.documentId, 'html'), null, 'only a Word document has HTML');
  assert.equal(core.documents.library.get(a.documentId).hasFile, true);
  assert.equal(core.documents.library.file('no-such-document'), null);

  // The retention map leaves the observation window out: it is reported apart, where the read ends.
  const d = core.documents.library.get(a.documentId);
  assert.ok(d.stats?.compressed, 'the document was compressed');
  assert.ok(d.keptWindow, 'the window is reported');
  assert.equal(d.keptWindow.tokens, d.stats.window);
  assert.ok(d.passages.length > 1);
  for (const p of d.passages) {
    assert.ok(
      p.page < d.keptWindow.page || (p.page === d.keptWindow.page && p.end <= d.keptWindow.start),
      'no passage inside the window',
    );
  }
  // Every token of the window is kept by every (layer, KV head) slot: that is why it is drawn apart.
  const slots = d.stats.layers.length * d.stats.layers[0].heads.length;
  assert.ok(d.stats.tokenRetention.slice(-d.stats.window).every((r) => r === slots));

  await core.documents.library.delete(a.documentId);
  assert.ok(existsSync(fb.path), 'still used by the other document');
  await core.documents.library.delete(b.documentId);
  assert.ok(!existsSync(fb.path), 'removed with the last document made from it');
});

test('a Word document keeps the HTML mammoth made of it at import, served as text beside its original', {
  skip,
}, async () => {
  const { sampleDocx } = await import('./helpers/make-docx.ts');
  const bytes = await sampleDocx({ title: 'Kept as written' });
  const r = await core.documents.imports.import({
    fileName: 'written.docx',
    dataBase64: Buffer.from(bytes).toString('base64'),
  });
  assert.equal((await taskDone(core, r.taskId)).ok, true);
  const d = core.documents.library.get(r.documentId);
  assert.equal(d.kind, 'docx');
  assert.equal(d.hasHtml, true);
  const html = core.documents.library.file(r.documentId, 'html');
  assert.ok(html);
  assert.equal(html.type, 'text/plain; charset=utf-8', 'never served as a page of the app');
  const text = readFileSync(html.path, 'utf8');
  assert.match(text, /<(h1|h2|p|table)\b/);
  assert.ok(
    d.pageList[0].text
      .split(/\s+/)
      .slice(0, 5)
      .every((w) => text.includes(w.replace(/[•|]/g, ''))),
  );
  const original = core.documents.library.file(r.documentId);
  assert.ok(original);
  await core.documents.library.delete(r.documentId);
  assert.ok(!existsSync(html.path) && !existsSync(original.path), 'both go with the document');
});
