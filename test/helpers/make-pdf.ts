// PDF fixtures made in the test, nothing downloaded: text documents with pdf-lib (standard fonts, so
// WinAnsi text with accents), image-only and blank pages, and encrypted PDFs written by hand with the
// standard security handler (RC4, 40-bit R2 and 128-bit R3, PDF 32000-1 §7.6.3), which pdf-lib cannot do.
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { PDFDocument, StandardFonts, degrees, rgb, type PDFFont } from 'pdf-lib';

import { drawLines, wrap } from '../../electron/documents/synthetic-scan.ts';

export { drawLines, wrap };

export const para1 =
  'Folio reads long documents on your own machine. The café on the corner serves crème brûlée, and the naïve ' +
  'reader in Zürich orders a smörgåsbord while the señor waits. Every sentence here is ordinary prose that ' +
  'wraps across several lines of the page.';
export const para2 = 'A second paragraph follows after a blank line. It is shorter than the first one.';
export const colLeft =
  'The left column starts the story. It runs down the page for several lines before the reader moves to ' +
  'the other column, as in any journal with two columns of text.';
export const colRight =
  'The right column continues the story. It is read only after the whole left column, whatever order the ' +
  'producer wrote the lines in.';

/**
 * Wraps like `wrap`, then hyphenates the last line break as a typesetter would: the first word of the last
 * line is split, its head moved up with a hyphen ("agree-" / "ment"). Returns the lines and that word.
 */
export function wrapHyphenated(
  text: string,
  font: PDFFont,
  size: number,
  width: number,
): { lines: string[]; word: string } {
  const lines = wrap(text, font, size, width);
  const i = lines.length - 2;
  const [w, ...rest] = (lines[i + 1] ?? '').split(' ');
  if (i >= 0 && /^[a-z]{6,}$/.test(w)) {
    for (let k = w.length - 3; k >= 3; k--) {
      const head = `${lines[i]} ${w.slice(0, k)}-`;
      if (font.widthOfTextAtSize(head, size) <= width) {
        lines[i] = head;
        lines[i + 1] = [w.slice(k), ...rest].join(' ');
        return { lines, word: w };
      }
    }
  }
  throw new Error('wrapHyphenated: no line break to hyphenate; change the text');
}

export const para3 =
  'When the committee met again in the spring, its members finally reached an understanding about the proposal, ' +
  'and all of them went home glad of the agreement they had made together.';

/**
 * Four pages: (1) a big title, two wrapped paragraphs with accents and a third whose last line break is
 * hyphenated; (2) a full-width heading over two columns whose lines are drawn interleaved (right column
 * first), and a page number; (3) a page rotated by 90° with its text drawn to read upright; (4) no text.
 */
export async function textPdf(opts: { title?: string } = {}): Promise<{ bytes: Uint8Array; hyphenated: string }> {
  const doc = await PDFDocument.create();
  if (opts.title) doc.setTitle(opts.title);
  doc.setProducer('folio tests');
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);

  const p1 = doc.addPage([612, 792]);
  p1.drawText('Reading Order and Hyphens', { x: 72, y: 720, size: 22, font: bold });
  let y = drawLines(p1, wrap(para1, font, 11, 400), 72, 680, font, 11);
  y = drawLines(p1, wrap(para2, font, 11, 400), 72, y - 11, font, 11);
  const h = wrapHyphenated(para3, font, 11, 400);
  drawLines(p1, h.lines, 72, y - 11, font, 11);

  const p2 = doc.addPage([612, 792]);
  p2.drawText('Two Columns', { x: 72, y: 720, size: 18, font: bold });
  const left = wrap(colLeft, font, 10, 210);
  const right = wrap(colRight, font, 10, 210);
  for (let i = Math.max(left.length, right.length) - 1; i >= 0; i--) {
    if (right[i]) p2.drawText(right[i], { x: 330, y: 680 - i * 12, size: 10, font });
    if (left[i]) p2.drawText(left[i], { x: 72, y: 680 - i * 12, size: 10, font });
  }
  p2.drawText('2', { x: 300, y: 40, size: 9, font });

  const p3 = doc.addPage([612, 792]);
  p3.setRotation(degrees(90));
  // On a page shown rotated 90° clockwise, text drawn at 90° reads upright.
  p3.drawText('Landscape text reads upright.', { x: 100, y: 100, size: 12, font, rotate: degrees(90) });
  p3.drawText('Its second line follows.', { x: 115, y: 100, size: 12, font, rotate: degrees(90) });

  doc.addPage([612, 792]);
  return { bytes: await doc.save(), hyphenated: h.word };
}

