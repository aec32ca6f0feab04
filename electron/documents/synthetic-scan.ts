// Scans made from known text, for the OCR benchmark (`folio bench-ocr`) and the tests: the text typeset with pdf-lib
// in a standard font, drawn to pixels by pdf.js (@napi-rs/canvas, as OCR draws pages), and put back on pages as
// pictures alone, so nothing but the recogniser can read them.
import { PDFDocument, StandardFonts, type PDFFont, type PDFPage } from 'pdf-lib';

import { loadPdfjs } from './pdf.ts';

/** Greedy word wrap at `width` points, as a typesetter without hyphenation would do it. */
export function wrap(text: string, font: PDFFont, size: number, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const next = line ? `${line} ${word}` : word;
    if (line && font.widthOfTextAtSize(next, size) > width) {
      lines.push(line);
      line = word;
    } else line = next;
  }
  if (line) lines.push(line);
  return lines;
}

/** Draws lines from (x, y) downwards with a leading of 1.2 em; returns the y below the last line. */
export function drawLines(
  page: PDFPage,
  lines: readonly string[],
  x: number,
  y: number,
  font: PDFFont,
  size: number,
): number {
  for (const l of lines) {
    page.drawText(l, { x, y, size, font });
    y -= size * 1.2;
  }
  return y;
}

/** The letter page text is typeset on: 500 points of line from 56 in, the first baseline at 730 (62 from the
 * top), lines down to the bottom margin at 56. */
const PAGE = { width: 612, height: 792, left: 56, top: 730, bottom: 56, measure: 500 };

/** The lines of `text` that fit a page in Helvetica at `size` points (what typesetImage draws). */
export async function pageLines(text: string, size = 12): Promise<string[]> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  return wrap(text, font, size, PAGE.measure).slice(0, Math.floor((PAGE.top - PAGE.bottom) / (size * 1.2)) + 1);
}

/** `text` typeset in Helvetica at `size` points on a letter page (as much as fits), drawn by pdf.js at `dpi`: PNG. */
export async function typesetImage(text: string, dpi = 200, size = 12): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const page = doc.addPage([PAGE.width, PAGE.height]);
  drawLines(page, await pageLines(text, size), PAGE.left, PAGE.top, font, size);
  const pdfjs = await loadPdfjs();
  const pdf = await pdfjs.getDocument({ data: await doc.save(), verbosity: 0 }).promise;
  const p = await pdf.getPage(1);
  const viewport = p.getViewport({ scale: dpi / 72 });
  const { createCanvas } = await import('@napi-rs/canvas');
  const canvas = createCanvas(Math.ceil(viewport.width), Math.ceil(viewport.height));
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#ffffff';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  await p.render({ canvasContext: ctx as never, canvas: canvas as never, viewport }).promise;
  await pdf.destroy();
  return canvas.encode('png');
}

/** A page of grey noise, `width` × `height` pixels: PNG. */
export async function noiseImage(width = 1200, height = 1600, seed = 7): Promise<Uint8Array> {
  const { createCanvas } = await import('@napi-rs/canvas');
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext('2d');
  const img = ctx.createImageData(width, height);
  let s = seed;
  for (let i = 0; i < img.data.length; i += 4) {
    s = (s * 1103515245 + 12345) >>> 0;
    const v = s >>> 24;
    img.data[i] = img.data[i + 1] = img.data[i + 2] = v;
    img.data[i + 3] = 255;
  }
  ctx.putImageData(img, 0, 0);
  return canvas.encode('png');
}

/**
 * A scanned PDF: each page a picture of its text typeset (typesetImage at `dpi` and `size`), or of noise for
 * 'noise', filling a letter page, with no text layer; the pages of `withText` keep their typeset text instead (a
 * mixed PDF).
 */
export async function scannedPdf(
  pages: readonly string[],
  o: { dpi?: number; size?: number; withText?: readonly number[]; title?: string } = {},
): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  if (o.title) doc.setTitle(o.title);
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (const [i, text] of pages.entries()) {
    const page = doc.addPage([PAGE.width, PAGE.height]);
    if (o.withText?.includes(i + 1)) {
      drawLines(page, wrap(text, font, 12, PAGE.measure), PAGE.left, PAGE.top, font, 12);
      continue;
    }
    const png = await doc.embedPng(text === 'noise' ? await noiseImage() : await typesetImage(text, o.dpi, o.size));
    page.drawImage(png, { x: 0, y: 0, width: PAGE.width, height: PAGE.height });
  }
  return doc.save();
}

const WORDS = (
  'the of and to in is was that for it with as on be at by this had not are but from or have an they which one you ' +
  'were her all she there would their we him been has when who will more no if out so said what up its about into ' +
  'than them can only other new some could time these two may then do first any my now such like our over man me ' +
  'even most made after also did many before must through back years where much your way well down should because ' +
  'each just those people how too little state good very make world still own see men work long get here between ' +
  'both life being under never day same another know while last might us great old year off come since against go ' +
  'came right used take three small house water harbour garden letter morning window river market doctor village'
).split(' ');

/** `words` words of made-up English prose (sentences of 6 to 17 of the commonest words), the same for a seed. */
export function prose(words: number, seed = 1): string {
  let s = seed >>> 0;
  const next = () => (s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32;
  const out: string[] = [];
  while (out.length < words) {
    const n = 6 + Math.floor(next() * 12);
    const sentence = Array.from({ length: n }, () => WORDS[Math.floor(next() * WORDS.length)]);
    sentence[0] = sentence[0][0].toUpperCase() + sentence[0].slice(1);
    out.push(...sentence.slice(0, -1), `${sentence[n - 1]}.`);
  }
  return out.slice(0, words).join(' ');
}
