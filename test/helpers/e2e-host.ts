// What the end-to-end tests share: the app as `folio serve` runs it (the renderer built, a real app core
// behind the web host, an API client), Debian's Chromium driven by playwright-core, and a PDF made of the
// test stories.
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import type { BrowserContext, Locator, Page } from 'playwright-core';

import { connectApi, type WsApi } from '../../electron/api/ws-client.ts';
import { createAppCore, type AppCore, type AppCoreOptions } from '../../electron/services/app-core.ts';
import { dataPaths } from '../../electron/services/paths.ts';
import { MAX_DOCUMENT_BYTES } from '../../electron/shared/limits.ts';
import { startWebHost, type WebHost } from '../../electron/web/server.ts';
import { missing, repoRoot } from './shared.ts';

export const CHROMIUM = '/usr/bin/chromium';

/** Where the end-to-end tests keep their screenshots (artefacts, not checked in). */
export const shots = join(repoRoot, 'test/.output/screenshots');

/** Why an end-to-end test on `model` cannot run here (the model or Chromium missing), or false. */
export function e2eSkip(model: string): string | false {
  return (
    missing(model) || (existsSync(CHROMIUM) ? false : `needs ${CHROMIUM} (Debian's chromium package) to drive the UI`)
  );
}

/** The test stories (test/docs/*.txt), in name order. */
export const storiesDir = join(repoRoot, 'test/docs');
export const storyFiles = readdirSync(storiesDir)
  .filter((f) => f.endsWith('.txt'))
  .sort();

/** A PDF of the given stories (default all six), one story a page. */
export async function storiesPdf(path: string, files: readonly string[] = storyFiles): Promise<void> {
  const { PDFDocument, StandardFonts } = await import('pdf-lib');
  const pdf = await PDFDocument.create();
  pdf.setTitle('Six stories');
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const f of files) {
    const text = readFileSync(join(storiesDir, f), 'utf8')
      .trim()
      .replace(/\n\s*\n/g, '\n');
    pdf.addPage([612, 792]).drawText(text, { x: 50, y: 740, size: 11, font, maxWidth: 512, lineHeight: 15 });
  }
  writeFileSync(path, await pdf.save());
}

export interface ServedApp {
  core: AppCore;
  host: WebHost;
  api: WsApi;
}

/**
 * The renderer built as `npm run build:renderer` builds it (dist/renderer), and a fresh app core in `dataDir`
 * with `model` behind the web host, wired as `folio serve` wires them (`beforeServe` may wrap the core's
 * services first); an API client with the token.
 */
export async function serveApp(o: {
  dataDir: string;
  model: string;
  apiToken: string;
  beforeServe?: (core: AppCore) => void;
  /** What the test sets of the app core otherwise (e.g. when an import asks before a long OCR). */
  core?: Partial<AppCoreOptions>;
}): Promise<ServedApp> {
  const { build } = await import('vite');
  await build({ configFile: join(repoRoot, 'renderer/vite.config.ts'), logLevel: 'warn' });
  const core = await createAppCore({ dataDir: o.dataDir, model: o.model, ...o.core });
  o.beforeServe?.(core);
  const host = await startWebHost({
    dispatcher: core.dispatcher,
    openai: core.openai,
    staticDir: join(repoRoot, 'dist/renderer'),
    apiToken: o.apiToken,
    uploads: {
      dir: dataPaths(o.dataDir).tmp,
      maxBytes: MAX_DOCUMENT_BYTES,
      importUpload: (fileName, tempPath, o) =>
        core.documents.imports.importUpload({ fileName, tempPath, keepDuplicate: o.keepDuplicate }),
    },
    documentFile: (id, part) => core.documents.library.file(id, part),
  });
  core.setServerInfo({ apiUrl: host.url, apiToken: o.apiToken });
  const api = connectApi(`ws://127.0.0.1:${host.port}/api/ws`, WebSocket as never, { token: o.apiToken });
  return { core, host, api };
}

/**
 * Chromium with a fresh profile in `userDataDir`, headless and off the network, its page's errors collected
 * in `errors` (and in globalThis.pageErrors, which the tests check at the end).
 */
export async function launchChromium(
  userDataDir: string,
  viewport: { width: number; height: number },
): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const { chromium } = await import('playwright-core');
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(20_000);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  (globalThis as { pageErrors?: string[] }).pageErrors = errors;
  return { context, page, errors };
}

/**
 * Chromium (a fresh profile under `dir`) on the app's page, once the library is on screen; with `paceTokensMs`,
 * the web host's chat.token events reach the page one every `paceTokensMs` (see paceTokenEvents).
 */
export async function openAppPage(
  dir: string,
  host: WebHost,
  viewport: { width: number; height: number },
  o: { paceTokensMs?: number } = {},
): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const opened = await launchChromium(join(dir, 'chromium'), viewport);
  if (o.paceTokensMs) await paceTokenEvents(opened.page, o.paceTokensMs);
  await opened.page.goto(host.signInUrl);
  await opened.page.getByRole('heading', { name: 'Library' }).waitFor();
  return opened;
}

