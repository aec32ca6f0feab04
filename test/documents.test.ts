// Document import (electron/documents/): every fixture is made here (pdf-lib, a hand-written encrypted PDF,
// the docx package, strings), nothing is downloaded or committed. Checks page texts and numbers, titles,
// error codes and messages, cancellation, the layout rules on hand-made text runs, and the token ↔ page
// mapping and retention folding on hand-made token lengths.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  PAGE_CHARS,
  charRangeTokens,
  foldRetention,
  importDocument,
  mapTokens,
  pageTokenRange,
  pagesOfTokens,
  passages,
  paginate,
  tokenSpan,
  type ImportedDocument,
  type ImportOptions,
} from '../electron/documents/index.ts';
import { decodeText } from '../electron/documents/text.ts';
import { joinWrapped, layoutPage, renderParagraphs, type TextRun } from '../electron/shared/pdf-layout.ts';
import { pdfTitle } from '../electron/documents/pdf.ts';
import { sampleDocx } from './helpers/make-docx.ts';
import {
  blankPdf,
  colLeft,
  colRight,
  encryptedPdf,
  imageOnlyPdf,
  longPdf,
  para1,
  para2,
  para3,
  textPdf,
  tinyPng,
} from './helpers/make-pdf.ts';
import { importRejection } from './helpers/rejections.ts';

const enc = (s: string) => new TextEncoder().encode(s);

function imp(fileName: string, bytes: Uint8Array, opts?: ImportOptions): Promise<ImportedDocument> {
  return importDocument({ fileName, bytes }, opts);
}

// ---------------------------------------------------------------------------------------------------------
// PDF

test('PDF: pages in order with numbers, accents, paragraphs, hyphenation, two columns, rotation; silent', async () => {
  const { bytes, hyphenated } = await textPdf({ title: 'Folio Fixture' });
  assert.equal(hyphenated, 'agreement');
  const printed: unknown[][] = [];
  const saved = { log: console.log, warn: console.warn, error: console.error, info: console.info };
  for (const k of ['log', 'warn', 'error', 'info'] as const) console[k] = (...a: unknown[]) => void printed.push(a);
  const progress: [number, number][] = [];
  let doc: ImportedDocument;
  try {
    doc = await imp('fixture.pdf', bytes, { onProgress: (d, t) => progress.push([d, t]) });
  } finally {
    Object.assign(console, saved);
  }
  assert.deepEqual(printed, [], 'nothing printed to the console');
  assert.equal(doc.kind, 'pdf');
  assert.equal(doc.title, 'Folio Fixture');
  assert.equal(doc.fileName, 'fixture.pdf');
  assert.equal(doc.sha256, createHash('sha256').update(bytes).digest('hex'));
  assert.deepEqual(
    doc.pages.map((p) => p.page),
    [1, 2, 3, 4],
  );
  assert.deepEqual(progress, [
    [0, 4],
    [1, 4],
    [2, 4],
    [3, 4],
    [4, 4],
  ]);

  // Page 1: title, then paragraphs; wrapped lines joined; "agree-" + "ment" joined without the hyphen.
  assert.equal(doc.pages[0].text, ['Reading Order and Hyphens', para1, para2, para3].join('\n\n'));
  // Page 2: the full-width heading, the whole left column, then the right column, then the page number,
  // although the lines were drawn interleaved and right column first.
  assert.equal(doc.pages[1].text, ['Two Columns', colLeft, colRight, '2'].join('\n\n'));
  // Page 3 is rotated 90°; its text was drawn to read upright and comes out in order.
  assert.match(doc.pages[2].text, /^Landscape text reads upright\.\s+Its second line follows\.$/);
  // Page 4 has no text: kept (page numbers stay those of the PDF), with a warning.
  assert.equal(doc.pages[3].text, '');
  assert.deepEqual(doc.warnings, ['page 4 has no text']);
});

test('PDF: without a metadata title, or with a placeholder one, the title is the file name, not page text', async () => {
  const doc = await imp('reading_order.pdf', (await textPdf()).bytes);
  assert.equal(doc.title, 'reading order');
  const junk = await imp('Annual Report.pdf', (await textPdf({ title: 'Microsoft Word - draft3.doc' })).bytes);
  assert.equal(junk.title, 'Annual Report');
});

