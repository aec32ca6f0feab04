// folio bench-ocr: how fast OCR reads scanned pages on this machine (issue 42; a benchmark, never a test). Dense
// pages of made-up prose (500 words on a letter page in 12-point Helvetica, as a printed report or a book's page
// holds; synthetic-scan.ts), scanned at
// 300 dpi and put back as pictures alone, are imported as the app imports a PDF (the parser thread, the text
// layers read, each page drawn at OCR_DPI and recognised); each page's time (drawing and recognition, as the parse
// measures it for the app's estimate) gives the median seconds a page and so pages a second. The words recognised
// are counted against those typeset, so that a fast but wrong read shows.
import { cpus } from 'node:os';

import { importDocument } from '../../documents/index.ts';
import { pageLines, prose, scannedPdf } from '../../documents/synthetic-scan.ts';
import { median } from '../../shared/pdf-layout.ts';
import { type Command, type Values, int, print } from '../args.ts';

/** The words of a text, lower-cased, as OCR's and the typeset text are compared. */
const wordsOf = (s: string) => s.toLowerCase().match(/[a-z0-9]+/g) ?? [];

/** The share of `want`'s words found in `got`, each found at most as often as it is there. */
function found(want: string, got: string): number {
  const have = new Map<string, number>();
  for (const w of wordsOf(got)) have.set(w, (have.get(w) ?? 0) + 1);
  let n = 0;
  const all = wordsOf(want);
  for (const w of all) {
    const k = have.get(w) ?? 0;
    if (k > 0) {
      n++;
      have.set(w, k - 1);
    }
  }
  return all.length ? n / all.length : 1;
}

export const benchOcr: Command = {
  summary: 'OCR of dense scanned pages: seconds a page (median), pages a second, words recognised, the CPU',
  usage: 'folio bench-ocr [--pages 8] [--words 500] [--size 12] [--json]',
  options: {
    pages: { type: 'string' },
    words: { type: 'string' },
    size: { type: 'string' },
    json: { type: 'boolean' },
  },
  async run(v: Values) {
    const n = int(v, 'pages', 8, 1);
    const words = int(v, 'words', 500, 1);
    const size = int(v, 'size', 12, 6);
    const log = (s: string) => {
      if (!v.json) process.stderr.write(s + '\n');
    };
    // Each page its own prose, cut to what fits the page, so that the words typeset are known.
    const texts = await Promise.all(
      Array.from({ length: n }, async (_, i) => (await pageLines(prose(words, i + 1), size)).join(' ')),
    );
    log(`making ${n} scanned pages (${size}-point Helvetica, about ${wordsOf(texts[0]).length} words a page) ...`);
    const pdf = await scannedPdf(texts, { dpi: 300, size });
    const started = performance.now();
    const doc = await importDocument({ fileName: 'bench-scan.pdf', bytes: pdf });
    const importSeconds = (performance.now() - started) / 1000;
    const seconds = doc.ocrSeconds;
    const secondsPerPage = median(seconds);
    const recognised = texts.map((t, i) => found(t, doc.pages[i].text));
    const cpu = cpus();
    const r = {
      cpu: cpu[0]?.model.trim() ?? 'unknown',
      cores: cpu.length,
      pages: n,
      words_per_page: Math.round(texts.reduce((k, t) => k + wordsOf(t).length, 0) / n),
      seconds_per_page: seconds.map((s) => Number(s.toFixed(2))),
      median_seconds_per_page: Number(secondsPerPage.toFixed(3)),
      pages_per_second: Number((1 / secondsPerPage).toFixed(3)),
      import_seconds: Number(importSeconds.toFixed(1)),
      words_found: Number(median(recognised).toFixed(3)),
    };
    print(
      v,
      r,
      `OCR on ${r.cpu} (${r.cores} cores; the recogniser uses one): ${n} dense pages of ${r.words_per_page} words\n` +
        `  ${r.median_seconds_per_page} s a page (median; drawing at 300 dpi included), ${r.pages_per_second} pages a second\n` +
        `  pages: ${r.seconds_per_page.join(', ')} s; the whole import ${r.import_seconds} s\n` +
        `  words recognised: ${(100 * r.words_found).toFixed(1)}% (median over pages)\n`,
    );
  },
};
