// Scanned PDFs read by OCR (issue 42; electron/documents/ocr.ts), on scans made here: known text typeset with
// pdf-lib, drawn to pixels by pdf.js and put back on pages as pictures alone, so nothing but the recogniser can
// read them. Most of the words come back in order; a mixed PDF keeps its text layer where it has one; a page of
// noise is marked uncertain or found empty, never a crash; the recognition reports its own progress stage and
// can be cancelled.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { importDocument, type ImportedDocument } from '../electron/documents/index.ts';
import {
  DEFAULT_OCR_SECONDS_PER_PAGE,
  LOW_OCR_CONFIDENCE,
  OcrCache,
  needsOcr,
  ocrLanguages,
  ocrSpeed,
  recordOcrSpeed,
} from '../electron/documents/ocr.ts';
import { ocrNotes, parseOcrPages } from '../electron/shared/ocr.ts';
import { scannedPdf, tinyPng, typesetImage } from './helpers/make-pdf.ts';

const KITE =
  'Lily had a red kite with a long tail. Every morning she ran to the top of the hill behind her house and let ' +
  'the wind carry it over the trees. The secret code is 7306, she told her brother, and he wrote it down.';
const BOAT =
  'Sam built a small boat from the planks his grandfather kept in the barn. He painted it blue, named it after ' +
  'his dog, and sailed it across the pond on the first warm day of spring.';

const words = (s: string) => s.toLowerCase().match(/[a-z0-9]+/g) ?? [];

/** The share of `want`'s words found in `got`, in order (their longest common subsequence over their count). */
function inOrder(want: string, got: string): number {
  const a = words(want);
  const b = words(got);
  let row = new Array<number>(b.length + 1).fill(0);
  for (const x of a) {
    const next = [0];
    for (let j = 1; j <= b.length; j++) next[j] = x === b[j - 1] ? row[j - 1] + 1 : Math.max(row[j], next[j - 1]);
    row = next;
  }
  return row[b.length] / a.length;
}

const imp = (fileName: string, bytes: Uint8Array, o: Parameters<typeof importDocument>[1] = {}) =>
  importDocument({ fileName, bytes }, o);

test('the rule: a page is read by OCR when it draws something and holds less than half a character a square inch', () => {
  assert.equal(needsOcr(0, 612, 792, true), true);
  assert.equal(needsOcr(40, 612, 792, true), true, 'a stamped date on a scan');
  assert.equal(needsOcr(60, 612, 792, true), false, 'a letter page holds 93.5 square inches');
  assert.equal(needsOcr(0, 612, 792, false), false, 'a blank page');
});

test('a scanned PDF: its words recognised in order, each page with its confidence and the words where they are', async () => {
  const stages: string[] = [];
  const doc: ImportedDocument = await imp('scan.pdf', await scannedPdf([KITE, BOAT]), {
    onProgress: (_d, _t, stage) => stages.push(stage ?? 'read'),
  });
  assert.equal(doc.kind, 'pdf');
  assert.equal(doc.pages.length, 2);
  for (const [i, want] of [KITE, BOAT].entries()) {
    const page = doc.pages[i];
    const found = inOrder(want, page.text);
    assert.ok(found >= 0.95, `page ${i + 1}: ${(100 * found).toFixed(1)}% of the words in order: ${page.text}`);
    assert.ok(page.ocr, 'the page says it was read by OCR');
    assert.equal(page.ocr.language, 'eng');
    assert.ok(page.ocr.confidence > LOW_OCR_CONFIDENCE, `confidence ${page.ocr.confidence}`);
    // Words on the page where the text was typeset: from 56 pt in, the first baseline near 730 pt from the
    // bottom (62 pt from the top), 12 pt type.
    const first = page.ocr.words[0];
    assert.ok(Math.abs(first.x - 56) < 4 && Math.abs(first.y - 62) < 4, JSON.stringify(first));
    assert.ok(first.size > 8 && first.size < 18, `size ${first.size}`);
  }
  assert.match(doc.pages[0].text, /7306/);
  assert.deepEqual(doc.warnings, [
    'pages 1–2 were read by OCR (English): the text is recognised from the image and may hold mistakes',
  ]);
  assert.ok(stages.includes('ocr') && stages.indexOf('ocr') > stages.indexOf('read'), stages.join(' '));
});