test('PDF: placeholder metadata titles are ignored; concurrent imports each get their own parser', async () => {
  assert.equal(pdfTitle('Microsoft Word - thesis.docx'), null);
  assert.equal(pdfTitle('untitled'), null);
  assert.equal(pdfTitle('  A  Real\nTitle '), 'A Real Title');
  const { bytes } = await textPdf();
  const docs = await Promise.all([imp('a.pdf', bytes), imp('b.pdf', await longPdf(20)), imp('c.pdf', bytes)]);
  assert.deepEqual(
    docs.map((d) => d.pages.length),
    [4, 20, 4],
  );
  assert.equal(docs[0].pages[1].text, docs[2].pages[1].text);
});

test('PDF: pictures and drawings without writing are NO_TEXT_LAYER once OCR finds none; blank pages are EMPTY', async () => {
  await importRejection(
    imp('scan.pdf', await imageOnlyPdf()),
    'NO_TEXT_LAYER',
    /scan\.pdf has no text layer, and OCR \(English\) found no writing on its 2 pages/,
  );
  await importRejection(
    imp('blank.pdf', await blankPdf()),
    'EMPTY',
    /blank\.pdf is empty/,
    /no text and nothing drawn/,
  );
});

test('PDF: RC4 encryption (40 and 128 bit) with an empty user password opens; with a password it asks for it', async () => {
  for (const bits of [40, 128] as const) {
    const open = encryptedPdf({
      pages: [['Secret café report.', 'Second line.'], ['Page two.']],
      userPassword: '',
      bits,
      title: 'Vertraulich',
    });
    const doc = await imp(`open-${bits}.pdf`, open);
    assert.deepEqual(
      doc.pages.map((p) => p.page),
      [1, 2],
    );
    assert.match(doc.pages[0].text, /^Secret café report\.\s+Second line\.$/, `decrypted text (${bits} bit)`);
    assert.equal(doc.title, 'Vertraulich', 'the Info title is an encrypted string too');

    const locked = encryptedPdf({ pages: [['Top secret.']], userPassword: 'hunter2', bits });
    await importRejection(
      imp(`locked-${bits}.pdf`, locked),
      'PASSWORD_REQUIRED',
      /locked-\d+\.pdf: the PDF is password-protected/,
    );
    await importRejection(
      imp(`locked-${bits}.pdf`, locked, { password: 'wrong' }),
      'PASSWORD_WRONG',
      /password-protected and the password given is wrong/,
    );
    const unlocked = await imp(`locked-${bits}.pdf`, locked, { password: 'hunter2' });
    assert.equal(unlocked.pages[0].text, 'Top secret.');
  }
});

test('PDF: a truncated or garbage PDF is CORRUPT and says pdf.js cannot parse it', async () => {
  const { bytes } = await textPdf();
  await importRejection(
    imp('cut.pdf', bytes.slice(0, bytes.length >> 1)),
    'CORRUPT',
    /cut\.pdf is damaged: pdf\.js cannot parse it/,
    /truncated/,
  );
  await importRejection(
    imp('junk.pdf', enc('%PDF-1.7\n' + 'garbage '.repeat(100))),
    'CORRUPT',
    /pdf\.js cannot parse it/,
  );
  // No %PDF header and no other known format: not a PDF at all.
  await importRejection(
    imp('zeros.pdf', new Uint8Array(4096).fill(0x01)),
    'CORRUPT',
    /not a valid PDF: it has no %PDF header/,
  );
});

test('PDF: 300 pages import quickly, with progress per page', async () => {
  const bytes = await longPdf(300);
  let calls = 0;
  const t0 = performance.now();
  const doc = await imp('long.pdf', bytes, { onProgress: () => void calls++ });
  const ms = performance.now() - t0;
  assert.equal(doc.pages.length, 300);
  assert.equal(calls, 301);
  assert.ok(doc.pages.every((p, i) => p.text.startsWith(`Chapter ${i + 1}\n\n`)));
  assert.ok(ms < 15_000, `300 pages took ${ms.toFixed(0)} ms`);
});

