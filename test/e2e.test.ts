// The renderer end to end in Debian's Chromium (playwright-core), against the real web host, the real app
// core and the real engine with stories260K, as `folio serve` runs them: import a document through the
// file picker and watch its progress, ask a question and see the answer stream, read the inspector's
// heatmap back pixel by pixel and check that each (layer, head) cell's colour follows the budget the API
// reports, compare two methods side by side, see the retention shading in the document view, switch themes.
// Screenshots of every screen go to test/.output/screenshots/.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';

import type { CompressionStats } from '../electron/api/contract.ts';
import type { WsApi } from '../electron/api/ws-client.ts';
import type { AppCore } from '../electron/services/app-core.ts';
import { dataPaths } from '../electron/services/paths.ts';
import type { WebHost } from '../electron/web/server.ts';
import { colorAt, luminance, tOfColor, type Rgb } from '../renderer/src/lib/colormap.ts';
import {
  askWatchingAnswer,
  e2eSkip,
  shots,
  closeE2e,
  launchChromium,
  openAppPage,
  serveApp,
} from './helpers/e2e-host.ts';
import { repoRoot, sharedModel } from './helpers/shared.ts';

const model = sharedModel('stories260K.gguf');
const skip = e2eSkip(model);
const docFile = join(repoRoot, 'test/docs/lily-and-the-red-kite.txt');

let dir = '';
let core: AppCore;
let host: WebHost;
let api: WsApi;
let context: BrowserContext;
let page: Page;
let documentId = '';
/** The web host's API token (the test's own API client is a program, not the app's page). */
const apiToken = 'e2e-token-0123456789abcdef';
/** Chat completions the OpenAI endpoint started: a hostile page must start none. */
let completions = 0;

async function shot(name: string) {
  await page.screenshot({ path: join(shots, `${name}.png`) });
}

/** The heatmap canvas's cells: the colour at each cell's centre, read back from the canvas. */
async function readCells(
  testId: string,
): Promise<{ rows: number; cols: number; domain: [number, number]; metric: string; rgb: Rgb[] }> {
  return page.evaluate((id) => {
    const canvas = document.querySelector(`canvas[data-testid="${id}"]`) as HTMLCanvasElement;
    const layout = JSON.parse(canvas.dataset.layout!) as {
      x0: number;
      y0: number;
      cell: number;
      gap: number;
      rows: number;
      cols: number;
    };
    const scale = canvas.width / canvas.getBoundingClientRect().width;
    const ctx = canvas.getContext('2d')!;
    const rgb: [number, number, number][] = [];
    for (let r = 0; r < layout.rows; r++)
      for (let c = 0; c < layout.cols; c++) {
        const x = layout.x0 + c * (layout.cell + layout.gap) + layout.cell / 2;
        const y = layout.y0 + r * (layout.cell + layout.gap) + layout.cell / 2;
        const d = ctx.getImageData(Math.floor(x * scale), Math.floor(y * scale), 1, 1).data;
        rgb.push([d[0], d[1], d[2]]);
      }
    return {
      rows: layout.rows,
      cols: layout.cols,
      domain: JSON.parse(canvas.dataset.domain!),
      metric: canvas.dataset.metric!,
      rgb,
    };
  }, testId);
}

type Metric = 'budget' | 'mass' | 'concentration';
const metricValue = (h: CompressionStats['layers'][number]['heads'][number], m: Metric) =>
  m === 'budget' ? h.kept : m === 'mass' ? h.retainedMass : h.concentration;

