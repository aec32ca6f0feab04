// The renderer benchmark page (built and driven by run-bench.mjs in Chromium): the inspector's heatmap
// for a 32 x 32 grid (a 32-layer model with 32 KV heads), and a 1,000-message chat scrolled frame by
// frame. Exposes window.bench; numbers come back as JSON.
import { flushSync } from 'react-dom';
import { createRoot } from 'react-dom/client';

import type { CompressionStats, Message } from '../../electron/api/contract.ts';
import { MessageRow } from '../src/components/ChatPane.tsx';
import { Heatmap } from '../src/components/Heatmap.tsx';
import { VirtualList } from '../src/components/VirtualList.tsx';
import { computeLayout, drawHeatmap, metricDomain, metricGrid, type Metric } from '../src/lib/heatmap.ts';
import { useChats } from '../src/stores/chats.ts';
import '../src/styles/app.css';

/** A deterministic pseudo-random sequence (the same numbers on every run). */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => (s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32;
}

function syntheticStats(layers: number, heads: number): CompressionStats {
  const r = rng(7);
  return {
    method: 'ada-snapkv',
    prefixTokens: 32_000,
    window: 32,
    kernel: 7,
    alpha: 0.2,
    kvType: 'f16',
    compressed: true,
    reason: null,
    budget: 6400,
    budgetSelectable: 6368,
    budgetClamped: false,
    kvBytesFull: 4e9,
    kvBytesKept: 8e8,
    msPrefill: 1e5,
    msCompress: 900,
    chunks: 16,
    chunkTokens: 2048,
    kvBytesPeak: 1.1e9,
    kvBytesBound: 1.2e9,
    positions: 32_000,
    rebased: false,
    layers: Array.from({ length: layers }, () => ({
      budget: 6400,
      slidingWindow: 0,
      bytesFull: 1.25e8,
      bytesKept: 2.5e7,
      epsOverC: r(),
      attnL1: null,
      msScore: 10,
      msSelect: 1,
      msCompact: 2,
      heads: Array.from({ length: heads }, () => ({
        kept: Math.round(1000 + 11000 * r()),
        retainedMass: 0.8 + 0.2 * r(),
        concentration: 0.3 * r(),
      })),
    })),
    tokenRetention: [],
  };
}

function summary(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return {
    n: s.length,
    median: q(0.5),
    p95: q(0.95),
    max: s[s.length - 1],
    mean: s.reduce((a, b) => a + b, 0) / s.length,
  };
}

const nextFrame = () => new Promise<number>((r) => requestAnimationFrame(r));

async function heatmap(runs = 60) {
  const st = syntheticStats(32, 32);
  const metrics: Metric[] = ['budget', 'mass', 'concentration'];
  // 1. The drawing alone, on a canvas of the inspector's size (flushed: getImageData waits for the raster).
  const canvas = document.createElement('canvas');
  document.body.appendChild(canvas);
  const grid = metricGrid(st, 'budget');
  const layout = computeLayout(32, 32, 640);
  const dpr = window.devicePixelRatio || 1;
  canvas.width = layout.width * dpr;
  canvas.height = layout.height * dpr;
  const ctx = canvas.getContext('2d')!;
  const domain = metricDomain([grid]);
  const draw: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    drawHeatmap(ctx, layout, metricGrid(st, metrics[i % 3]), domain, {
      dpr,
      selected: { row: i % 32, col: (i * 7) % 32 },
    });
    ctx.getImageData(0, 0, 1, 1);
    draw.push(performance.now() - t);
  }
  canvas.remove();
  // 2. The React component: first mount, then switching the metric (values, domain, redraw, the hidden table).
  const host = document.createElement('div');
  host.style.width = '680px';
  document.getElementById('root')!.appendChild(host);
  const hroot = createRoot(host);
  const render = (m: Metric) => {
    const g = metricGrid(st, m);
    hroot.render(<Heatmap stats={st} metric={m} domain={metricDomain([g])} label="bench" testId="bench-heatmap" />);
  };
  let t = performance.now();
  flushSync(() => render('budget'));
  (document.querySelector('[data-testid="bench-heatmap"]') as HTMLCanvasElement)
    .getContext('2d')!
    .getImageData(0, 0, 1, 1);
  const mount = performance.now() - t;
  const update: number[] = [];
  for (let i = 1; i <= runs; i++) {
    t = performance.now();
    flushSync(() => render(metrics[i % 3]));
    (document.querySelector('[data-testid="bench-heatmap"]') as HTMLCanvasElement)
      .getContext('2d')!
      .getImageData(0, 0, 1, 1);
    update.push(performance.now() - t);
  }
  // 3. Frames while the metric switches every frame (what the user sees), after a few frames to settle.
  for (let i = 0; i < 10; i++) await nextFrame();
  const frames: number[] = [];
  let last = await nextFrame();
  for (let i = 0; i < runs; i++) {
    render(metrics[i % 3]);
    const now = await nextFrame();
    frames.push(now - last);
    last = now;
  }
  hroot.unmount();
  host.remove();
  return {
    grid: '32 x 32',
    cell: layout.cell,
    drawMs: summary(draw),
    mountMs: mount,
    updateMs: summary(update),
    frameMs: summary(frames),
  };
}