/**
 * Delivers the web host's chat.token events to `page` one every `ms` milliseconds, in order with every other
 * message (the page's own messages pass as they are). stories260K writes a short answer in a few
 * milliseconds, and its events can all reach the page before React's next render, so the whole answer
 * appears at once (seen once in CI); paced as a slower model sends them, the tokens test what the UI does
 * with a stream, not how fast this machine writes one.
 */
export async function paceTokenEvents(page: Page, ms: number): Promise<void> {
  await page.routeWebSocket(
    (url) => url.pathname === '/api/ws',
    (ws) => {
      const server = ws.connectToServer();
      let delivered = Promise.resolve();
      server.onMessage((message) => {
        delivered = delivered.then(async () => {
          ws.send(message);
          if (typeof message === 'string' && message.includes('"event":"chat.token"'))
            await new Promise((r) => setTimeout(r, ms));
        });
      });
    },
  );
}

/**
 * Asks `question` in the chat on screen and waits up to `timeoutMs` for the answer to complete, asserting
 * that the page showed it as being written and that it grew in steps (a page opened with paced tokens).
 * Returns the completed answer.
 */
export async function askWatchingAnswer(page: Page, question: string, timeoutMs: number): Promise<Locator> {
  await page.evaluate(() => {
    const states: { status: string; len: number }[] = [];
    (window as unknown as { answerStates: typeof states }).answerStates = states;
    new MutationObserver(() => {
      const el = document.querySelector('[data-testid="msg-assistant"]');
      if (el)
        states.push({
          status: el.getAttribute('data-status') ?? '',
          len: (el.querySelector('.markdown')?.textContent ?? '').length,
        });
    }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
  });
  const box = page.getByRole('textbox', { name: /Ask about/ });
  await box.fill(question);
  await box.press('Enter');
  const answer = page.locator('[data-testid="msg-assistant"][data-status="complete"]');
  await answer.waitFor({ timeout: timeoutMs });
  const states = await page.evaluate(
    () => (window as unknown as { answerStates: { status: string; len: number }[] }).answerStates,
  );
  assert.ok(
    states.some((s) => s.status === 'streaming'),
    'the answer showed as being written',
  );
  const lengths = new Set(states.filter((s) => s.len > 0).map((s) => s.len));
  assert.ok(lengths.size >= 2, `the answer grew in steps (${[...lengths].join(', ')})`);
  return answer;
}

/** Closes what a test opened, whatever of it was opened (a failed `before` leaves some undefined), and removes `dir`. */
export async function closeE2e(o: {
  dir: string;
  context?: BrowserContext;
  api?: WsApi;
  host?: WebHost;
  core?: AppCore;
}): Promise<void> {
  await o.context?.close().catch(() => {});
  o.api?.close();
  await o.host?.close();
  await o.core?.close();
  if (o.dir) rmSync(o.dir, { recursive: true, force: true });
}

/** A test file's app and its page (e2eApp): filled in by its `before`, before the first test runs. */
/**
 * The settings of an e2e test on needle-llama (it copies the digits after "is "): greedy four-token answers, a cache
 * compressed no harder than a 60-token document's needle survives question-agnostically, the light theme for the
 * screenshots. As an e2eApp's beforePage.
 */
export const needleSettings = async ({ api }: { api: ServedApp['api'] }) =>
  void (await api.call('settings.update', {
    sampling: { maxTokens: 4, temperature: 0 },
    compression: { method: 'ada-snapkv', budget: 0.6 },
    theme: 'light',
  }));

export interface E2eApp extends ServedApp {
  dir: string;
  context: BrowserContext;
  page: Page;
  errors: string[];
}

/**
 * The app served and Chromium on its page for one test file: made in a `before` hook (nothing when `skip`),
 * closed and removed in an `after` hook. `beforePage` runs between the two (settings the page should load with),
 * `ready` once the page is open (the file's documents): in this hook, since node 20 does not wait for one root
 * `before` hook before it starts the next.
 */
export function e2eApp(o: {
  name: string;
  model: string;
  apiToken: string;
  skip: string | false;
  viewport: { width: number; height: number };
  beforeServe?: (core: AppCore) => void;
  core?: Partial<AppCoreOptions>;
  beforePage?: (app: ServedApp) => Promise<void>;
  ready?: (app: E2eApp) => Promise<void>;
  paceTokensMs?: number;
}): E2eApp {
  const app = { dir: '' } as E2eApp;
  before(async () => {
    if (o.skip) return;
    app.dir = mkdtempSync(join(tmpdir(), `folio-e2e-${o.name}-`));
    mkdirSync(shots, { recursive: true });
    Object.assign(
      app,
      await serveApp({
        dataDir: join(app.dir, 'library'),
        model: o.model,
        apiToken: o.apiToken,
        beforeServe: o.beforeServe,
        core: o.core,
      }),
    );
    await o.beforePage?.(app);
    Object.assign(app, await openAppPage(app.dir, app.host, o.viewport, { paceTokensMs: o.paceTokensMs }));
    await o.ready?.(app);
  });
  after(async () => {
    if (!o.skip) await closeE2e(app);
  });
  return app;
}
