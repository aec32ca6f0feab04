// The document viewer end to end (issue 18) in Debian's Chromium, against the real web host, app core and
// engine with stories260K: a generated three-page PDF is imported through the file picker; the document
// view draws its pages with pdf.js from the stored original (a canvas with ink on it, the text layer over
// it), the text layer's spans carry the retention map, the observation window is drawn apart and labelled,
// search finds a word of the last page and scrolls there; a Word document is shown as written with the same
// shading; nothing overflows at 800×600, and the page logs no error. Screenshots go to
// test/.output/screenshots/.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';

import { documentFileRoute } from '../electron/api/contract.ts';
import type { WsApi } from '../electron/api/ws-client.ts';
import type { AppCore } from '../electron/services/app-core.ts';
import type { WebHost } from '../electron/web/server.ts';
import { e2eSkip, shots, closeE2e, openAppPage, serveApp, storiesPdf, storyFiles } from './helpers/e2e-host.ts';
import { sharedModel } from './helpers/shared.ts';

const model = sharedModel('stories260K.gguf');
const skip = e2eSkip(model);
const apiToken = 'e2e-viewer-token-0123456789abcdef';
/** Three stories, one a page; "boat" is a word of the third only. */
const stories = storyFiles.slice(0, 3);

let dir = '';
let core: AppCore;
let host: WebHost;
let api: WsApi;
let context: BrowserContext;
let page: Page;
let errors: string[] = [];
let documentId = '';

before(async () => {
  if (skip) return;
  dir = mkdtempSync(join(tmpdir(), 'folio-e2e-viewer-'));
  mkdirSync(shots, { recursive: true });
  ({ core, host, api } = await serveApp({ dataDir: join(dir, 'library'), model, apiToken }));
  await api.call('settings.update', {
    systemPrompt: '',
    compression: { method: 'ada-snapkv', budget: 0.3 },
    theme: 'light',
  });
  ({ context, page, errors } = await openAppPage(dir, host, { width: 1400, height: 900 }));
});

after(async () => {
  if (!skip) await closeE2e({ dir, context, api, host, core });
});

test('a PDF imported through the file picker is kept, and shown page by page', { skip }, async () => {
  const pdfPath = join(dir, 'three-stories.pdf');
  await storiesPdf(pdfPath, stories);
  const [chooser] = await Promise.all([
    page.waitForEvent('filechooser'),
    page.getByRole('button', { name: 'Import…' }).click(),
  ]);
  await chooser.setFiles(pdfPath);
  await page.locator('[data-testid="document"][data-status="ready"]').waitFor({ timeout: 120_000 });
  const [doc] = await api.call('documents.list', {});
  documentId = doc.id;
  const detail = await api.call('documents.get', { documentId });
  assert.equal(detail.kind, 'pdf');
  assert.equal(detail.hasFile, true);
  assert.equal(detail.pageList.length, 3);
  assert.ok(detail.keptWindow, 'the document was compressed: the window is known');

  await page.getByRole('tab', { name: 'Document' }).click();
  const first = page.locator('[data-testid="pdf-page"][data-page="1"]');
  await first.locator('.textLayer span').first().waitFor();
  // The canvas has ink on it: pdf.js drew the page.
  await page.waitForFunction(() => {
    const canvas = document.querySelector<HTMLCanvasElement>('[data-testid="pdf-page"][data-page="1"] canvas');
    if (!canvas?.width) return false;
    const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
    let ink = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i] < 128 && data[i + 3] > 0) ink++;
    return ink > 500;
  });
  // Only the pages near the viewport are drawn: the third, two page-heights down, is a placeholder.
  assert.equal(await page.locator('[data-testid="pdf-page"]').count(), 3);
  assert.equal(await page.locator('[data-testid="pdf-page"][data-page="3"] canvas').count(), 0);
  // pdf.js's data, where lib/pdfjs.ts points it (CMaps for CJK text, the standard fonts a PDF may leave
  // unembedded, the JPEG 2000 decoder), is served beside the build to the page.
  const files = ['cmaps/UniJIS-UCS2-H.bcmap', 'standard_fonts/FoxitSerif.pfb', 'wasm/openjpeg.wasm'];
  const served = await page.evaluate(
    (names) =>
      Promise.all(
        names.map(async (f) => (await (await fetch(new URL(`pdfjs/${f}`, document.baseURI))).arrayBuffer()).byteLength),
      ),
    files,
  );
  const pdfjsRoot = dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json'));
  assert.deepEqual(
    served,
    files.map((f) => statSync(join(pdfjsRoot, f)).size),
    'the files themselves, not the app page',
  );
  await page.screenshot({ path: join(shots, 'viewer-01-pdf-page.png') });
});