/** Checks one cell per (layer, head) and that the colours follow the values: same order, right place on the scale. */
async function assertHeatmapFollows(testId: string, stats: CompressionStats, metric: Metric) {
  const cells = await readCells(testId);
  assert.equal(cells.metric, metric);
  assert.equal(cells.rows, stats.layers.length, 'one row per layer');
  assert.equal(cells.cols, stats.layers[0].heads.length, 'one column per KV head');
  assert.equal(cells.rgb.length, stats.layers.length * stats.layers[0].heads.length);
  const values = stats.layers.flatMap((l) => l.heads.map((h) => metricValue(h, metric)));
  const [lo, hi] = cells.domain;
  assert.ok(lo <= Math.min(...values) + 1e-9 && hi >= Math.max(...values) - 1e-9, 'the domain covers the values');
  for (let i = 0; i < values.length; i++) {
    // Every pixel is a colour of the scale, at the value's place in the domain.
    const t = tOfColor(cells.rgb[i]);
    const c = colorAt(t);
    assert.ok(
      Math.hypot(c[0] - cells.rgb[i][0], c[1] - cells.rgb[i][1], c[2] - cells.rgb[i][2]) < 4,
      `cell ${i} is a colour of the scale`,
    );
    const expected = hi > lo ? (values[i] - lo) / (hi - lo) : 1;
    assert.ok(
      Math.abs(t - expected) < 0.012,
      `cell ${i}: colour at ${t.toFixed(3)} for a value at ${expected.toFixed(3)}`,
    );
  }
  // Independently of the scale's exact stops: the scale's lightness rises, so lighter cells hold larger values.
  const lum = cells.rgb.map(luminance);
  for (let i = 0; i < values.length; i++)
    for (let j = 0; j < values.length; j++) {
      if (values[i] < values[j] - 1e-9 * Math.max(1, Math.abs(values[j])))
        assert.ok(lum[i] < lum[j] + 1e-6, `cells ${i} < ${j} in value but not in lightness`);
      if (values[i] === values[j])
        assert.deepEqual(cells.rgb[i], cells.rgb[j], `equal values ${i}, ${j} have equal colours`);
    }
}

before(async () => {
  if (skip) return;
  dir = mkdtempSync(join(tmpdir(), 'folio-e2e-'));
  mkdirSync(shots, { recursive: true });
  // As folio serve wires it (serve.ts), counting the completions the OpenAI endpoint starts.
  ({ core, host, api } = await serveApp({
    dataDir: join(dir, 'library'),
    model,
    apiToken,
    beforeServe: (c) => {
      const complete = c.openai.complete.bind(c.openai);
      c.openai.complete = (...a) => (completions++, complete(...a));
    },
  }));
  await api.call('settings.update', {
    systemPrompt: '',
    sampling: { maxTokens: 40, temperature: 0 },
    compression: { method: 'ada-snapkv', budget: 0.3 },
    theme: 'light',
  });
  ({ context, page } = await openAppPage(dir, host, { width: 1280, height: 820 }, { paceTokensMs: 20 }));
});

after(async () => {
  if (!skip) await closeE2e({ dir, context, api, host, core });
});

test('import a document through the file picker and watch its progress', { skip }, async () => {
  await page.getByText('Chat with your documents, on your machine').waitFor();
  await shot('01-empty-library');
  // Record every progress bar the page shows while the document is read and compressed.
  await page.evaluate(() => {
    const seen: string[] = [];
    (window as unknown as { seenProgress: string[] }).seenProgress = seen;
    new MutationObserver(() => {
      for (const el of document.querySelectorAll('[role="progressbar"]'))
        seen.push(`${el.getAttribute('aria-label')}|${el.getAttribute('aria-valuetext')}`);
    }).observe(document.body, { subtree: true, childList: true, attributes: true });
  });
  // The Import button opens the browser's file chooser; the test picks the file there.
  const [chooser] = await Promise.all([
    page.waitForEvent('filechooser'),
    page.getByRole('button', { name: 'Import…' }).click(),
  ]);
  await chooser.setFiles(docFile);
  const row = page.locator('[data-testid="document"]').first();
  await row.locator('.doc-title').getByText('lily-and-the-red-kite', { exact: false }).waitFor();
  await page.locator('[data-testid="document"][data-status="ready"]').waitFor({ timeout: 90_000 });
  const seen = await page.evaluate(() => (window as unknown as { seenProgress: string[] }).seenProgress);
  assert.ok(seen.length > 0, 'a progress bar was shown');
  assert.ok(
    seen.some((s) => /tokens/.test(s) || /Loading the model|Reading into the model|Importing|Saving/.test(s)),
    `progress named the work: ${seen.slice(0, 5).join(' / ')}`,
  );
  const docs = await api.call('documents.list', {});
  assert.equal(docs.length, 1);
  documentId = docs[0].id;
  assert.equal(docs[0].status, 'ready');
  // The library shows what the API reports: tokens, method, memory saved.
  const text = await row.innerText();
  assert.match(text, new RegExp(`${docs[0].tokens} tokens`));
  assert.match(text, /Ada-SnapKV/);
  assert.match(text, /saves \d+% of the cache/);
  assert.deepEqual(readdirSync(dataPaths(join(dir, 'library')).tmp), [], "the upload's temporary file is gone");
  await shot('02-library-ready');
});