test('a mixed PDF reads its text layer where it has one and OCR elsewhere; a page of noise is uncertain, not a crash', async () => {
  const doc = await imp('mixed.pdf', await scannedPdf([KITE, BOAT, 'noise'], { withText: [1] }));
  assert.equal(doc.pages[0].ocr, undefined, 'page 1 has a text layer');
  assert.equal(inOrder(KITE, doc.pages[0].text), 1);
  assert.ok(doc.pages[1].ocr && inOrder(BOAT, doc.pages[1].text) >= 0.95);
  const noise = doc.pages[2];
  assert.ok(noise.ocr, 'the noise page went through OCR');
  assert.ok(
    noise.ocr.words.length === 0 || noise.ocr.confidence < LOW_OCR_CONFIDENCE,
    `noise: ${noise.ocr.words.length} words at ${noise.ocr.confidence}`,
  );
  assert.ok(
    doc.warnings.some((w) => /pages 2–3 were read by OCR/.test(w)),
    doc.warnings.join(' | '),
  );
  if (noise.ocr.words.length)
    assert.ok(
      doc.warnings.some((w) => /recognition of page 3 is uncertain/.test(w)),
      doc.warnings.join(' | '),
    );
});

test("a scan being recognised can be cancelled, and is stopped at the parse's time limit", async () => {
  const controller = new AbortController();
  await assert.rejects(
    imp('long-scan.pdf', await scannedPdf([KITE, BOAT, KITE, BOAT]), {
      signal: controller.signal,
      onProgress: (_d, _t, stage) => {
        if (stage === 'ocr') controller.abort();
      },
    }),
    (e: { code?: string }) => e.code === 'ABORTED',
  );
  await assert.rejects(
    imp('slow-scan.pdf', await scannedPdf([KITE, BOAT, KITE, BOAT]), { timeLimitMs: 1500 }),
    (e: { code?: string; message: string }) => e.code === 'TIMEOUT' && /slow-scan\.pdf.*took more than/.test(e.message),
  );
  // The parser that was stopped is not reused: the next import reads as before.
  const after = await imp('after.pdf', await scannedPdf([BOAT]));
  assert.ok(inOrder(BOAT, after.pages[0].text) >= 0.95);
});

test('a PNG is a document of one page read by OCR, kept as the page it was put on; a damaged one is CORRUPT', async () => {
  const doc = await imp('Lily note.png', await typesetImage(KITE));
  assert.equal(doc.kind, 'image');
  assert.equal(doc.title, 'Lily note');
  assert.equal(doc.pages.length, 1);
  assert.ok(inOrder(KITE, doc.pages[0].text) >= 0.95, doc.pages[0].text);
  assert.ok(doc.pages[0].ocr);
  assert.ok(doc.pdf && Buffer.from(doc.pdf.subarray(0, 5)).toString('latin1') === '%PDF-', 'the page is kept');
  const broken = (await typesetImage(BOAT)).slice(0, 2000);
  await assert.rejects(
    imp('torn.png', broken),
    (e: { code?: string; message: string }) =>
      e.code === 'CORRUPT' && /torn\.png is damaged: its PNG image is cut short/.test(e.message),
  );
  const header = Buffer.from(await typesetImage(BOAT));
  header.writeUInt32BE(50_000, 16); // IHDR width: 50,000 × 2,200 pixels
  await assert.rejects(
    imp('huge.png', header),
    (e: { code?: string; message: string }) => e.code === 'TOO_LARGE' && /more than 100 megapixels/.test(e.message),
  );
  // A picture with no writing in it: nothing recognised, said so.
  await assert.rejects(imp('dot.png', tinyPng()), (e: { code?: string }) => e.code === 'NO_TEXT_LAYER');
});