test('PDF: an AbortSignal stops the import mid-way; a stalled parse is a TIMEOUT', async () => {
  const bytes = await longPdf(200);
  const ac = new AbortController();
  let last = 0;
  const t0 = performance.now();
  await importRejection(
    imp('long.pdf', bytes, {
      signal: ac.signal,
      onProgress: (d) => {
        last = d;
        if (d === 5) ac.abort();
      },
    }),
    'ABORTED',
    /import of long\.pdf was cancelled/,
  );
  assert.ok(last < 200, `stopped after page ${last}`);
  assert.ok(performance.now() - t0 < 10_000);
  const pre = new AbortController();
  pre.abort();
  await importRejection(imp('long.pdf', bytes, { signal: pre.signal }), 'ABORTED');
  // A parse that makes no progress within the stall limit is stopped (its thread is terminated).
  await importRejection(imp('long.pdf', bytes, { stallTimeoutMs: 1 }), 'TIMEOUT', /made no progress/);
});

// ---------------------------------------------------------------------------------------------------------
// PDF layout rules on hand-made runs

/** Upright runs, one per [text, x, y(baseline, downward), size?]; width from an average glyph of 0.5 em. */
function runs(...rs: [string, number, number, number?][]): TextRun[] {
  return rs.map(([str, x, y, size = 10]) => ({ str, x, y, size, width: str.length * size * 0.5, dx: 1, dy: 0 }));
}

test('layout: narrow table columns read row by row; list markers keep their lines; overprinted runs once', () => {
  const table = runs(
    ['Name', 100, 100],
    ['Age', 200, 100],
    ['City', 300, 100],
    ['Alice', 100, 112],
    ['30', 200, 112],
    ['Paris', 300, 112],
  );
  assert.equal(renderParagraphs(layoutPage(table), new Set()), 'Name Age City\nAlice 30 Paris');
  const list = runs(['• first item', 100, 100], ['• second item', 100, 112], ['• third', 100, 124]);
  assert.equal(renderParagraphs(layoutPage(list), new Set()), '• first item\n• second item\n• third');
  const bold = runs(['Bold', 100, 100], ['Bold', 100.2, 100], [' text', 120, 100]);
  assert.equal(renderParagraphs(layoutPage(bold), new Set()), 'Bold text');
});

test('layout: hyphen rules at wrapped line ends', () => {
  const known = new Set(['well-known']);
  assert.equal(joinWrapped('an agree-', 'ment was made', known), 'an agreement was made');
  assert.equal(joinWrapped('a well-', 'known fact', known), 'a well-known fact');
  assert.equal(joinWrapped('Jean-', 'Paul Sartre', known), 'Jean-Paul Sartre');
  assert.equal(joinWrapped('hyphen\u00ad', 'ation', known), 'hyphenation');
  assert.equal(joinWrapped('pages 3 -', '5 only', known), 'pages 3 - 5 only');
  assert.equal(joinWrapped('plain', 'words', known), 'plain words');
});

// ---------------------------------------------------------------------------------------------------------
// DOCX

test('DOCX: headings, styled runs, lists, a table and a footnote as lines; the core title', async () => {
  const bytes = await sampleDocx({ title: 'Garden 2024' });
  const doc = await imp('garden.docx', bytes);
  assert.equal(doc.kind, 'docx');
  assert.equal(doc.title, 'Garden 2024');
  assert.equal(doc.pages.length, 1);
  assert.equal(
    doc.pages[0].text,
    [
      'Annual Garden Report',
      'Introduction',
      'The garden grew very well this year, café au lait & <roses>.[1]',
      '• Tomatoes\n  • Cherry tomatoes\n• Beans',
      '1. Dig the soil\n2. Plant the seeds',
      'Harvest',
      'Crop | Kilograms\nTomatoes (red) | 42\nBeans | 17',
      'The end of the report.',
      '1. A footnote about the café.',
    ].join('\n\n'),
  );
  // Without document properties, the title comes from the Title-styled paragraph.
  assert.equal((await imp('garden.docx', await sampleDocx())).title, 'Annual Garden Report');
});