test('the text layer carries the retention map; the window is drawn apart and labelled', { skip }, async () => {
  const detail = await api.call('documents.get', { documentId });
  const first = page.locator('[data-testid="pdf-page"][data-page="1"]');
  const shaded = first.locator('.textLayer span[data-retention]');
  await shaded.first().waitFor();
  const values = await shaded.evaluateAll((els) => els.map((el) => Number((el as HTMLElement).dataset.retention)));
  const onPage1 = detail.passages.filter((p) => p.page === 1);
  assert.ok(onPage1.length > 0);
  const lo = Math.min(...onPage1.map((p) => p.retention)) - 1e-3;
  const hi = Math.max(...onPage1.map((p) => p.retention)) + 1e-3;
  for (const v of values)
    assert.ok(v >= lo && v <= hi, `a span's retention ${v} lies within its passages' [${lo}, ${hi}]`);
  const bg = await shaded.first().evaluate((el) => getComputedStyle(el).backgroundColor);
  assert.match(bg, /rgba?\(/, 'a shaded span has a background');
  const label = await page.getByTestId('window-label').innerText();
  assert.match(
    label,
    new RegExp(`Always kept: the last ${detail.keptWindow!.tokens} tokens, from which the scores were computed`),
  );
  const legend = await page.getByTestId('retention-legend').innerText();
  assert.match(legend, /share of the model’s cache/);
});

test('search finds a word on the last page, scrolls there and marks it', { skip }, async () => {
  const last = page.locator('[data-testid="pdf-page"][data-page="3"]');
  await page.getByRole('searchbox', { name: 'Search in the document' }).fill('boat');
  await page.getByRole('button', { name: 'Next match' }).click();
  const current = last.locator('.textLayer .search-current');
  await current.first().waitFor();
  assert.match((await current.first().textContent()) ?? '', /^boat$/i, 'the hit itself is marked, not its whole line');
  assert.ok(await current.first().isVisible());
  const inView = await current.first().evaluate((el) => {
    const r = el.getBoundingClientRect();
    return r.top >= 0 && r.bottom <= window.innerHeight;
  });
  assert.ok(inView, 'the hit is scrolled into view');
  assert.match(await page.getByTestId('search-count').innerText(), /^1 of \d+$/);
  assert.equal(await page.getByRole('spinbutton', { name: /Page number/ }).inputValue(), '3');
  // The last page ends with the window, hatched.
  assert.ok((await last.locator('.textLayer span.kept-window').count()) > 0, 'the window is drawn on the last page');
  await page.screenshot({ path: join(shots, 'viewer-02-search.png') });
});

test('a Word document is shown as written, with the same shading', { skip }, async () => {
  const { sampleDocx } = await import('./helpers/make-docx.ts');
  const docxPath = join(dir, 'written.docx');
  writeFileSync(docxPath, await sampleDocx({ title: 'Written in Word' }));
  const [chooser] = await Promise.all([
    page.waitForEvent('filechooser'),
    page.getByRole('button', { name: 'Import…' }).click(),
  ]);
  await chooser.setFiles(docxPath);
  await page.locator('[data-testid="document"][data-status="ready"]').nth(1).waitFor({ timeout: 120_000 });
  const docx = (await api.call('documents.list', {})).find((d) => d.kind === 'docx');
  assert.ok(docx);
  await page.locator('[data-testid="document"]').filter({ hasText: docx.title }).click();
  await page.getByRole('tab', { name: 'Document' }).click();
  const body = page.getByTestId('html-doc');
  await body.locator('.passage').first().waitFor();
  assert.ok((await body.locator('table').count()) > 0 && (await body.locator('li').count()) > 0, 'formatted');
  const detail = await api.call('documents.get', { documentId: docx.id });
  assert.ok(detail.hasHtml);
  const shown = await body
    .locator('.passage')
    .evaluateAll((els) => els.map((el) => Number((el as HTMLElement).dataset.retention)));
  const known = new Set(detail.passages.map((p) => p.retention.toFixed(3)));
  for (const r of shown) assert.ok(known.has(r.toFixed(3)), `a shaded run carries a passage's retention (${r})`);
  assert.ok((await body.locator('.kept-window').count()) > 0, 'the window is drawn');
  await page.screenshot({ path: join(shots, 'viewer-04-word.png') });
  // Back to the PDF for what follows.
  await page.locator('[data-testid="document"]').filter({ hasText: 'Six stories' }).click();
  await page.getByRole('tab', { name: 'Document' }).click();
});

test('the document view fits a small window: no horizontal overflow at 800×600', { skip }, async () => {
  await page.setViewportSize({ width: 800, height: 600 });
  await page.locator('[data-testid="pdf-page"][data-page="1"]').scrollIntoViewIfNeeded();
  await page.locator('[data-testid="pdf-page"][data-page="1"] .textLayer span').first().waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow} px wider than the window`);
  await page.screenshot({ path: join(shots, 'viewer-03-800x600.png') });
  await page.setViewportSize({ width: 1400, height: 900 });
});

test('the file route refuses other pages; the page logged no error', { skip }, async () => {
  const r = await fetch(host.url + documentFileRoute(documentId), { headers: { origin: 'https://evil.example' } });
  assert.equal(r.status, 403);
  assert.deepEqual(errors, []);
});