function chatMessages(n: number): Message[] {
  const r = rng(11);
  const words =
    'the little girl named Lily had a red kite with a long blue tail and she loved to fly it in the park near her house'.split(
      ' ',
    );
  const sentence = () =>
    Array.from({ length: 6 + Math.floor(r() * 14) }, () => words[Math.floor(r() * words.length)]).join(' ') + '.';
  const para = () => Array.from({ length: 1 + Math.floor(r() * 4) }, sentence).join(' ');
  return Array.from({ length: n }, (_, i) => {
    const user = i % 2 === 0;
    let text = user
      ? sentence().replace(/\.$/, '?')
      : Array.from({ length: 1 + Math.floor(r() * 4) }, para).join('\n\n');
    if (!user && r() < 0.2) text += '\n\n- ' + sentence() + '\n- ' + sentence() + '\n\n`code` and **bold**';
    return {
      id: `m${i}`,
      chatId: 'bench',
      role: user ? 'user' : 'assistant',
      text,
      status: 'complete',
      createdAt: new Date(2026, 0, 1, 0, i).toISOString(),
      tokens: user ? null : 40 + Math.floor(r() * 200),
      tokensPerSecond: user ? null : 20 + r() * 20,
      pageRefs: user ? [] : [1 + Math.floor(r() * 30)],
      citations: null,
      error: null,
      version: { index: 1, count: 1 },
    };
  });
}

async function scroll(n = 1000, step = 120) {
  const messages = chatMessages(n);
  useChats.setState({
    messages: Object.fromEntries(messages.map((m) => [m.id, m])),
    order: { bench: messages.map((m) => m.id) },
  });
  const ids = messages.map((m) => m.id);
  const box = document.createElement('div');
  box.style.cssText = 'height: 760px; width: 960px; display: flex; flex-direction: column;';
  document.getElementById('root')!.appendChild(box);
  const croot = createRoot(box);
  const t = performance.now();
  flushSync(() =>
    croot.render(
      <VirtualList
        keys={ids}
        label="bench"
        renderItem={(id) => <MessageRow id={id} isLast={false} />}
        estimate={140}
      />,
    ),
  );
  const mount = performance.now() - t;
  await nextFrame();
  await nextFrame();
  const list = box.querySelector('.vlist') as HTMLElement;
  // The list opens at the bottom (the latest messages) and stays there while rows are measured: go to the
  // top and wait until it stays there.
  for (let i = 0; i < 20 && (i === 0 || list.scrollTop > 0); i++) {
    list.scrollTop = 0;
    for (let f = 0; f < 3; f++) await nextFrame();
  }
  const dims = { clientHeight: list.clientHeight, scrollHeight: list.scrollHeight };
  // Smooth scrolling: `step` pixels a frame, top to bottom (the measured heights replace estimates as it goes).
  const frames: number[] = [];
  const rows: number[] = [];
  let last = await nextFrame();
  let frames60 = 0;
  while (list.scrollTop + list.clientHeight < list.scrollHeight - 1 && frames.length < 3000) {
    list.scrollTop += step;
    const now = await nextFrame();
    frames.push(now - last);
    if (now - last > 1000 / 60 + 1) frames60++;
    rows.push(box.querySelectorAll('.vlist-item').length);
    last = now;
  }
  // Jumps: anywhere in the chat at once (every row new).
  const r = rng(3);
  const jumps: number[] = [];
  last = await nextFrame();
  for (let i = 0; i < 60; i++) {
    list.scrollTop = r() * list.scrollHeight;
    const now = await nextFrame();
    jumps.push(now - last);
    last = now;
  }
  croot.unmount();
  box.remove();
  return {
    messages: n,
    mountMs: mount,
    dims,
    scrolledPx: frames.length * step,
    frames: frames.length,
    frameMs: summary(frames),
    framesOver16ms: frames60,
    rowsInDom: summary(rows),
    jumpFrameMs: summary(jumps),
  };
}

declare global {
  interface Window {
    bench: { heatmap: typeof heatmap; scroll: typeof scroll; ready: boolean };
  }
}
window.bench = { heatmap, scroll, ready: true };