/** Many pages of wrapped text, for timing and progress. */
export async function longPdf(pages: number): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.TimesRoman);
  const lines = wrap(`${para1} ${colLeft} ${colRight} ${para1}`, font, 11, 460);
  for (let i = 0; i < pages; i++) {
    const page = doc.addPage([612, 792]);
    page.drawText(`Chapter ${i + 1}`, { x: 72, y: 720, size: 16, font });
    drawLines(page, lines, 72, 690, font, 11);
  }
  return doc.save();
}

/** A 2x2 RGB PNG written by hand (zlib from node, CRC-32 here). */
export function tinyPng(): Uint8Array {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (b: Uint8Array) => {
    let c = 0xffffffff;
    for (const x of b) c = crcTable[(c ^ x) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Uint8Array) => {
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    out.write(type, 4, 'latin1');
    Buffer.from(data).copy(out, 8);
    out.writeUInt32BE(crc(out.subarray(4, 8 + data.length)), 8 + data.length);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(2, 0);
  ihdr.writeUInt32BE(2, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const raw = Buffer.from([0, 255, 0, 0, 0, 255, 0, 0, 0, 0, 255, 255, 255, 255]);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', new Uint8Array()),
  ]);
}

/** A scan-like PDF: page 1 only a raster image, page 2 only vector drawing. No text anywhere. */
export async function imageOnlyPdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const png = await doc.embedPng(tinyPng());
  doc.addPage([612, 792]).drawImage(png, { x: 50, y: 50, width: 500, height: 700 });
  const p2 = doc.addPage([612, 792]);
  p2.drawRectangle({ x: 100, y: 100, width: 300, height: 200, color: rgb(0.2, 0.4, 0.8) });
  p2.drawCircle({ x: 300, y: 500, size: 80, borderColor: rgb(0, 0, 0), borderWidth: 2 });
  return doc.save();
}

/** Pages with nothing on them at all. */
export async function blankPdf(pages = 2): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  for (let i = 0; i < pages; i++) doc.addPage([612, 792]);
  return doc.save();
}

// --------------------------------------------------------------------------------------------------------
// Encryption: the standard security handler with RC4.

const PAD = Buffer.from('28bf4e5e4e758a4164004e56fffa01082e2e00b6d0683e802f0ca9fe6453697a', 'hex');

function rc4(key: Uint8Array, data: Uint8Array): Buffer {
  const s = new Uint8Array(256);
  for (let i = 0; i < 256; i++) s[i] = i;
  for (let i = 0, j = 0; i < 256; i++) {
    j = (j + s[i] + key[i % key.length]) & 0xff;
    [s[i], s[j]] = [s[j], s[i]];
  }
  const out = Buffer.alloc(data.length);
  for (let k = 0, i = 0, j = 0; k < data.length; k++) {
    i = (i + 1) & 0xff;
    j = (j + s[i]) & 0xff;
    [s[i], s[j]] = [s[j], s[i]];
    out[k] = data[k] ^ s[(s[i] + s[j]) & 0xff];
  }
  return out;
}

const md5 = (...parts: Uint8Array[]) => {
  const h = createHash('md5');
  for (const p of parts) h.update(p);
  return h.digest();
};

function padPassword(pw: string): Buffer {
  return Buffer.concat([Buffer.from(pw, 'latin1'), PAD]).subarray(0, 32);
}

/** The O, U entries and the file key (algorithms 2–5). */
export function standardSecurity(user: string, owner: string, rev: 2 | 3, keyBytes: number, p: number, id: Buffer) {
  // Algorithm 3: O.
  let h = md5(padPassword(owner || user));
  if (rev >= 3) for (let i = 0; i < 50; i++) h = md5(h.subarray(0, keyBytes));
  const oKey = h.subarray(0, keyBytes);
  let o = rc4(oKey, padPassword(user));
  if (rev >= 3)
    for (let i = 1; i <= 19; i++)
      o = rc4(
        oKey.map((b) => b ^ i),
        o,
      );
  // Algorithm 2: the file key.
  const pBytes = Buffer.alloc(4);
  pBytes.writeInt32LE(p, 0);
  let k = md5(padPassword(user), o, pBytes, id);
  if (rev >= 3) for (let i = 0; i < 50; i++) k = md5(k.subarray(0, keyBytes));
  const key = k.subarray(0, keyBytes);
  // Algorithms 4 and 5: U.
  let u: Buffer;
  if (rev === 2) u = rc4(key, PAD);
  else {
    let x = rc4(key, md5(PAD, id));
    for (let i = 1; i <= 19; i++)
      x = rc4(
        key.map((b) => b ^ i),
        x,
      );
    u = Buffer.concat([x, Buffer.alloc(16)]);
  }
  return { o, u, key };
}