test('a scan stopped part-way goes on from the pages it recognised when the same file is imported again', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'folio-ocr-cache-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const bytes = await scannedPdf([KITE, BOAT, KITE, BOAT]);
  const controller = new AbortController();
  await assert.rejects(
    imp('resumed.pdf', bytes.slice(), {
      ocrCache: dir,
      signal: controller.signal,
      onProgress: (done, _t, stage) => {
        if (stage === 'ocr' && done === 2) controller.abort();
      },
    }),
    (e: { code?: string }) => e.code === 'ABORTED',
  );
  // Two pages were kept as they were done (the stop comes after the second's progress).
  const { createHash } = await import('node:crypto');
  const sha = createHash('sha256').update(bytes).digest('hex');
  const kept = [1, 2].map((p) => join(dir, `${sha}-${p}.json`));
  assert.ok(
    kept.every((f) => existsSync(f)),
    'pages 1 and 2 kept',
  );
  const when = kept.map((f) => statSync(f).mtimeMs);
  const doc = await imp('resumed.pdf', bytes.slice(), { ocrCache: dir });
  assert.deepEqual(
    kept.map((f) => statSync(f).mtimeMs),
    when,
    'pages 1 and 2 were not read again',
  );
  assert.ok(existsSync(join(dir, `${sha}-4.json`)), 'the rest were read and kept');
  for (const [i, want] of [KITE, BOAT, KITE, BOAT].entries())
    assert.ok(inOrder(want, doc.pages[i].text) >= 0.95, `page ${i + 1}`);
  OcrCache.clear(dir, sha);
  assert.ok(!existsSync(kept[0]), 'cleared once the import is stored');
});

test('more languages are Tesseract models the user adds to a folder: listed, and read with when chosen', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'folio-ocr-languages-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  assert.deepEqual(
    ocrLanguages(dir).map((l) => l.code),
    ['eng'],
    'English is shipped',
  );
  // A model as the tessdata repositories name it (here the npm package's French one), and files that are not models.
  const { createRequire } = await import('node:module');
  const fra = join(
    dirname(createRequire(import.meta.url).resolve('@tesseract.js-data/fra/package.json')),
    '4.0.0_best_int',
    'fra.traineddata.gz',
  );
  copyFileSync(fra, join(dir, 'fra.traineddata.gz'));
  writeFileSync(join(dir, 'notes.txt'), 'not a model');
  assert.deepEqual(
    ocrLanguages(dir).map((l) => l.code),
    ['eng', 'fra'],
  );
  const FRENCH =
    'Le café du coin sert une crème brûlée délicieuse. Élise a noté le code secret 7306 dans son cahier, ' +
    'puis elle est rentrée à la maison avant la pluie.';
  const doc = await imp('note.pdf', await scannedPdf([FRENCH]), { ocrLanguages: ocrLanguages(dir) });
  assert.equal(doc.pages[0].ocr?.language, 'eng+fra');
  assert.ok(inOrder(FRENCH, doc.pages[0].text) >= 0.9, doc.pages[0].text);
  assert.match(doc.pages[0].text, /crème brûlée/);
  assert.ok(doc.warnings[0].includes('read by OCR (English, French)'), doc.warnings[0]);
});