test('DOCX: long documents are paged at block boundaries, about 3,000 characters, sections starting pages', async () => {
  const doc = await imp('long.docx', await sampleDocx({ sections: 12 }));
  assert.ok(doc.pages.length >= 4, `${doc.pages.length} pages`);
  doc.pages.forEach((p, i) => {
    assert.equal(p.page, i + 1);
    assert.ok(p.text.length <= PAGE_CHARS, `page ${p.page}: ${p.text.length} characters`);
    if (i > 0) assert.match(p.text, /^Section \d+\n\n/, `page ${p.page} starts with a heading`);
    assert.doesNotMatch(p.text, /\n\nSection \d+$/, 'no page ends with a heading');
  });
  const all = doc.pages.map((p) => p.text).join('\n\n');
  for (let s = 1; s <= 12; s++) assert.ok(all.includes(`Section ${s}\n\nParagraph 1 of section ${s}.`));
  assert.ok(all.indexOf('Section 11') < all.indexOf('Section 12'));
});

test('DOCX: a truncated file is CORRUPT', async () => {
  const bytes = await sampleDocx();
  await importRejection(imp('cut.docx', bytes.slice(0, bytes.length >> 1)), 'CORRUPT', /cut\.docx is damaged/);
});

// ---------------------------------------------------------------------------------------------------------
// Markdown and text

test('Markdown: text kept, comments and images dropped (alt text kept), code fences whole, front matter title', async () => {
  const md = [
    '---',
    'title: "Field Notes"',
    '---',
    '# Notes on *Birds*',
    '',
    'Intro paragraph. <!-- a private remark -->',
    '',
    '![A heron in the reeds](img/heron.png "heron") and ![](decor.png)',
    '',
    '```md',
    '# not a heading',
    '',
    '<!-- kept: inside code -->',
    '```',
    '',
    'Setext heading',
    '--------------',
    '',
    '- item one',
    '- item two',
  ].join('\n');
  const doc = await imp('notes.md', enc(md));
  assert.equal(doc.kind, 'markdown');
  assert.equal(doc.title, 'Field Notes');
  assert.equal(
    doc.pages[0].text,
    '---\ntitle: "Field Notes"\n---\n\n# Notes on *Birds*\n\nIntro paragraph.\n\nA heron in the reeds and\n\n' +
      '```md\n# not a heading\n\n<!-- kept: inside code -->\n```\n\nSetext heading\n--------------\n\n- item one\n- item two',
  );
  const noFront = await imp('birds.markdown', enc('Some words first.\n\n## Second level\n\n# First level\n'));
  assert.equal(noFront.title, 'First level');
});

