// Long documents end to end in Debian's Chromium (playwright-core), against the real web host, app core and
// engine with stories260K (a 512-token context), as `folio serve` runs them, with the default settings:
// import the six stories of test/docs and a PDF made here of all six (one story a page, far longer than the
// context) through the file picker; each becomes ready; the PDF's document view and inspector say it was read
// with re-based positions, as a quality warning; a question gets a complete streamed answer over the PDF and
// over a story, and the context meter says what the API says; with a smaller conversation room set in
// Settings, the remedy (compress the pages that fit) is offered and works, every page is still there with the
// unread ones marked, and the whole document is compressed again on request. Screenshots at 1280×800 and
// 800×600 go to test/.output/screenshots/long-*.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Locator, Page } from 'playwright-core';

import type { DocumentSummary } from '../electron/api/contract.ts';
import type { WsApi } from '../electron/api/ws-client.ts';
import type { AppCore } from '../electron/services/app-core.ts';
import type { WebHost } from '../electron/web/server.ts';
import { fittingPages } from '../electron/shared/room.ts';
import {
  askWatchingAnswer,
  e2eSkip,
  shots,
  closeE2e,
  openAppPage,
  serveApp,
  storiesDir,
  storiesPdf,
  storyFiles,
} from './helpers/e2e-host.ts';
import { sharedModel } from './helpers/shared.ts';

const model = sharedModel('stories260K.gguf');
const skip = e2eSkip(model);
const docsDir = storiesDir;
const stories = storyFiles;

let dir = '';
let core: AppCore;
let host: WebHost;
let api: WsApi;
let context: BrowserContext;
let page: Page;
let pdfPath = '';
let pdfDoc: DocumentSummary;
let storyDoc: DocumentSummary;
const apiToken = 'e2e-long-token-0123456789abcdef';

/** A screenshot at 1280×800 and one at 800×600, back at 1280×800 after. */
async function shots2(name: string, centre?: Locator) {
  const scroll = () => centre?.evaluate((el) => el.scrollIntoView({ block: 'center' }));
  await scroll();
  await page.screenshot({ path: join(shots, `long-${name}-1280.png`) });
  await page.setViewportSize({ width: 800, height: 600 });
  await scroll();
  await page.screenshot({ path: join(shots, `long-${name}-800.png`) });
  const overflow = await page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
  assert.ok(overflow <= 0, `${name}: no horizontal scrolling at 800 px (${overflow} px too wide)`);
  await page.setViewportSize({ width: 1280, height: 800 });
}

/** All six stories in one PDF, a story a page, titled so that the library names it. */
async function selectDocument(title: string) {
  await page.locator('[data-testid="document"] .doc-title', { hasText: title }).click();
  await page.getByRole('heading', { level: 1, name: title }).waitFor();
}

/** Asks a question in the selected document's chat and waits for the answer to finish, watching it grow. */
async function ask(question: string) {
  await page.getByRole('tab', { name: 'Chat' }).click();
  return askWatchingAnswer(page, question, 120_000);
}

