// The layout in Debian's Chromium (playwright-core) against the real web host, app core and engine with
// stories260K, at 800×600 (the smallest window Folio is made for) and 1400×900: on the chat (with an answer),
// the document view, the inspector and the settings, nothing overflows sideways (read from the DOM: the
// document's and each pane's scrollWidth against its clientWidth), and the key controls (Send, Copy and
// Regenerate, the context count, the view tabs, Models & settings) lie inside the viewport. The sidebar
// collapses with its toggle and comes back; toasts stay clear of Send. Screenshots of every view go to
// test/.output/screenshots/layout-*.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';

import type { EventPayload } from '../electron/api/contract.ts';
import type { WsApi } from '../electron/api/ws-client.ts';
import type { AppCore } from '../electron/services/app-core.ts';
import type { WebHost } from '../electron/web/server.ts';
import { e2eSkip, shots, launchChromium, serveApp } from './helpers/e2e-host.ts';
import { sharedModel } from './helpers/shared.ts';

const model = sharedModel('stories260K.gguf');
const skip = e2eSkip(model);
const apiToken = 'e2e-layout-token-0123456789abcdef';

let dir = '';
let core: AppCore;
let host: WebHost;
let api: WsApi;
let context: BrowserContext;
let page: Page;
let errors: string[] = [];

/** The panes whose sideways overflow would cut something off (the ones on screen are checked). */
const PANES = [
  '.app',
  '.sidebar',
  '.main',
  '.main-pane',
  '.doc-header',
  '.tab-panel',
  '.chat-bar',
  '.composer',
  '.document-pane',
  '.inspector',
  '.page-shell',
  '.settings-page',
  '.notices',
];

/** Elements wider than their box: the document itself and each pane on screen. */
async function overflows(): Promise<string[]> {
  return page.evaluate((panes) => {
    const out: string[] = [];
    const root = document.documentElement;
    if (root.scrollWidth > root.clientWidth) out.push(`document: ${root.scrollWidth} > ${root.clientWidth}`);
    for (const sel of panes)
      for (const el of document.querySelectorAll<HTMLElement>(sel)) {
        if (!el.offsetParent && getComputedStyle(el).position !== 'fixed') continue; // not shown
        if (el.scrollWidth > el.clientWidth + 1) out.push(`${sel}: ${el.scrollWidth} > ${el.clientWidth}`);
      }
    return out;
  }, PANES);
}

/** The element's box lies wholly inside the viewport. */
async function inViewport(locator: ReturnType<Page['locator']>, what: string): Promise<void> {
  await locator.waitFor({ state: 'visible' });
  const box = await locator.boundingBox();
  const vp = page.viewportSize()!;
  assert.ok(box, `${what} has a box`);
  assert.ok(
    box.x >= 0 && box.y >= 0 && box.x + box.width <= vp.width + 0.5 && box.y + box.height <= vp.height + 0.5,
    `${what} at ${JSON.stringify(box)} lies inside ${vp.width}×${vp.height}`,
  );
}

function taskDone(kind: string): Promise<EventPayload<'task.done'>> {
  return new Promise((resolve) => {
    const off = core.bus.subscribe((event, payload) => {
      if (event === 'task.done' && (payload as EventPayload<'task.done'>).kind === kind) {
        off();
        resolve(payload as EventPayload<'task.done'>);
      }
    });
  });
}

before(async () => {
  if (skip) return;
  dir = mkdtempSync(join(tmpdir(), 'folio-e2e-layout-'));
  mkdirSync(shots, { recursive: true });
  ({ core, host, api } = await serveApp({ dataDir: join(dir, 'library'), model, apiToken }));
  await api.call('settings.update', { sampling: { maxTokens: 24, temperature: 0 }, theme: 'light' });
  // A document with a long title and an answered question: the views as a user has them.
  const file = join(dir, 'a-story-with-a-rather-long-file-name-that-could-push-things-sideways.txt');
  writeFileSync(
    file,
    'Once upon a time, there was a little dog named Max. Max liked to run in the park. One day, Max found a red ball under a big tree. He was very happy.\n\nHe took the ball home to show his friend Sue. Sue and Max played with the ball all day long.\n',
  );
  const read = taskDone('import');
  const { documentId } = await core.documents.imports.import({ path: file });
  assert.equal((await read).ok, true);
  const chat = await api.call('chats.create', { documentId });
  await api.call('chats.send', { chatId: chat.id, text: 'What did Max find under the big tree in the park?' });
  await new Promise<void>((resolve) => {
    const off = api.on('chat.message', (m) => {
      if (m.role === 'assistant' && m.status !== 'streaming') {
        off();
        resolve();
      }
    });
  });
  ({ context, page, errors } = await launchChromium(join(dir, 'chromium'), { width: 1400, height: 900 }));
  await page.goto(host.signInUrl);
  await page.locator('[data-testid="document"]').first().click();
});

after(async () => {
  if (skip) return;
  await context?.close().catch(() => {});
  api?.close();
  await host?.close();
  await core?.close();
  rmSync(dir, { recursive: true, force: true });
});

