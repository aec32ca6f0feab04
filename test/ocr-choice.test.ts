// The choice before a long OCR (issue 42), on a real app core (storage, the engine process, stories260K) through
// the API: an import whose scan would take longer than the app's limit to recognise stops before any page is
// recognised, the document importing with the choice in its summary (how many pages, how long at this machine's
// speed); a range reads only those pages, the others kept as pages marked unread; cancelling at the choice leaves a
// cancelled import that can be tried again, and nothing stored is lost. The limit is made short so that a scan of
// two pages asks; the recognition is real.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { DocumentDetail, DocumentSummary, EventPayload } from '../electron/api/contract.ts';
import { DEFAULT_OCR_SECONDS_PER_PAGE } from '../electron/documents/ocr.ts';
import type { AppCore } from '../electron/services/app-core.ts';
import { scannedPdf } from './helpers/make-pdf.ts';
import { missing, sharedModel } from './helpers/shared.ts';
import { taskDone, testCore } from './helpers/test-core.ts';

const model = sharedModel('stories260K.gguf');
const skip = missing(model);
const dir = mkdtempSync(join(tmpdir(), 'folio-ocr-choice-'));
let core: AppCore;
const call = <T>(method: string, params: unknown) => core.dispatcher.dispatch(method, params) as Promise<T>;

const KITE = 'Lily had a red kite with a long tail. The secret code is 7306, she told her brother.';
const BOAT = 'Sam built a small boat from the planks his grandfather kept in the barn and painted it blue.';

before(async () => {
  if (skip) return;
  // Two pages at the default 5 s a page take 10 s: over a limit of 3 s, so the import asks.
  core = await testCore(join(dir, 'library'), model, { ocrAskOverSeconds: 3 });
});
after(async () => {
  await core?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Imports through the API, and waits for the import to stop for the choice of pages (its summary then). */
async function importWaiting(params: Record<string, unknown>) {
  let id = '';
  const waiting = new Promise<DocumentSummary>((resolve) => {
    const off = core.bus.subscribe((event, payload) => {
      const d = payload as EventPayload<'documents.changed'>;
      if (event === 'documents.changed' && d.id === id && d.ocrChoice) {
        off();
        resolve(d);
      }
    });
  });
  const r = await call<{ documentId: string; taskId: string }>('documents.import', params);
  id = r.documentId;
  return { r, asked: await waiting };
}

test('a long scan waits for the choice with its pages and estimate; a range reads only those pages', {
  skip,
}, async () => {
  const pdf = Buffer.from(await scannedPdf([KITE, BOAT])).toString('base64');
  const { r, asked } = await importWaiting({ fileName: 'scan.pdf', dataBase64: pdf });
  const id = r.documentId;
  assert.equal(asked.status, 'importing');
  assert.deepEqual(asked.ocrChoice, {
    pages: 2,
    ocrPages: [1, 2],
    pending: [1, 2],
    secondsPerPage: DEFAULT_OCR_SECONDS_PER_PAGE,
    measured: false,
  });
  // The list says the same (a window opened now sees the choice).
  assert.deepEqual(
    (await call<DocumentSummary[]>('documents.list', {})).find((d) => d.id === id)?.ocrChoice,
    asked.ocrChoice,
  );
  await assert.rejects(call('documents.chooseOcrPages', { documentId: id, pages: [3, 4] }), /has 2 pages: pages 3–4/);
  await call('documents.chooseOcrPages', { documentId: id, pages: [2, 2] });
  const done = await taskDone(core, r.taskId);
  assert.equal(done.ok, true, done.error ?? '');
  const doc = await call<DocumentDetail>('documents.get', { documentId: id });
  assert.equal(doc.status, 'ready');
  assert.equal(doc.ocrChoice, undefined, 'the choice is answered');
  assert.deepEqual(doc.pageList[0].ocr, { language: 'eng', confidence: 0, unread: true });
  assert.equal(doc.pageList[0].text, '');
  assert.match(doc.pageList[1].text, /boat/);
  assert.ok(doc.pageList[1].ocr && !doc.pageList[1].ocr.unread && doc.pageList[1].ocr.confidence > 60);
  assert.ok(doc.tokens > 0);
  // The page recognised measured this machine's speed: the next choice is estimated from it.
  const { r: r2, asked: next } = await importWaiting({ fileName: 'scan.pdf', dataBase64: pdf, keepDuplicate: true });
  const again = r2.documentId;
  const second = next.ocrChoice!;
  assert.equal(second.measured, true);
  assert.notEqual(second.secondsPerPage, DEFAULT_OCR_SECONDS_PER_PAGE);

  // Cancel at the choice: a cancelled import, tried again with a range given up front; the first document is intact.
  const ended = taskDone(core, r2.taskId);
  await call('tasks.cancel', { taskId: r2.taskId });
  const cancelled = await ended;
  assert.equal(cancelled.cancelled, true);
  const left = await call<DocumentSummary>('documents.get', { documentId: again });
  assert.equal(left.status, 'failed');
  assert.equal(left.remedy, 'import');
  assert.equal(left.ocrChoice, undefined);
  await assert.rejects(
    call('documents.chooseOcrPages', { documentId: again, pages: 'all' }),
    (e: { code?: string }) => e.code === 'NOT_WAITING',
  );
  assert.equal(
    (await call<DocumentDetail>('documents.get', { documentId: id })).status,
    'ready',
    'nothing stored is lost',
  );
  const r3 = await call<{ taskId: string }>('documents.import', { documentId: again, ocrPages: [1, 1] });
  const done3 = await taskDone(core, r3.taskId);
  assert.equal(done3.ok, true, done3.error ?? '');
  const tried = await call<DocumentDetail>('documents.get', { documentId: again });
  assert.match(tried.pageList[0].text, /kite/);
  assert.equal(tried.pageList[1].ocr?.unread, true);
});