test('Markdown: sections become pages once a page is half full; nothing is lost', async () => {
  const section = (i: number) =>
    `## Part ${i}\n\n` + `Sentence number ${i} of this part goes on for a while. `.repeat(20).trim();
  const md = Array.from({ length: 8 }, (_, i) => section(i + 1)).join('\n\n');
  const doc = await imp('parts.md', enc(md));
  assert.ok(doc.pages.length >= 4);
  for (const p of doc.pages) {
    assert.match(p.text, /^## Part \d+\n\n/);
    assert.ok(p.text.length <= PAGE_CHARS);
  }
  assert.equal(doc.pages.map((p) => p.text).join('\n\n'), md);
});

test('text: BOM, CRLF, form feeds as pages (numbers kept), title from the first line', async () => {
  const bytes = new Uint8Array([
    0xef,
    0xbb,
    0xbf,
    ...enc('Minutes of the Meeting\r\nFirst page.\fSecond page.\r\n\f\fFourth page.\f'),
  ]);
  const doc = await imp('minutes.txt', bytes);
  assert.equal(doc.kind, 'text');
  assert.equal(doc.encoding, 'utf-8');
  assert.equal(doc.title, 'Minutes of the Meeting');
  assert.deepEqual(doc.pages, [
    { page: 1, text: 'Minutes of the Meeting\nFirst page.' },
    { page: 2, text: 'Second page.' },
    { page: 3, text: '' },
    { page: 4, text: 'Fourth page.' },
  ]);
  assert.deepEqual(doc.warnings, []);
});

test('text: without form feeds, paragraphs are grouped into pages of about 3,000 characters', async () => {
  const paras = Array.from({ length: 40 }, (_, i) => `Paragraph ${i + 1}. ` + 'Words words words. '.repeat(10).trim());
  const doc = await imp('essay.txt', enc(paras.join('\n\n')));
  assert.ok(doc.pages.length > 1);
  for (const p of doc.pages) {
    assert.ok(p.text.length <= PAGE_CHARS);
    assert.match(p.text, /^Paragraph \d+\. /, 'pages start at paragraph boundaries');
  }
  assert.equal(doc.pages.map((p) => p.text).join('\n\n'), paras.join('\n\n'));
  // One paragraph longer than a page is cut at sentence ends.
  const long = 'This is a sentence. '.repeat(400).trim();
  const one = await imp('long.txt', enc(long));
  assert.ok(one.pages.length >= 3);
  for (const p of one.pages) assert.match(p.text, /^This is a sentence\..*\.$/s);
});

test('text: Latin-1 is decoded as Windows-1252 when no byte is UTF-8; mixed invalid UTF-8 is BAD_ENCODING; UTF-16', async () => {
  const latin1 = new Uint8Array([...enc('Caf'), 0xe9, ...enc(' cr'), 0xe8, ...enc('me, 10 '), 0x80]);
  const doc = await imp('old.txt', latin1);
  assert.equal(doc.pages[0].text, 'Café crème, 10 €');
  assert.equal(doc.encoding, 'windows-1252');
  assert.deepEqual(doc.warnings, ['decoded as Windows-1252 (Latin-1): the file is not UTF-8']);
  const mixed = new Uint8Array([...enc('Café '), 0xe9, ...enc(' ok')]);
  await importRejection(
    imp('mixed.txt', mixed),
    'BAD_ENCODING',
    /mixed\.txt is not valid UTF-8: the byte at offset 6 is invalid/,
  );
  const utf16 = new Uint8Array([0xff, 0xfe, ...Buffer.from('Grüße aus Köln', 'utf16le')]);
  assert.deepEqual(decodeText(utf16, 'x.txt'), { text: 'Grüße aus Köln', encoding: 'utf-16le' });
  assert.equal((await imp('utf16.txt', utf16)).pages[0].text, 'Grüße aus Köln');
});

// ---------------------------------------------------------------------------------------------------------
// Detection and reading

test('detection: the content decides; a wrong extension is MISMATCH; unknown formats are UNSUPPORTED', async () => {
  const pdf = (await textPdf()).bytes;
  const docx = await sampleDocx();
  await importRejection(
    imp('notes.txt', pdf),
    'MISMATCH',
    /notes\.txt has the extension \.txt/,
    /content is a PDF/,
    /rename it to \.pdf/,
  );
  await importRejection(imp('report.pdf', enc('just some text')), 'MISMATCH', /report\.pdf .* content is plain text/);
  await importRejection(imp('report.md', docx), 'MISMATCH', /content is a Word document \(DOCX\)/);
  await importRejection(
    imp('scan.pdf', tinyPng()),
    'MISMATCH',
    /scan\.pdf has the extension \.pdf, which means a PDF, but its content is an image \(PNG or JPEG\); rename it to \.png/,
  );
  await importRejection(
    imp('data.bin', new Uint8Array([0, 1, 2, 3, 0, 0, 7, 8, 0, 250])),
    'UNSUPPORTED',
    /binary data/,
  );
  await importRejection(imp('empty.txt', new Uint8Array()), 'EMPTY', /empty\.txt is empty \(0 bytes\)/);
  await importRejection(imp('blank.txt', enc(' \n\n\t \n')), 'EMPTY', /no text/);
  // No extension, or one that claims nothing: the content is enough.
  assert.equal((await imp('paper', pdf)).kind, 'pdf');
  assert.equal((await imp('download.bin', docx)).kind, 'docx');
  assert.equal((await imp('README', enc('hello'))).kind, 'text');
  assert.equal((await imp('C:\\Users\\me\\notes.log', enc('hello'))).fileName, 'notes.log');
});

test('reading by path: sha256 of the file; a missing file is READ_FAILED', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'folio-docs-'));
  try {
    const path = join(dir, 'Read Me.md');
    const bytes = enc('# Hello\n\nWorld.\n');
    writeFileSync(path, bytes);
    const doc = await importDocument({ path });
    assert.equal(doc.fileName, 'Read Me.md');
    assert.equal(doc.kind, 'markdown');
    assert.equal(doc.title, 'Hello');
    assert.equal(doc.sha256, createHash('sha256').update(bytes).digest('hex'));
    await importRejection(importDocument({ path: join(dir, 'nope.pdf') }), 'READ_FAILED', /there is no such file/);
    await importRejection(importDocument({ path: dir }), 'READ_FAILED', /is a folder/);
    await importRejection(importDocument({ path }, { maxBytes: 4 }), 'TOO_LARGE');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('cancellation: DOCX and text imports honour an aborted signal', async () => {
  const ac = new AbortController();
  ac.abort();
  await importRejection(imp('garden.docx', await sampleDocx(), { signal: ac.signal }), 'ABORTED');
  await importRejection(imp('a.txt', enc('x'), { signal: ac.signal }), 'ABORTED');
});

// ---------------------------------------------------------------------------------------------------------
// Paging rule

test('paginate: headings move with their text, oversized blocks split, separators kept', () => {
  const blocks = [
    { text: 'a'.repeat(1400) },
    { text: 'Heading', heading: 2 },
    { text: 'b'.repeat(1700) },
    { text: 'row 1', sep: '\n' as const },
  ];
  const pages = paginate(blocks);
  assert.deepEqual(
    pages.map((p) => p.text),
    ['a'.repeat(1400), 'Heading\n\n' + 'b'.repeat(1700) + '\nrow 1'],
  );
  const split = paginate([{ text: 'word '.repeat(1000).trim() }], 1000);
  assert.ok(split.every((p) => p.text.length <= 1000 && !p.text.startsWith(' ') && !p.text.endsWith(' ')));
  assert.equal(split.map((p) => p.text).join(' '), 'word '.repeat(1000).trim());
  // CJK text has no spaces: cut after a full stop; a surrogate pair is never cut in half.
  const cjk = paginate([{ text: '这是第一句。这是第二句。'.repeat(30) }], 100);
  assert.ok(cjk.length >= 4 && cjk.every((p) => p.text.endsWith('。') && p.text.length <= 100));
  const emoji = paginate([{ text: '😀'.repeat(120) }], 101);
  assert.ok(emoji.every((p) => p.text.length % 2 === 0 && p.text.length <= 101));
});

// ---------------------------------------------------------------------------------------------------------
// Token ↔ page mapping

const bytesOf = (s: string) => Buffer.byteLength(s, 'utf8');

test('token map: multi-byte characters split across tokens, emoji, lead bytes, offsets and gaps', () => {
  const pages = [
    { page: 1, text: 'héllo wörld' },
    { page: 2, text: '😀 ok' },
  ];
  // Page 1: "h" | first byte of "é" | second byte of "é" | "llo" | " w" | "ö" | "rld".
  // Page 2 starts at token 20 (two template tokens in between) with a "\n\n" lead token, then the emoji's
  // 4 bytes as 3 + 1, then " ok".
  const map = mapTokens(
    pages,
    [
      { ids: [1, 2, 3, 4, 5, 6, 7], bytes: [1, 1, 1, 3, 2, 2, 3] },
      { bytes: [2, 3, 1, 3], start: 20, leadBytes: 2 },
    ],
    { start: 10 },
  );
  assert.equal(map.start, 10);
  assert.equal(map.end, 24);
  const spans = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => tokenSpan(map, from + i));
  assert.deepEqual(spans(10, 17), [
    { page: 1, charStart: 0, charEnd: 1 },
    { page: 1, charStart: 1, charEnd: 2 },
    { page: 1, charStart: 1, charEnd: 2 },
    { page: 1, charStart: 2, charEnd: 5 },
    { page: 1, charStart: 5, charEnd: 7 },
    { page: 1, charStart: 7, charEnd: 8 },
    { page: 1, charStart: 8, charEnd: 11 },
  ]);
  assert.deepEqual(spans(17, 20), [null, null, null], 'the gap between pages belongs to no page');
  assert.deepEqual(spans(20, 24), [
    { page: 2, charStart: 0, charEnd: 0 },
    { page: 2, charStart: 0, charEnd: 2 },
    { page: 2, charStart: 0, charEnd: 2 },
    { page: 2, charStart: 2, charEnd: 5 },
  ]);
  assert.equal(tokenSpan(map, 9), null);
  assert.deepEqual(
    map.pages.map((p) => [p.tokenStart, p.tokenEnd, p.textBytes, p.tokenBytes]),
    [
      [10, 17, 13, 13],
      [20, 24, 7, 7],
    ],
  );
  // Inverse: pages to tokens, characters to tokens, tokens to pages.
  assert.deepEqual(pageTokenRange(map, 1), { tokenStart: 10, tokenEnd: 17 });
  assert.deepEqual(pageTokenRange(map, 1, 2), { tokenStart: 10, tokenEnd: 24 });
  assert.equal(pageTokenRange(map, 3), null);
  assert.deepEqual(charRangeTokens(map, 1, 1, 2), { tokenStart: 11, tokenEnd: 13 }, 'both halves of "é"');
  assert.deepEqual(charRangeTokens(map, 1, 6, 11), { tokenStart: 14, tokenEnd: 17 });
  assert.deepEqual(pagesOfTokens(map, 15, 23), [1, 2]);
  // Token bytes that do not add up to the text are reported, not hidden.
  const short = mapTokens([{ page: 1, text: 'abc' }], [{ bytes: [1, 1] }]);
  assert.deepEqual([short.pages[0].textBytes, short.pages[0].tokenBytes], [3, 2]);
});

