// An image (PNG or JPEG: a photographed page, a screenshot, a fax saved as a picture) as a document of one page:
// put on a PDF page of its size at IMAGE_DPI (pdf-lib), and read as a scanned PDF is (pdf.ts: the page has no
// text layer, so OCR reads it). The page made is kept beside the original (ParsedDocument.pdf) and is what the
// document view shows, the recognised words over it.
import { PDFDocument } from 'pdf-lib';

import { ImportError } from './errors.ts';
import { titleFromFileName } from './pages.ts';
import { importPdf, type PdfImport, type PdfOptions } from './pdf.ts';

/** The most pixels an image may have (a 100-megapixel picture is 400 MB decoded; a scanned page at 600 dpi is 35). */
export const MAX_IMAGE_PIXELS = 100_000_000;

/**
 * The image's size from its structure, checked before any decoder sees it (a truncated PNG makes pdf-lib's decoder
 * spin, and native decoders have crashed on hostile files): a PNG's chunks must run whole from IHDR to IEND, a
 * JPEG's segments from SOI to a frame header and its end marker. Throws CORRUPT or TOO_LARGE, naming the file.
 */
export function imageSize(bytes: Uint8Array, fileName: string): { width: number; height: number } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const png = bytes[0] === 0x89;
  const damaged = (why: string) =>
    new ImportError('CORRUPT', `${fileName} is damaged: its ${png ? 'PNG' : 'JPEG'} image ${why}`);
  let width = 0;
  let height = 0;
  if (png) {
    let at = 8;
    let ended = false;
    while (at + 8 <= bytes.length && !ended) {
      const len = view.getUint32(at);
      const type = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
      if (at + 12 + len > bytes.length) throw damaged('is cut short (a chunk runs past the end of the file)');
      if (at === 8) {
        if (type !== 'IHDR' || len < 8) throw damaged('has no header (IHDR)');
        width = view.getUint32(at + 8);
        height = view.getUint32(at + 12);
      }
      ended = type === 'IEND';
      at += 12 + len;
    }
    if (!ended) throw damaged('is cut short (no IEND chunk)');
  } else {
    let at = 2;
    while (at + 4 <= bytes.length && !width) {
      if (bytes[at] !== 0xff) throw damaged('has a broken segment');
      const marker = bytes[at + 1];
      const len = view.getUint16(at + 2);
      // SOF0..SOF15 but DHT (C4), JPG (C8) and DAC (CC) carry the frame's size.
      if (
        marker >= 0xc0 &&
        marker <= 0xcf &&
        marker !== 0xc4 &&
        marker !== 0xc8 &&
        marker !== 0xcc &&
        at + 9 <= bytes.length
      ) {
        height = view.getUint16(at + 5);
        width = view.getUint16(at + 7);
      }
      at += 2 + len;
    }
    if (!width || bytes[bytes.length - 2] !== 0xff || bytes[bytes.length - 1] !== 0xd9)
      throw damaged(width ? 'is cut short (no end marker)' : 'has no frame header');
  }
  if (!width || !height) throw damaged('has no size');
  if (width * height > MAX_IMAGE_PIXELS)
    throw new ImportError(
      'TOO_LARGE',
      `${fileName} is too large to read: ${width} × ${height} pixels, more than ${MAX_IMAGE_PIXELS / 1e6} megapixels; ` +
        'scale it down (300 dpi is enough for OCR)',
    );
  return { width, height };
}

/** The resolution an image is taken to have: a scan's usual. (A photo's pixels carry no page size; at 300 dpi a
 * 12-megapixel photo makes a page about 13 by 10 inches, which OCR reads at the image's own pixels.) */
export const IMAGE_DPI = 300;

export async function importImage(
  bytes: Uint8Array,
  fileName: string,
  opts: PdfOptions = {},
): Promise<PdfImport & { pdf: Uint8Array }> {
  opts.onPhase?.('decoding the image');
  imageSize(bytes, fileName);
  const png = bytes[0] === 0x89;
  const doc = await PDFDocument.create();
  let image: Awaited<ReturnType<PDFDocument['embedPng']>>;
  try {
    image = png ? await doc.embedPng(bytes) : await doc.embedJpg(bytes);
  } catch (e) {
    throw new ImportError(
      'CORRUPT',
      `${fileName} is damaged: its ${png ? 'PNG' : 'JPEG'} image cannot be decoded (${e instanceof Error ? e.message : String(e)})`,
      { cause: e },
    );
  }
  const width = (image.width * 72) / IMAGE_DPI;
  const height = (image.height * 72) / IMAGE_DPI;
  doc.addPage([width, height]).drawImage(image, { x: 0, y: 0, width, height });
  const pdf = await doc.save();
  // pdf.js takes the bytes it is given (their buffer is detached): it reads a copy, the page is kept.
  const read = await importPdf(pdf.slice(), fileName, opts);
  return { ...read, title: titleFromFileName(fileName), pdf };
}
