// OCR's memory (issue 42): Tesseract's WebAssembly heap lives outside the parser thread's JavaScript heap cap, so
// what bounds it is the drawn page (at most OCR_MAX_PIXELS) and the heap's own end (TESSERACT_HEAP_BYTES). A page at
// the cap is read within that bound; a page past what the heap holds (the cap raised for the test, the recognition
// real) fails the import with a clear error, the process goes on, and the pages recognised before it stay kept for
// the resume, which then reads the page at the cap.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PDFDocument } from 'pdf-lib';

import { importDocument } from '../electron/documents/index.ts';
import { OCR_MAX_PIXELS, TESSERACT_HEAP_BYTES } from '../electron/documents/ocr.ts';
import { prose, typesetImage } from '../electron/documents/synthetic-scan.ts';

/** A PDF of a letter page of print, then a poster page (`side` points square) with the same picture at its top. */
async function letterAndPoster(side: number): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const png = await doc.embedPng(await typesetImage(prose(120), 200));
  doc.addPage([612, 792]).drawImage(png, { x: 0, y: 0, width: 612, height: 792 });
  doc.addPage([side, side]).drawImage(png, { x: 0, y: side - 792 * 2, width: 612 * 2, height: 792 * 2 });
  return doc.save();
}

/** The process's peak resident memory above what it held before, while `work` runs (sampled every 20 ms). */
async function peakGrowth<T>(work: () => Promise<T>): Promise<{ value: T; growth: number }> {
  const base = process.memoryUsage().rss;
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  try {
    const value = await work();
    return { value, growth: Math.max(peak, process.memoryUsage().rss) - base };
  } finally {
    clearInterval(timer);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'folio-ocr-memory-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test("a page past what the recogniser's heap holds fails clearly; the process goes on, the pages kept stay, and at the cap the page is read within the bound", async () => {
  // 3,000 points square is 156 megapixels at 300 dpi: drawn whole (the cap raised), past Tesseract's 2 GiB.
  const bytes = await letterAndPoster(3000);
  const sha = createHash('sha256').update(bytes).digest('hex');
  await assert.rejects(
    importDocument({ fileName: 'poster.pdf', bytes }, { ocrCache: dir, ocrMaxPixels: 160e6 }),
    (e: { code?: string; message: string }) => {
      assert.equal(e.code, 'TOO_LARGE');
      assert.match(
        e.message,
        /^poster\.pdf: page 2 could not be read by OCR: the recogniser failed on it \(.*\), most likely out of memory \(it has 2 GiB; the page was drawn at 156 megapixels\): scan that page again at 300 dpi or less, or cut it into smaller pages$/s,
      );
      return true;
    },
  );
  assert.ok(existsSync(join(dir, `${sha}-1.json`)), 'page 1, recognised before, is kept for the resume');
  // At the cap the same file reads whole, page 1 from the resume, page 2 drawn at 40 MP, within the bound: the
  // recogniser's heap and the page drawn (4 bytes a pixel) and its PNG.
  const { value: doc, growth } = await peakGrowth(() =>
    importDocument({ fileName: 'poster.pdf', bytes }, { ocrCache: dir }),
  );
  assert.equal(doc.ocrSeconds.length, 1, 'only page 2 was recognised again');
  assert.match(doc.pages[1].text, /\w+ \w+ \w+/);
  const bound = TESSERACT_HEAP_BYTES + 2 * 4 * OCR_MAX_PIXELS;
  assert.ok(growth < bound, `grew ${(growth / 2 ** 20).toFixed(0)} MiB, bound ${(bound / 2 ** 20).toFixed(0)} MiB`);
});