test('token map: random texts cut into random byte lengths map to the smallest covering character ranges', () => {
  let seed = 42;
  const rand = (n: number) => (seed = (seed * 1103515245 + 12345) >>> 0) % n;
  const alphabet = ['a', 'b', ' ', '\n', 'é', 'ß', '€', '中', '😀', '𝄞', 'Z'];
  for (let round = 0; round < 50; round++) {
    const text = Array.from({ length: 1 + rand(60) }, () => alphabet[rand(alphabet.length)]).join('');
    const total = bytesOf(text);
    const lens: number[] = [];
    for (let left = total; left > 0; ) {
      const l = Math.min(left, 1 + rand(5));
      lens.push(l);
      left -= l;
    }
    const map = mapTokens([{ page: 1, text }], [{ bytes: lens }]);
    let b = 0;
    lens.forEach((len, t) => {
      const s = tokenSpan(map, t)!;
      // The range covers the token's bytes...
      assert.ok(
        bytesOf(text.slice(0, s.charStart)) <= b && bytesOf(text.slice(0, s.charEnd)) >= b + len,
        `round ${round} token ${t}`,
      );
      // ...and is the smallest such range: shrinking either end by one character would uncover bytes.
      const cps = [...text];
      const startCp = [...text.slice(0, s.charStart)].length;
      const endCp = [...text.slice(0, s.charEnd)].length;
      assert.ok(bytesOf(cps.slice(0, startCp + 1).join('')) > b, 'start is minimal');
      assert.ok(bytesOf(cps.slice(0, endCp - 1).join('')) < b + len, 'end is minimal');
      b += len;
    });
  }
});