test('a page on another local port cannot take the server down or drive the engine', { skip }, async () => {
  const before = (await api.call('settings.get', {})).systemPrompt;
  const evil = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<!doctype html><title>evil</title><body><script>
      const folio = 'http://127.0.0.1:${host.port}';
      const results = (window.results = {});
      const img = (src) => new Promise((r) => { const i = new Image(); i.onload = () => r('load'); i.onerror = () => r('error'); i.src = src; });
      const post = (path, body) => fetch(folio + path, { mode: 'no-cors', method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'text/plain' } })
        .then((r) => r.type, (e) => 'failed: ' + e.message);
      const socket = () => new Promise((r) => { const ws = new WebSocket('ws://127.0.0.1:${host.port}/api/ws'); ws.onopen = () => r('open'); ws.onerror = () => r('refused'); });
      window.attack = (async () => {
        results.img = await img(folio + '//[x');
        results.img2 = await img(folio + '/%E0%A4%A');
        results.v1 = await post('/v1/chat/completions', { model: 'folio', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 8 });
        results.call = await post('/api/call', { method: 'settings.update', params: { systemPrompt: 'pwned' } });
        results.models = await img(folio + '/v1/models');
        results.ws = await socket();
        return results;
      })();
    </script>`);
  });
  await new Promise<void>((r) => evil.listen(0, '127.0.0.1', () => r()));
  const attacker = await context.newPage();
  try {
    await attacker.goto(`http://127.0.0.1:${(evil.address() as { port: number }).port}/`);
    // Each step records itself, so that a step that never ends is named rather than hanging the run.
    let timer: NodeJS.Timeout | undefined;
    const results = await Promise.race([
      attacker.evaluate(() => (window as unknown as { attack: Promise<Record<string, string>> }).attack),
      new Promise<never>((_, fail) => {
        timer = setTimeout(() => {
          void attacker
            .evaluate(() => JSON.stringify((window as unknown as { results: object }).results))
            .then((seen) => fail(new Error(`the attack did not finish in 30 s; the steps done: ${seen}`)), fail);
        }, 30_000);
      }),
    ]).finally(() => clearTimeout(timer));
    assert.equal(results.img, 'error');
    assert.equal(results.ws, 'refused', 'the WebSocket from another origin is refused');
    // The server is alive and nothing ran: no completion, the settings unchanged.
    assert.deepEqual(await (await fetch(host.url + '/api/health')).json(), { ok: true });
    assert.equal(completions, 0, 'no generation ran');
    assert.equal((await api.call('settings.get', {})).systemPrompt, before, 'the system prompt is unchanged');
    // The UI itself is still connected.
    await page.locator('[data-testid="document"][data-status="ready"]').waitFor();
  } finally {
    await attacker.close();
    await new Promise((r) => (evil as Server).close(r));
  }
});