/** The stored chat of a document, its last answer complete and shown as stored, the meter as the API counts. */
async function checkChat(documentId: string) {
  const chats = await api.call('chats.list', { documentId });
  assert.equal(chats.length, 1);
  const stored = await api.call('chats.get', { chatId: chats[0].id });
  const final = stored.messages.at(-1)!;
  assert.equal(final.role, 'assistant');
  assert.equal(final.status, 'complete');
  assert.ok(final.text.trim().length > 0, 'the answer has text');
  const answer = page.locator('[data-testid="msg-assistant"]').last();
  const shown = (await answer.locator('.markdown').innerText()).replace(/\s+/g, ' ').trim();
  assert.equal(shown, final.text.replace(/\s+/g, ' ').trim(), 'the page shows the stored answer');
  const u = stored.usage;
  console.log(`# usage: ${JSON.stringify(u)}`);
  assert.ok(u.systemTokens > 0, 'the system prompt takes positions');
  const used = u.systemTokens + u.documentTokens + u.conversationTokens;
  const meter = page.getByRole('meter', { name: 'Context used' });
  await page.waitForFunction(
    (want) =>
      document.querySelector('meter[aria-label="Context used"]')?.getAttribute('aria-valuetext')?.startsWith(want),
    `${used.toLocaleString('en-US')} of ${u.contextTokens.toLocaleString('en-US')} positions`,
  );
  assert.match(
    (await meter.getAttribute('aria-valuetext')) ?? '',
    new RegExp(
      `: system prompt ${u.systemTokens}, document ${u.documentTokens}( \\(packed[^)]*\\))?, conversation ${u.conversationTokens}$`,
    ),
  );
  assert.match(
    await page.getByTestId('context-cache').innerText(),
    /^memory [\d.]+ [KMG]?i?B kept of [\d.]+ [KMG]?i?B$/,
  );
  // An answer cut by the end of the context says so, with a new chat a click away.
  if (final.error === 'the answer stopped because the context is full') {
    await answer.getByText('Stopped: the context is full').waitFor();
    await answer.getByRole('button', { name: 'New chat over this document' }).waitFor();
  }
  return { stored, final };
}

before(async () => {
  if (skip) return;
  dir = mkdtempSync(join(tmpdir(), 'folio-e2e-long-'));
  mkdirSync(shots, { recursive: true });
  pdfPath = join(dir, 'six-stories.pdf');
  await storiesPdf(pdfPath);
  // The default settings: only the model is chosen (createAppCore's `model`).
  ({ core, host, api } = await serveApp({ dataDir: join(dir, 'library'), model, apiToken }));
  ({ context, page } = await openAppPage(dir, host, { width: 1280, height: 800 }, { paceTokensMs: 20 }));
});

after(async () => {
  if (!skip) await closeE2e({ dir, context, api, host, core });
});

test('the six stories and a PDF of all six, imported through the file picker, each become ready', {
  skip,
}, async () => {
  assert.equal(stories.length, 6);
  const [chooser] = await Promise.all([
    page.waitForEvent('filechooser'),
    page.getByRole('button', { name: 'Import…' }).click(),
  ]);
  await chooser.setFiles([...stories.map((f) => join(docsDir, f)), pdfPath]);
  await page.waitForFunction(
    () => document.querySelectorAll('[data-testid="document"][data-status="ready"]').length === 7,
    undefined,
    { timeout: 240_000 },
  );
  const docs = await api.call('documents.list', {});
  assert.equal(docs.length, 7);
  for (const d of docs) {
    assert.equal(d.status, 'ready', `${d.fileName} is ready`);
    assert.ok(d.readNote, `${d.fileName} says how it was read`);
    assert.ok(d.contextTokens && d.contextTokens <= 512, `${d.fileName} in a context of the model's 512 at most`);
    console.log(`# ${d.fileName}: ${d.tokens} tokens in ${d.contextTokens}: ${d.readNote}`);
  }
  pdfDoc = docs.find((d) => d.fileName === 'six-stories.pdf')!;
  assert.equal(pdfDoc.kind, 'pdf');
  assert.equal(pdfDoc.pages, 6);
  assert.ok(pdfDoc.tokens > 512, `the PDF (${pdfDoc.tokens} tokens) is longer than the context`);
  assert.match(pdfDoc.readNote!, /re-based positions/);
  // The shortest story, the likeliest to fit.
  storyDoc = docs.filter((d) => d.kind === 'text').sort((a, b) => a.tokens - b.tokens)[0];
  await shots2('01-library');
});