test('passages and retention folding: sentences and lines; mean retention per passage', () => {
  const text = 'First sentence here. Second one!\n## Heading\nA wrapped line\ncontinues here.';
  assert.deepEqual(
    passages(text, 'sentences').map((p) => text.slice(p.start, p.end)),
    ['First sentence here.', 'Second one!', '## Heading', 'A wrapped line\ncontinues here.'],
  );
  assert.deepEqual(
    passages(text, 'lines').map((p) => text.slice(p.start, p.end)),
    ['First sentence here. Second one!', '## Heading', 'A wrapped line', 'continues here.'],
  );
  // Tokens: each word with its leading space or newline.
  const pieces = text.match(/\s*\S+/g)!;
  assert.equal(pieces.join(''), text);
  const map = mapTokens([{ page: 7, text }], [{ bytes: pieces.map(bytesOf) }], { start: 3 });
  const retention = new Array(3).fill(0.5).concat(pieces.map((_, i) => (i < 3 ? 1 : i < 5 ? 0 : 0.25)));
  const folded = foldRetention(map, retention, 'sentences');
  assert.deepEqual(
    folded.map((p) => [text.slice(p.start, p.end), p.page, p.retention]),
    [
      ['First sentence here.', 7, 1],
      ['Second one!', 7, 0],
      ['## Heading', 7, 0.25],
      ['A wrapped line\ncontinues here.', 7, 0.25],
    ],
  );
  const byLines = foldRetention(map, retention, 'lines');
  assert.deepEqual(
    byLines.map((p) => p.retention),
    [0.6, 0.25, 0.25, 0.25],
  );
  // Tokens past the retention array are skipped; passages without tokens are left out.
  assert.deepEqual(
    foldRetention(map, retention.slice(0, 3 + 3), 'sentences').map((p) => text.slice(p.start, p.end)),
    ['First sentence here.'],
  );
});
