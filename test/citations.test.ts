// Citations from the model's attention (docs/citations.md): the folding of the engine's per-position attention
// onto sentences and pages; the engine's collectAttention on needle-llama (its shape, its sums, and that it
// changes nothing of the answer); and the app's chats path: each needle-eval haystack imported as a plain-text
// document of three pages (form feeds at sentence ends), the question asked in a chat; when the answer is right,
// its citations put the needle's page first (the page chips too) and highlight the needle's sentence there, and
// they are stored with the message.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { Message } from '../electron/api/contract.ts';
import { loadAddon } from '../electron/engine/binding.ts';
import type { AppCore } from '../electron/services/app-core.ts';
import {
  ATTENTION_SINKS,
  citationLayers,
  citationsFromAttention,
  pageRefsOf,
  rankCitations,
  sentenceMass,
} from '../electron/services/citations.ts';
import { missing, sharedModel } from './helpers/shared.ts';
import { taskDone, testCore } from './helpers/test-core.ts';

const model = sharedModel('needle-llama.gguf');
const cases = sharedModel('needle-eval/dev.jsonl');
const skip = missing(model) || missing(cases);
const dir = mkdtempSync(join(tmpdir(), 'folio-citations-'));
let core: AppCore;

interface NeedleCase {
  id: string;
  task: string;
  prompt: string;
  answer: string;
  length: number;
  depth: number;
}