test("the PDF's document view says it was read with re-based positions, as a warning (no page fits the default room)", {
  skip,
}, async () => {
  await selectDocument(pdfDoc.title);
  await page.getByRole('tab', { name: 'Document' }).click();
  await page.locator('[data-testid="pdf-page"]').first().waitFor();
  const detail = await api.call('documents.get', { documentId: pdfDoc.id });
  assert.ok(detail.stats?.rebased, 'the statistics say re-based');
  assert.ok(detail.stats.chunks > 1, 'read in chunks');
  const warning = page.getByRole('region', { name: /^Lower quality/ });
  await warning.waitFor();
  assert.equal(
    (await warning.locator('p').first().innerText()).replace(/\s+/g, ' ').trim(),
    `⚠ Lower quality: ${detail.readNote}`,
  );
  // With the default room (a quarter of 512) not even the first page, one story, fits: no remedy is offered,
  // and the note names no pages either.
  const settings = await api.call('settings.get', {});
  assert.equal(settings.conversationRoom, null);
  const read = { pages: detail.pageList, prefixTokens: detail.tokens, contextTokens: detail.contextTokens! };
  assert.equal(fittingPages(read, null), null);
  await warning.getByText('Not even the first page fits the context with room for the conversation.').waitFor();
  assert.equal(await warning.getByRole('button').count(), 0);
  assert.doesNotMatch(detail.readNote!, /Pages \d+ to \d+ fit/);
  await shots2('02-pdf-document');
});

test("the PDF's inspector: the note, chunks, the cache's peak against its bound, positions", { skip }, async () => {
  await page.getByRole('tab', { name: 'Inspector' }).click();
  await page.locator('canvas[data-testid="heatmap"]').waitFor();
  const detail = await api.call('documents.get', { documentId: pdfDoc.id });
  const s = detail.stats!;
  await page.getByRole('region', { name: /^Lower quality/ }).waitFor();
  const reading = (await page.getByTestId('reading').innerText()).replace(/\s+/g, ' ');
  assert.match(reading, new RegExp(`in ${s.chunks} chunks of ${s.chunkTokens.toLocaleString('en-US')} tokens`));
  assert.match(reading, /Cache peak [\d.]+ [KMG]?i?B of [\d.]+ [KMG]?i?B bound/);
  assert.ok(s.kvBytesPeak <= s.kvBytesBound, 'the peak kept under its bound');
  assert.match(
    reading,
    new RegExp(`Positions ${s.positions.toLocaleString('en-US')} of ${detail.contextTokens} · re-based`),
  );
  await shots2('03-pdf-inspector');
});

test('a question over the PDF gets a complete streamed answer; the meter counts system, document, conversation', {
  skip,
}, async () => {
  await ask('Who built a boat?');
  const { final } = await checkChat(pdfDoc.id);
  console.log(`# PDF answer (${final.tokens} tokens, error: ${final.error}): ${final.text.slice(0, 120)}…`);
  await shots2('04-pdf-chat');
});

test('a question over a story gets a complete streamed answer', { skip }, async () => {
  await selectDocument(storyDoc.title);
  await ask('Who is in the story?');
  const { final } = await checkChat(storyDoc.id);
  console.log(`# story answer (${final.tokens} tokens, error: ${final.error}): ${final.text.slice(0, 120)}…`);
  if (final.error) {
    // The way on from a full context: a new chat over the same document, selected, empty.
    await page.getByRole('button', { name: 'New chat over this document' }).last().click();
    await page.locator('.chat-empty').waitFor();
    assert.equal((await api.call('chats.list', { documentId: storyDoc.id })).length, 2);
  }
  await shots2('05-story-chat');
});

