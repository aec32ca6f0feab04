// npm run bench:renderer — the renderer's performance in Chromium (not a test: it prints numbers).
//   1. the inspector's heatmap for a 32 x 32 grid: drawing alone, the component's first mount, a metric
//      switch (values, domain, redraw) and the frames while it switches every frame; target under 16 ms;
//   2. a 1,000-message chat in the virtualised list, scrolled 120 px a frame from top to bottom, then
//      jumps anywhere: frame times, and how many rows are in the DOM.
// Builds renderer/bench/index.html with Vite into a temporary folder, serves it on 127.0.0.1, drives
// Debian's /usr/bin/chromium with playwright-core (the same flags as the e2e test). --json prints JSON only.
import { createServer } from 'node:http';
import { createReadStream, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const renderer = fileURLToPath(new URL('..', import.meta.url));
const json = process.argv.includes('--json');
const log = (...a) => !json && console.log(...a);

if (!existsSync(CHROMIUM)) {
  console.error(`needs ${CHROMIUM} (Debian's chromium package), or set CHROMIUM`);
  process.exit(2);
}

const out = mkdtempSync(join(tmpdir(), 'folio-bench-'));
const { build } = await import('vite');
const react = (await import('@vitejs/plugin-react')).default;
log('building the benchmark page…');
await build({
  configFile: false,
  root: renderer,
  base: './',
  logLevel: 'warn',
  plugins: [react()],
  build: {
    outDir: out,
    emptyOutDir: true,
    target: 'es2022',
    rollupOptions: { input: join(renderer, 'bench/index.html') },
  },
});

const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };
const server = createServer((req, res) => {
  const file = normalize(join(out, decodeURIComponent(new URL(req.url, 'http://x').pathname)));
  if (!file.startsWith(out) || !existsSync(file) || statSync(file).isDirectory()) return res.writeHead(404).end();
  res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' });
  createReadStream(file).pipe(res);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}/bench/index.html`;

const { chromium } = await import('playwright-core');
const context = await chromium.launchPersistentContext(join(out, 'profile'), {
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
  viewport: { width: 1280, height: 900 },
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('pageerror', (e) => console.error('page error:', e.message));
  await page.goto(url);
  await page.waitForFunction(() => window.bench?.ready);
  log('heatmap 32 x 32…');
  const heatmap = await page.evaluate(() => window.bench.heatmap(60));
  log('chat of 1,000 messages…');
  const scroll = await page.evaluate(() => window.bench.scroll(1000, 120));
  const result = { chromium: (await context.browser()?.version?.()) ?? null, heatmap, scroll };
  if (json) console.log(JSON.stringify(result, null, 2));
  else {
    const f = (x) => `${x.toFixed(2)} ms`;
    const s = (x) => `median ${f(x.median)}, p95 ${f(x.p95)}, max ${f(x.max)} (n=${x.n})`;
    console.log(`\nheatmap ${heatmap.grid} (cells of ${heatmap.cell} px), target < 16 ms`);
    console.log(`  draw alone           ${s(heatmap.drawMs)}`);
    console.log(`  component mount      ${f(heatmap.mountMs)}`);
    console.log(`  metric switch        ${s(heatmap.updateMs)}`);
    console.log(`  frames while switching every frame: ${s(heatmap.frameMs)}`);
    console.log(`\nchat: ${scroll.messages} messages, virtualised`);
    console.log(`  mount                ${f(scroll.mountMs)}`);
    console.log(
      `  scrolling ${scroll.scrolledPx} px at 120 px/frame: ${s(scroll.frameMs)}; ${scroll.framesOver16ms} of ${scroll.frames} frames over 17.7 ms`,
    );
    console.log(`  rows in the DOM      median ${scroll.rowsInDom.median}, max ${scroll.rowsInDom.max}`);
    console.log(`  jumps anywhere       ${s(scroll.jumpFrameMs)}`);
  }
} finally {
  await context.close();
  server.close();
  rmSync(out, { recursive: true, force: true });
}