test('a long scan stops before its OCR for the choice of pages; a range reads only those, and the resume keeps working', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'folio-ocr-range-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const bytes = await scannedPdf([KITE, BOAT, KITE]);
  const ask = { overSeconds: 5, secondsPerPage: 2 };
  // Three pages at 2 s a page is 6 s, over the 5 s asked for: nothing is recognised, the plan says what would be.
  const stages: string[] = [];
  await assert.rejects(
    imp('long.pdf', bytes.slice(), { ocrCache: dir, ocrAsk: ask, onProgress: (_d, _t, st) => stages.push(st ?? '') }),
    (e: { code?: string; message: string; details?: unknown }) => {
      assert.equal(e.code, 'OCR_CHOICE');
      assert.match(e.message, /long\.pdf has 3 pages without a text layer to read by OCR \(about 5 s here\)/);
      assert.deepEqual(e.details, { pages: 3, ocrPages: [1, 2, 3], pending: [1, 2, 3], secondsPerPage: 2 });
      return true;
    },
  );
  assert.ok(!stages.includes('ocr'), 'no page was recognised before the choice');
  // Page 2 only: the others are kept as pages, empty and marked unread, and the warnings say so.
  const one = await imp('long.pdf', bytes.slice(), { ocrCache: dir, ocrAsk: ask, ocrPages: [2, 2] });
  assert.equal(one.pages.length, 3);
  assert.ok(inOrder(BOAT, one.pages[1].text) >= 0.95, one.pages[1].text);
  for (const i of [0, 2]) {
    assert.equal(one.pages[i].text, '');
    assert.equal(one.pages[i].ocr?.unread, true, `page ${i + 1} is marked unread`);
  }
  assert.equal(one.ocrSeconds.length, 1, 'one page recognised, its time measured');
  assert.ok(
    one.warnings.some((w) =>
      /^pages 1, 3 were not read: they have no text layer and lay outside the pages chosen/.test(w),
    ),
    one.warnings.join(' | '),
  );
  assert.ok(
    one.warnings.some((w) => /^page 2 was read by OCR/.test(w)),
    one.warnings.join(' | '),
  );
  // The same file again: page 2 is kept, so the plan counts only the two others, and a range over pages 2–3
  // reads page 3 alone.
  await assert.rejects(
    imp('long.pdf', bytes.slice(), { ocrCache: dir, ocrAsk: { ...ask, overSeconds: 3 } }),
    (e: { details?: { pending?: number[] } }) => {
      assert.deepEqual(e.details?.pending, [1, 3]);
      return true;
    },
  );
  const { createHash } = await import('node:crypto');
  const kept2 = join(dir, `${createHash('sha256').update(bytes).digest('hex')}-2.json`);
  const when = statSync(kept2).mtimeMs;
  const two = await imp('long.pdf', bytes.slice(), { ocrCache: dir, ocrPages: [2, 3] });
  assert.equal(statSync(kept2).mtimeMs, when, 'page 2 was not read again');
  assert.equal(two.ocrSeconds.length, 1);
  assert.ok(inOrder(KITE, two.pages[2].text) >= 0.95 && two.pages[0].ocr?.unread);
  // A range past the last page is refused, saying which pages there are.
  await assert.rejects(
    imp('long.pdf', bytes.slice(), { ocrPages: [5, 9] }),
    (e: { code?: string; message: string }) =>
      e.code === 'BAD_RANGE' &&
      /long\.pdf has 3 pages: pages 5–9 are not among them; choose pages from 1 to 3/.test(e.message),
  );
});

test("this machine's OCR speed is the median of its last pages, the documented default before any", () => {
  const dir = mkdtempSync(join(tmpdir(), 'folio-ocr-speed-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  assert.deepEqual(ocrSpeed(dir), { secondsPerPage: DEFAULT_OCR_SECONDS_PER_PAGE, measured: false });
  recordOcrSpeed(dir, [3, 1]);
  recordOcrSpeed(dir, [2]);
  assert.deepEqual(ocrSpeed(dir), { secondsPerPage: 2, measured: true });
  writeFileSync(join(dir, 'speed.json'), '{"seconds": "damaged"');
  assert.equal(ocrSpeed(dir).measured, false, 'a damaged file is the default');
  assert.deepEqual(parseOcrPages('3-40'), [3, 40]);
  assert.deepEqual(parseOcrPages('7'), [7, 7]);
  assert.equal(parseOcrPages('all'), 'all');
  assert.equal(parseOcrPages('9-3'), null);
  assert.equal(parseOcrPages('0'), null);
  assert.deepEqual(ocrNotes([{ page: 1, ocr: { language: 'eng', confidence: 0, unread: true } }]), [
    'page 1 was not read: it has no text layer and lay outside the pages chosen for OCR at import, so answers know nothing of it (import the file again to read it)',
  ]);
});