test('with a smaller conversation room (Settings), the pages that fit are offered and read at their own positions', {
  skip,
}, async () => {
  await page.getByRole('button', { name: 'Models & settings' }).click();
  await page.getByRole('button', { name: 'Settings', exact: true }).click();
  const room = page.getByRole('textbox', { name: 'Conversation room' });
  assert.equal(await room.inputValue(), '');
  await room.fill('16');
  await shots2('06-settings', room);
  await page.getByRole('button', { name: 'Save settings' }).click();
  await page.getByText('Saved.').waitFor();
  assert.equal((await api.call('settings.get', {})).conversationRoom, 16);
  await page.getByRole('button', { name: '← Back to library' }).click();
  await selectDocument(pdfDoc.title);
  await page.getByRole('tab', { name: 'Document' }).click();
  const before = await api.call('documents.get', { documentId: pdfDoc.id });
  const range = fittingPages(
    { pages: before.pageList, prefixTokens: before.tokens, contextTokens: before.contextTokens! },
    16,
  );
  assert.ok(range, 'with 16 positions of room, the first page fits');
  const label = range[0] === range[1] ? `page ${range[0]}` : `pages ${range[0]} to ${range[1]}`;
  const warning = page.getByRole('region', { name: /^Lower quality/ });
  // The picker starts at the first page, with the longest range that fits from there.
  assert.equal(await warning.getByRole('combobox', { name: 'From page' }).inputValue(), String(range[0]));
  assert.equal(await warning.getByRole('combobox', { name: 'to page' }).inputValue(), String(range[1]));
  await warning.getByRole('button', { name: `Compress ${label}`, exact: true }).click();
  const dialog = page.getByRole('dialog', { name: `Compress ${label} only?` });
  await dialog.waitFor();
  await shots2('07-pdf-confirm');
  await dialog.getByRole('button', { name: `Compress ${label}` }).click();
  // The document is read again; the warning goes once its new detail comes.
  await warning.waitFor({ state: 'detached', timeout: 180_000 });
  await page.locator('[data-testid="document"][data-status="ready"]', { hasText: pdfDoc.title }).waitFor();
  const detail = await api.call('documents.get', { documentId: pdfDoc.id });
  assert.equal(detail.stats?.rebased, false, 'no longer re-based');
  // Every page keeps its text; the read took in the range only.
  assert.deepEqual(detail.readPages, range);
  assert.deepEqual(
    detail.pageList.map((p) => [p.page, p.text]),
    before.pageList.map((p) => [p.page, p.text]),
  );
  const inRange = (n: number) => n >= range[0] && n <= range[1];
  assert.deepEqual(
    detail.pageList.filter((p) => p.tokenStart >= 0).map((p) => p.page),
    before.pageList.filter((p) => inRange(p.page)).map((p) => p.page),
  );
  assert.equal(
    (await page.getByTestId('read-note').innerText()).trim(),
    detail.readNote,
    'the quiet note says how it was read now',
  );
  const readPages = page.getByTestId('read-pages');
  assert.match(
    await readPages.innerText(),
    new RegExp(`^Read: ${label} of ${before.pageList.length}\\. Answers know nothing of the other pages\\.`),
  );
  const unread = before.pageList.find((p) => !inRange(p.page))!.page;
  await page.getByRole('button', { name: `Page ${unread}, not read`, exact: true }).waitFor();
  await shots2('08-pdf-range');

  // The whole document again: read with re-based positions as at first, every page measured.
  await readPages.getByRole('button', { name: 'Compress the whole document' }).click();
  const whole = page.getByRole('dialog', { name: 'Compress the whole document?' });
  await whole.getByRole('button', { name: 'Compress the whole document' }).click();
  await page.getByRole('region', { name: /^Lower quality/ }).waitFor({ timeout: 180_000 });
  await page.locator('[data-testid="document"][data-status="ready"]', { hasText: pdfDoc.title }).waitFor();
  const again = await api.call('documents.get', { documentId: pdfDoc.id });
  assert.equal(again.readPages, null);
  assert.equal(again.stats?.rebased, true);
  assert.deepEqual(again.pageList, before.pageList, 'every page has its token range again');
  assert.equal(await page.getByTestId('read-pages').count(), 0);
  assert.deepEqual((globalThis as { pageErrors?: string[] }).pageErrors, [], 'no errors in the page');
});