for (const [width, height] of [
  [800, 600],
  [1400, 900],
] as const) {
  test(`${width}×${height}: no view overflows sideways, and the key controls are on screen`, { skip }, async () => {
    await page.setViewportSize({ width, height });
    const size = `${width}x${height}`;
    // The chat, with its answer.
    await page.getByRole('tab', { name: 'Chat' }).click();
    await page.getByTestId('msg-assistant').first().waitFor();
    await page.waitForTimeout(200); // layout settles after the resize
    await page.screenshot({ path: join(shots, `layout-${size}-chat.png`) });
    assert.deepEqual(await overflows(), [], `chat at ${size}`);
    await inViewport(page.getByRole('button', { name: 'Send' }), 'Send');
    const answer = page.getByTestId('msg-assistant').last();
    await answer.hover();
    await inViewport(answer.getByRole('button', { name: 'Copy answer' }), 'Copy');
    await inViewport(answer.getByRole('button', { name: 'Regenerate answer' }), 'Regenerate');
    await inViewport(page.getByTestId('context-meter'), 'the context count');
    for (const tab of ['Chat', 'Document', 'Inspector'])
      await inViewport(page.getByRole('tab', { name: tab }), `the ${tab} tab`);
    await inViewport(page.getByRole('button', { name: 'Models & settings' }), 'Models & settings');
    // The library keeps its width: document titles stay readable, not a strip.
    const sidebar = await page.locator('.sidebar').boundingBox();
    assert.ok(sidebar && sidebar.width >= 180, `the library is ${sidebar?.width} px wide`);

    // The document view.
    await page.getByRole('tab', { name: 'Document' }).click();
    await page.locator('.document-pane').waitFor();
    await page.screenshot({ path: join(shots, `layout-${size}-document.png`) });
    assert.deepEqual(await overflows(), [], `document view at ${size}`);

    // The inspector, with a head locked.
    await page.getByRole('tab', { name: 'Inspector' }).click();
    const heatmap = page.getByTestId('heatmap');
    await heatmap.waitFor();
    if ((await page.getByTestId('head-detail').count()) === 0) {
      await heatmap.focus();
      await page.keyboard.press('Enter');
    }
    await page.getByTestId('kept-text').waitFor();
    await page.getByTestId('head-detail').screenshot({ path: join(shots, `layout-${size}-head-detail.png`) });
    await page.screenshot({ path: join(shots, `layout-${size}-inspector.png`), fullPage: true });
    assert.deepEqual(await overflows(), [], `inspector at ${size}`);

    // The settings.
    await page.getByRole('button', { name: 'Models & settings' }).click();
    await page.locator('.page-shell .tabs').getByRole('button', { name: 'Settings' }).click();
    await page.getByRole('button', { name: 'Save settings' }).waitFor();
    await page.screenshot({ path: join(shots, `layout-${size}-settings.png`) });
    assert.deepEqual(await overflows(), [], `settings at ${size}`);
    await inViewport(page.locator('.page-shell .tabs').getByRole('button', { name: 'Settings' }), 'the Settings tab');
    await page.getByRole('button', { name: '← Back to library' }).click();
  });
}

test('the sidebar collapses with its toggle and comes back; the main pane takes the room', { skip }, async () => {
  await page.setViewportSize({ width: 800, height: 600 });
  await page.getByRole('tab', { name: 'Chat' }).click();
  const before = (await page.locator('.main').boundingBox())!.width;
  await page.getByRole('button', { name: 'Hide the library' }).click();
  await page.locator('.sidebar').waitFor({ state: 'hidden' });
  const wide = (await page.locator('.main').boundingBox())!.width;
  assert.ok(wide > before + 150, `the main pane grew from ${before} to ${wide} px`);
  assert.deepEqual(await overflows(), []);
  await inViewport(page.getByRole('button', { name: 'Send' }), 'Send');
  await page.screenshot({ path: join(shots, 'layout-800x600-collapsed.png') });
  await page.getByRole('button', { name: 'Show the library' }).click();
  await page.locator('.sidebar').waitFor({ state: 'visible' });
  assert.deepEqual(errors, [], 'no page errors');
});

test('below the smallest window the sidebar collapses on its own, and opens over the page', { skip }, async () => {
  await page.setViewportSize({ width: 600, height: 600 });
  await page.locator('.sidebar').waitFor({ state: 'hidden' });
  assert.deepEqual(await overflows(), []);
  await inViewport(page.getByRole('button', { name: 'Send' }), 'Send');
  await page.getByRole('button', { name: 'Show the library' }).click();
  const sidebar = (await page.locator('.sidebar').boundingBox())!;
  assert.ok(sidebar.width >= 240, `the library opens at ${sidebar.width} px, not a strip`);
  await page.screenshot({ path: join(shots, 'layout-600x600-library-open.png') });
  await page.getByRole('button', { name: 'Hide the library' }).click();
  await page.locator('.sidebar').waitFor({ state: 'hidden' });
});

test('a toast stays clear of Send, and goes by itself', { skip }, async () => {
  await page.setViewportSize({ width: 800, height: 600 });
  await page.getByRole('button', { name: 'Show the library' }).click(); // hidden by the test before
  await page.getByRole('tab', { name: 'Chat' }).click();
  // The settings page's save says so in a toast.
  await page.getByRole('button', { name: 'Models & settings' }).click();
  await page.locator('.page-shell .tabs').getByRole('button', { name: 'Settings' }).click();
  const temperature = page.getByRole('textbox', { name: 'Temperature' });
  await temperature.fill('0.1');
  await page.getByRole('button', { name: 'Save settings' }).click();
  const toast = page.locator('.toast.success', { hasText: 'Settings saved' });
  await toast.waitFor();
  await page.getByRole('button', { name: '← Back to library' }).click();
  const t = (await toast.boundingBox())!;
  for (const [name, control] of [
    ['Send', page.getByRole('button', { name: 'Send' })],
    ['the tabs', page.getByRole('tablist').first()],
    ['Models & settings', page.getByRole('button', { name: 'Models & settings' })],
  ] as const) {
    const c = (await control.boundingBox())!;
    const apart = t.x + t.width <= c.x || c.x + c.width <= t.x || t.y + t.height <= c.y || c.y + c.height <= t.y;
    assert.ok(apart, `the toast ${JSON.stringify(t)} does not cover ${name} ${JSON.stringify(c)}`);
  }
  await toast.waitFor({ state: 'detached', timeout: 10_000 });
});