/** Algorithm 1: the RC4 key of one object. */
function objectKey(key: Uint8Array, num: number, gen: number): Buffer {
  const h = md5(key, Buffer.from([num & 0xff, (num >> 8) & 0xff, (num >> 16) & 0xff, gen & 0xff, (gen >> 8) & 0xff]));
  return h.subarray(0, Math.min(key.length + 5, 16));
}

function pdfString(s: string): string {
  return '(' + s.replace(/[\\()]/g, (c) => '\\' + c) + ')';
}

/**
 * A PDF with one text page per entry of `pages` (Helvetica, WinAnsi), encrypted with RC4 (40-bit R2 or
 * 128-bit R3). With an empty user password anyone can open it; otherwise it needs the password.
 */
export function encryptedPdf(opts: {
  pages: string[][];
  userPassword: string;
  ownerPassword?: string;
  bits: 40 | 128;
  title?: string;
}): Uint8Array {
  const rev = opts.bits === 40 ? 2 : 3;
  const keyBytes = opts.bits / 8;
  const p = -3904; // print, copy, ...: the usual permissions
  const id = createHash('md5')
    .update('folio-test-' + opts.bits + opts.userPassword)
    .digest();
  const { o, u, key } = standardSecurity(opts.userPassword, opts.ownerPassword ?? 'owner-secret', rev, keyBytes, p, id);

  const parts: Buffer[] = [Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n', 'latin1')];
  let length = parts[0].length;
  const offsets: number[] = [];
  const add = (num: number, body: Buffer) => {
    offsets[num] = length;
    const chunk = Buffer.concat([Buffer.from(`${num} 0 obj\n`, 'latin1'), body, Buffer.from('\nendobj\n', 'latin1')]);
    parts.push(chunk);
    length += chunk.length;
  };
  const dict = (s: string) => Buffer.from(s, 'latin1');
  const hex = (b: Uint8Array) => '<' + Buffer.from(b).toString('hex') + '>';
  const encString = (num: number, s: string) => hex(rc4(objectKey(key, num, 0), Buffer.from(s, 'latin1')));

  const n = opts.pages.length;
  const pageNum = (i: number) => 4 + 2 * i;
  const infoNum = 4 + 2 * n;
  const encryptNum = infoNum + 1;
  add(1, dict('<< /Type /Catalog /Pages 2 0 R >>'));
  add(2, dict(`<< /Type /Pages /Kids [${opts.pages.map((_, i) => `${pageNum(i)} 0 R`).join(' ')}] /Count ${n} >>`));
  add(3, dict('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>'));
  opts.pages.forEach((lines, i) => {
    const contentNum = pageNum(i) + 1;
    add(
      pageNum(i),
      dict(
        `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${contentNum} 0 R >>`,
      ),
    );
    const content = Buffer.from(
      `BT /F1 12 Tf 14 TL 72 720 Td ${lines.map((l) => pdfString(l) + " '").join(' ')} ET`,
      'latin1',
    );
    const data = rc4(objectKey(key, contentNum, 0), content);
    add(contentNum, Buffer.concat([dict(`<< /Length ${data.length} >>\nstream\n`), data, dict('\nendstream')]));
  });
  add(
    infoNum,
    dict(
      `<< /Title ${encString(infoNum, opts.title ?? 'Encrypted Fixture')} /Producer ${encString(infoNum, 'folio tests')} >>`,
    ),
  );
  add(
    encryptNum,
    dict(
      `<< /Filter /Standard /V ${rev === 2 ? 1 : 2} /R ${rev} /Length ${opts.bits} /O ${hex(o)} /U ${hex(u)} /P ${p} >>`,
    ),
  );

  const size = encryptNum + 1;
  let xref = `xref\n0 ${size}\n0000000000 65535 f \n`;
  for (let i = 1; i < size; i++) xref += `${String(offsets[i]).padStart(10, '0')} 00000 n \n`;
  const idHex = hex(id);
  xref += `trailer\n<< /Size ${size} /Root 1 0 R /Info ${infoNum} 0 R /Encrypt ${encryptNum} 0 R /ID [${idHex} ${idHex}] >>\nstartxref\n${length}\n%%EOF\n`;
  parts.push(Buffer.from(xref, 'latin1'));
  return new Uint8Array(Buffer.concat(parts));
}

// --------------------------------------------------------------------------------------------------------
// Scans: made by electron/documents/synthetic-scan.ts, which the OCR benchmark shares.
export { noiseImage, scannedPdf, typesetImage } from '../../electron/documents/synthetic-scan.ts';