test('a browser without the token link is asked for the token, and signs in with it', { skip }, async () => {
  const mainErrors = (globalThis as { pageErrors?: string[] }).pageErrors;
  const fresh = await launchChromium(join(dir, 'chromium-fresh'), { width: 1000, height: 760 });
  (globalThis as { pageErrors?: string[] }).pageErrors = mainErrors; // the app page's list stays the one checked
  try {
    const p = fresh.page;
    await p.goto(host.url + '/');
    await p.getByRole('heading', { name: 'Sign in to Folio' }).waitFor();
    assert.equal(await p.getByRole('heading', { name: 'Library' }).count(), 0, 'no library before signing in');
    const box = p.getByLabel('Access token');
    await box.fill('not-the-token-at-all-0123');
    await p.getByRole('button', { name: 'Sign in' }).click();
    assert.match(await p.getByRole('alert').innerText(), /not this server's token/);
    await box.fill(apiToken);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.locator('[data-testid="document"][data-status="ready"]').waitFor();
    // Signed in for good: a reload goes straight to the library.
    await p.reload();
    await p.locator('[data-testid="document"][data-status="ready"]').waitFor();
    assert.deepEqual(
      fresh.errors.filter((e) => !/401/.test(e)),
      [],
      'no page error besides the refused calls',
    );
  } finally {
    await fresh.context.close();
  }
});

test('ask a question: the answer streams in, then shows its speed and the context usage', { skip }, async () => {
  const answer = await askWatchingAnswer(page, 'Who had a kite?', 60_000);
  const chats = await api.call('chats.list', { documentId });
  assert.equal(chats.length, 1);
  const stored = await api.call('chats.get', { chatId: chats[0].id });
  const final = stored.messages.at(-1)!;
  assert.equal(final.status, 'complete');
  const shown = (await answer.locator('.markdown').innerText()).replace(/\s+/g, ' ').trim();
  assert.equal(shown, final.text.replace(/\s+/g, ' ').trim(), 'the page shows the stored answer');
  assert.match(await answer.locator('.msg-stats').innerText(), /tokens · [\d.]+ tokens\/s/);
  const meter = page.getByRole('meter', { name: 'Context used' });
  const used = stored.usage.systemTokens + stored.usage.documentTokens + stored.usage.conversationTokens;
  assert.match(
    (await meter.getAttribute('aria-valuetext')) ?? '',
    new RegExp(`^${used} of ${stored.usage.contextTokens} positions`),
  );
  await shot('03-chat');
});

let stats: CompressionStats;
test('the inspector draws one cell per (layer, KV head), coloured by the budgets the API reports', {
  skip,
}, async () => {
  await page.keyboard.press('Control+Shift+Digit3');
  await page.getByRole('tab', { name: 'Inspector', selected: true }).waitFor();
  await page.locator('canvas[data-testid="heatmap"]').waitFor();
  stats = (await api.call('documents.get', { documentId })).stats!;
  assert.ok(stats?.compressed);
  await assertHeatmapFollows('heatmap', stats, 'budget');
  // Hover shows a head's numbers; a click locks it and shows its detail.
  const canvas = page.locator('canvas[data-testid="heatmap"]');
  const layout = JSON.parse((await canvas.getAttribute('data-layout'))!);
  const box = (await canvas.boundingBox())!;
  const at = (r: number, c: number) => ({
    x: box.x + layout.x0 + c * (layout.cell + layout.gap) + layout.cell / 2,
    y: box.y + layout.y0 + r * (layout.cell + layout.gap) + layout.cell / 2,
  });
  await page.mouse.move(at(2, 1).x, at(2, 1).y);
  const tip = page.locator('[data-testid="heatmap-tip"]');
  await tip.waitFor();
  assert.match(
    await tip.innerText(),
    new RegExp(`Layer 2 · head 1[\\s\\S]*${stats.layers[2].heads[1].kept} kept tokens`),
  );
  await page.mouse.click(at(2, 1).x, at(2, 1).y);
  const detail = page.locator('[data-testid="head-detail"]');
  await detail.waitFor();
  assert.match(await detail.innerText(), /Layer 2 · KV head 1/);
  assert.match(await detail.innerText(), new RegExp(`Kept tokens\\s+${stats.layers[2].heads[1].kept}`));
  // The memory summary says what the API says.
  const savedPct = Math.round((100 * (stats.kvBytesFull - stats.kvBytesKept)) / stats.kvBytesFull);
  assert.equal(await page.locator('[data-testid="memory-saved"]').innerText(), `saves ${savedPct}%`);
  await shot('04-inspector-budget');
  // The same grid for retained attention mass and for concentration.
  await page.getByRole('radio', { name: 'Retained attention' }).click();
  await assertHeatmapFollows('heatmap', stats, 'mass');
  await shot('05-inspector-mass');
  await page.getByRole('radio', { name: 'Concentration' }).click();
  await assertHeatmapFollows('heatmap', stats, 'concentration');
  await page.getByRole('radio', { name: 'Budget' }).click();
});

test('two chosen methods side by side for the same document and budget, toggled', { skip }, async () => {
  // The document's method (Ada-SnapKV) is the first pick; the second is chosen from the grouped list.
  assert.equal(await page.getByRole('combobox', { name: 'First method' }).inputValue(), 'ada-snapkv');
  await page.getByRole('combobox', { name: 'Second method' }).selectOption('snapkv');
  await page.getByRole('button', { name: 'Compare', exact: true }).click();
  await page.locator('canvas[data-testid="heatmap-a"]').waitFor({ timeout: 60_000 });
  await page.locator('canvas[data-testid="heatmap-b"]').waitFor();
  const r = await api.call('documents.compare', { documentId, a: 'ada-snapkv', b: 'snapkv' });
  assert.deepEqual([r.a.method, r.b.method], ['ada-snapkv', 'snapkv']);
  // Uniform: every head of a layer keeps the same number of tokens; Ada does not.
  for (const l of r.b.layers) assert.equal(new Set(l.heads.map((h) => h.kept)).size, 1);
  assert.ok(r.a.layers.some((l) => new Set(l.heads.map((h) => h.kept)).size > 1));
  await page.getByRole('radio', { name: 'SnapKV', exact: true }).click();
  await assertHeatmapFollows('heatmap', r.b, 'budget');
  const uniformCells = await readCells('heatmap');
  await page.getByRole('radio', { name: 'Ada-SnapKV', exact: true }).click();
  await assertHeatmapFollows('heatmap', r.a, 'budget');
  const adaCells = await readCells('heatmap');
  assert.notDeepEqual(uniformCells.rgb, adaCells.rgb, 'the toggle changed the grid');
  await assertHeatmapFollows('heatmap-a', r.a, 'budget');
  await assertHeatmapFollows('heatmap-b', r.b, 'budget');
  await page.locator('.compare').scrollIntoViewIfNeeded();
  await shot('06-inspector-compare');
});

test('the document view shades each passage by how much of the cache kept it', { skip }, async () => {
  await page.getByRole('tab', { name: 'Document' }).click();
  await page.locator('[data-testid="page"]').waitFor();
  const detail = await api.call('documents.get', { documentId });
  const passages = page.locator('.passage');
  assert.equal(await passages.count(), detail.passages.filter((p) => p.page === 1).length);
  const shading = await passages.evaluateAll((els) =>
    els.map((el) => ({ r: Number((el as HTMLElement).dataset.retention), bg: getComputedStyle(el).backgroundColor })),
  );
  const alpha = (bg: string) =>
    Number(/\/\s*([\d.]+)\)|rgba\([^)]*,\s*([\d.]+)\)/.exec(bg)?.slice(1).find(Boolean) ?? 1);
  assert.ok(new Set(shading.map((s) => s.bg)).size >= 2, 'passages are shaded differently');
  for (let i = 0; i < shading.length; i++)
    for (let j = 0; j < shading.length; j++)
      // The browser keeps alpha in 8 bits: passages kept almost equally may share a shade.
      if (shading[i].r < shading[j].r - 0.02)
        assert.ok(
          alpha(shading[i].bg) < alpha(shading[j].bg),
          `more kept, stronger shade: ${JSON.stringify([shading[i], shading[j]])}`,
        );
      else if (shading[i].r <= shading[j].r)
        assert.ok(alpha(shading[i].bg) <= alpha(shading[j].bg) + 0.005, 'never less shade for more kept');
  assert.deepEqual(
    shading.map((s) => s.r.toFixed(3)),
    detail.passages.filter((p) => p.page === 1).map((p) => p.retention.toFixed(3)),
  );
  assert.match(await page.locator('[data-testid="page"]').innerText(), /Lily/);
  await page.getByTestId('retention-legend').waitFor();
  await shot('07-document');
});