before(async () => {
  if (skip) return;
  core = await testCore(join(dir, 'library'), model);
  await core.dispatcher.dispatch('settings.update', {
    systemPrompt: '',
    sampling: { maxTokens: 6, temperature: 0 },
    compression: { method: 'full' },
  });
});
after(async () => {
  await core?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('the layers counted: the middle half, at least one', () => {
  assert.deepEqual(citationLayers(4), [1, 2]);
  assert.deepEqual(
    citationLayers(32),
    Array.from({ length: 16 }, (_, i) => 8 + i),
  );
  assert.deepEqual(citationLayers(1), [0]);
  assert.deepEqual(citationLayers(2), [0]);
});

test("attention folds onto sentences and pages: shares of the document's mass, sinks and other text left out", () => {
  // Tokens 0..3 are the sinks (and not page text here); page 1 is tokens 4..9, page 2 tokens 10..15; token 16
  // is the question. Each token covers 4 characters.
  const pages = [
    { page: 1, text: 'Aaa bbb. Ccc ddd. Eee.', tokenStart: 4, tokenEnd: 10 },
    { page: 2, text: 'Fff ggg. Hhh iii. Jjj.', tokenStart: 10, tokenEnd: 16 },
  ];
  const charMap = new Int32Array(17 * 3);
  for (const p of pages)
    for (let t = p.tokenStart; t < p.tokenEnd; t++) {
      const c = (t - p.tokenStart) * 4;
      charMap.set([p.page, c, Math.min(p.text.length, c + 4)], t * 3);
    }
  // Layer 0 (not counted for 4 layers) looks at page 1; layers 1 and 2 at page 2's second sentence (tokens 12, 13)
  // and a little at page 1; the question (16) and the sinks take much, and count for nothing.
  const layer = (f: (t: number) => number) => Float32Array.from({ length: 17 }, (_, t) => f(t));
  const attention = [
    layer((t) => (t >= 4 && t < 10 ? 0.1 : 0)),
    layer((t) => (t === 12 || t === 13 ? 0.2 : t === 5 ? 0.1 : t === 0 ? 0.5 : 0)),
    layer((t) => (t === 13 ? 0.2 : t === 16 ? 0.4 : t === 1 ? 0.3 : 0)),
    layer((t) => (t === 8 ? 0.9 : 0)),
  ];
  assert.equal(ATTENTION_SINKS, 4);
  const ss = sentenceMass(attention, { pages, charMap });
  assert.deepEqual(
    ss.map((x) => [x.page, x.start, x.end, Number(x.mass.toFixed(6))]),
    [
      [1, 0, 8, 0.1],
      [1, 9, 17, 0],
      [1, 18, 22, 0],
      [2, 0, 8, 0],
      [2, 9, 17, 0.6],
      [2, 18, 22, 0],
    ],
  );
  const cited = citationsFromAttention(attention, { pages, charMap })!;
  assert.equal(cited.length, 2);
  assert.equal(cited[0].page, 2);
  assert.ok(Math.abs(cited[0].share - 6 / 7) < 1e-6);
  assert.deepEqual(
    cited[0].sentences.map((x) => [x.start, x.end]),
    [[9, 17]],
  );
  assert.ok(Math.abs(cited[1].share - 1 / 7) < 1e-6);
  assert.deepEqual(pageRefsOf(cited), [2], 'page 1 has less than a quarter of page 2');
  // No attention to the document at all: no citations.
  assert.equal(citationsFromAttention([layer(() => 0), layer(() => 0)], { pages, charMap }), null);
  assert.equal(citationsFromAttention(null, { pages, charMap }), null);
});

test('pages rank by their best sentence; a page keeps its sentences of at least a quarter of its best, three at most', () => {
  const s = (page: number, start: number, mass: number) => ({ page, start, end: start + 5, mass });
  const ranked = rankCitations([
    // page 1: much diffuse mass, no sentence stands out; page 2: one sentence that does
    s(1, 0, 0.1),
    s(1, 10, 0.1),
    s(1, 20, 0.1),
    s(1, 30, 0.1),
    s(2, 0, 0.25),
    s(2, 10, 0.05),
    s(2, 20, 0.07),
  ])!;
  assert.deepEqual(
    ranked.map((p) => p.page),
    [2, 1],
  );
  assert.deepEqual(
    ranked[0].sentences.map((x) => x.start),
    [0, 20],
  );
  assert.equal(ranked[1].sentences.length, 3);
  assert.deepEqual(pageRefsOf(ranked), [2, 1]);
});

test("the engine adds up the answer's attention only when asked, without changing the answer", { skip }, async () => {
  const m = await loadAddon().loadModel(model);
  try {
    const c = JSON.parse(readFileSync(cases, 'utf8').split('\n')[0]) as NeedleCase;
    const tokens = m.tokenize(c.prompt, { addSpecial: true });
    const run = async (collectAttention: boolean) => {
      const s = m.createSession({ nCtx: 1024, nThreads: 2 });
      try {
        await s.prefill(tokens);
        return await s.generate({ n: 4, temperature: 0, collectAttention });
      } finally {
        s.dispose();
      }
    };
    const plain = await run(false);
    const watched = await run(true);
    assert.equal(plain.attention, null);
    assert.deepEqual(watched.tokens, plain.tokens);
    const a = watched.attention!;
    assert.equal(a.length, m.info().nLayer);
    for (const row of a) {
      assert.equal(row.length, tokens.length, 'one value per position before the answer');
      const sum = row.reduce((x, y) => x + y, 0);
      // The answer's 4 tokens are fed back; each also attends to the answer itself, so a row sums below 1.
      assert.ok(sum > 0.05 && sum <= 1 + 1e-4, `a layer's share ${sum}`);
      assert.ok(row.every((x) => x >= 0));
    }
  } finally {
    m.dispose();
  }
});

/** The haystack in three pages: form feeds after the sentence ends nearest its thirds. */
function threePages(haystack: string): string {
  const cuts = [1, 2].map((k) => {
    const at = haystack.indexOf('. ', Math.floor((k * haystack.length) / 3));
    return at < 0 ? -1 : at + 1;
  });
  let out = haystack;
  for (const c of cuts.filter((c) => c > 0).reverse()) out = `${out.slice(0, c)}\f${out.slice(c + 1)}`;
  return out;
}

test('a right answer cites the needle: its page first, its sentence highlighted, stored with the message', {
  skip,
}, async () => {
  const all = readFileSync(cases, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as NeedleCase);
  // The passkey cases of 512 tokens the model answers most often (the needle not too far back).
  const picked = all.filter((c) => c.task === 'passkey' && c.length === 512 && c.depth >= 0.5);
  let right = 0,
    first = 0;
  for (const c of picked) {
    const at = c.prompt.lastIndexOf(' What is');
    const text = threePages(c.prompt.slice(0, at));
    const r = (await core.dispatcher.dispatch('documents.import', {
      fileName: `${c.id}.txt`,
      dataBase64: Buffer.from(text).toString('base64'),
    })) as { documentId: string; taskId: string };
    const done = await taskDone(core, r.taskId);
    assert.equal(done.ok, true, done.error ?? '');
    const doc = (await core.dispatcher.dispatch('documents.get', { documentId: r.documentId })) as {
      pageList: { page: number; text: string }[];
    };
    assert.equal(doc.pageList.length, 3, `${c.id}: three pages`);
    const needlePage = doc.pageList.find((p) => p.text.includes(c.answer))!;
    const chat = (await core.dispatcher.dispatch('chats.create', { documentId: r.documentId })) as { id: string };
    const sent = (await core.dispatcher.dispatch('chats.send', {
      chatId: chat.id,
      text: c.prompt.slice(at + 1),
    })) as { assistant: Message };
    await core.chats.idle(chat.id);
    const got = (await core.dispatcher.dispatch('chats.get', { chatId: chat.id })) as { messages: Message[] };
    const m = got.messages.find((x) => x.id === sent.assistant.id)!;
    assert.equal(m.status, 'complete', m.error ?? '');
    assert.ok(m.citations && m.citations.length > 0, `${c.id}: the answer has citations`);
    // The page chips are the citations' order.
    assert.equal(m.pageRefs[0], m.citations[0].page, `${c.id}: the first chip is the first cited page`);
    const shares = m.citations.map((p) => p.share);
    assert.ok(
      shares.every((s) => s > 0 && s <= 1),
      `${c.id}: shares within (0, 1]`,
    );
    if (!m.text.includes(c.answer)) continue;
    right++;
    if (m.citations[0].page !== needlePage.page) continue;
    first++;
    const needleAt = needlePage.text.indexOf(c.answer);
    assert.ok(
      m.citations[0].sentences.some((s) => s.start <= needleAt && needleAt < s.end),
      `${c.id}: the needle's sentence is highlighted`,
    );
  }
  // The model has no chat template, so the chat continues the text as typed (the completion style) and this
  // model, made to copy the digits after "… is ", finds the key in most of these: 24 of 30 when this was
  // written, against 2 of 30 behind the plain "Question: … Answer:" format before. The citation of a right
  // answer points at the needle's page: 21 of 24 then (`folio eval --suite cite` measures 78% for the
  // needle's sentence first with the middle half of the layers, docs/quality.md).
  assert.ok(right >= 20, `${right} of ${picked.length} answered right`);
  assert.ok(first / right >= 0.8, `the needle's page first for ${first} of ${right} right answers`);
});
