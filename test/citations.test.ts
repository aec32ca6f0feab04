// Citations from the model's attention through the app's chats path (docs/citations.md), on needle-llama: each
// needle-eval haystack is imported as a plain-text document of three pages (form feeds at sentence ends),
// the question asked in a chat; when the answer is right, its citations put the needle's page first (the
// page chips too) and highlight the needle's sentence there, and they are stored with the message.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { EventPayload, Message } from '../electron/api/contract.ts';
import { createAppCore, type AppCore } from '../electron/services/app-core.ts';
import { missing, sharedModel } from './helpers/shared.ts';

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
  core = await createAppCore({
    dataDir: join(dir, 'library'),
    model,
    models: { discovery: { knownPlaces: false, systemWide: false } },
  });
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

function taskDone(taskId: string): Promise<EventPayload<'task.done'>> {
  return new Promise((resolve) => {
    const off = core.bus.subscribe((event, payload) => {
      if (event === 'task.done' && (payload as EventPayload<'task.done'>).taskId === taskId) {
        off();
        resolve(payload as EventPayload<'task.done'>);
      }
    });
  });
}

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
    const done = await taskDone(r.taskId);
    assert.equal(done.ok, true, done.error ?? '');
    const doc = (await core.dispatcher.dispatch('documents.get', { documentId: r.documentId })) as {
      pageList: { page: number; text: string }[];
    };
    assert.equal(doc.pageList.length, 3, `${c.id}: three pages`);
    const needlePage = doc.pageList.find((p) => p.text.includes(c.answer))!;
    const chat = (await core.dispatcher.dispatch('chats.create', { documentId: r.documentId })) as { id: string };
    const sent = (await core.dispatcher.dispatch('chats.send', {
      chatId: chat.id,
      text: c.prompt.slice(at + 1).trim(),
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
  // Behind the plain chat format ("Question: … Answer:") this model, made to copy the digits after "… is", finds
  // the key in few of these (2 of 30 when this was written; `folio eval --suite cite` asks in its own format).
  // The citation of a right answer must point at the needle's page.
  assert.ok(right >= 2, `${right} of ${picked.length} answered right`);
  assert.ok(first / right >= 0.9, `the needle's page first for ${first} of ${right} right answers`);
});