test('themes: dark and light differ; models, settings and the shortcut help', { skip }, async () => {
  await page.getByRole('button', { name: 'Models & settings' }).click();
  await page.getByText('Models on this computer').waitFor();
  await page.locator('.model-row').first().waitFor();
  await page.getByTestId('estimate').waitFor();
  await shot('08-models');
  await page.getByRole('button', { name: 'Settings', exact: true }).click();
  // API access: the address and token other programs use (this page needs neither).
  const access = page.getByTestId('api-access');
  assert.equal(await access.getByLabel('Token').inputValue(), apiToken);
  assert.match(await access.getByTestId('api-url').innerText(), new RegExp(`^${host.url}/v1$`));
  const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  await page.getByRole('radio', { name: 'Dark' }).click();
  await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
  const dark = await bg();
  await shot('09-settings-dark');
  await page.getByRole('button', { name: '← Back to library' }).click();
  await page.getByRole('tab', { name: 'Inspector' }).click();
  await page.locator('canvas[data-testid="heatmap"]').waitFor();
  await shot('10-inspector-dark');
  await page.getByRole('tab', { name: 'Chat' }).click();
  await shot('11-chat-dark');
  assert.equal((await api.call('settings.get', {})).theme, 'dark');
  await page.keyboard.press('Control+Comma');
  await page.getByRole('radio', { name: 'Light' }).click();
  await page.waitForFunction(() => document.documentElement.dataset.theme === 'light');
  const light = await bg();
  assert.notEqual(dark, light, 'the dark and light backgrounds differ');
  await page.keyboard.press('Control+Comma');
  await page.keyboard.press('Control+Slash');
  const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
  await help.waitFor();
  await shot('12-help');
  await page.keyboard.press('Escape');
  await help.waitFor({ state: 'detached' });
  // Down to about 900 px wide.
  await page.setViewportSize({ width: 900, height: 700 });
  await shot('13-chat-900px');
  await page.getByRole('tab', { name: 'Inspector' }).click();
  await shot('14-inspector-900px');
  const overflow = await page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
  assert.ok(overflow <= 0, `no horizontal scrolling at 900 px (${overflow} px too wide)`);
  assert.deepEqual((globalThis as { pageErrors?: string[] }).pageErrors, [], 'no errors in the page');
});
