// ZIP archives made at test time, for the ZIP-bomb tests of document import: a minimal .docx whose
// word/document.xml is any number of repeated paragraphs, deflated without ever holding the inflated XML.
// The deflate stream is built from pieces: each piece comes from its own deflater ending in a sync flush
// (byte-aligned, non-final blocks whose back-references stay inside the piece), so one compressed piece of
// repeated XML can be repeated as many times as wanted and still inflate to the XML repeated; the last piece
// ends the stream. 200 MiB of XML is made in milliseconds and is well under 1 MB compressed.
import { constants, crc32 as zlibCrc32, deflateRawSync } from 'node:zlib';

export interface ZipPart {
  name: string;
  /** The raw deflate stream of the part. */
  deflated: Uint8Array;
  /** The real inflated size. */
  size: number;
  crc: number;
  /** The inflated size the headers state, when they should lie about it. */
  claimedSize?: number;
}

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(data: Uint8Array): number {
  if (typeof zlibCrc32 === 'function') return zlibCrc32(data) >>> 0;
  let c = 0xffffffff;
  for (const b of data) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** A part from its whole content. */
export function part(name: string, text: string): ZipPart {
  const data = new TextEncoder().encode(text);
  return { name, deflated: new Uint8Array(deflateRawSync(data)), size: data.length, crc: crc32(data) };
}

/**
 * A part of `head`, then `unit` repeated until the part has at least `size` bytes, then `tail`, deflated piece
 * by piece (see the top). The CRC is left 0: the readers under test do not check it, and computing it would
 * mean inflating the bomb.
 */
export function repeatedPart(name: string, head: string, unit: string, size: number, tail: string): ZipPart {
  const enc = new TextEncoder();
  const piece = unit.repeat(Math.max(1, Math.floor(Math.min(1 << 20, size) / unit.length))); // at most about 1 MiB
  const count = Math.max(1, Math.ceil((size - head.length - tail.length) / piece.length));
  const sync = { finishFlush: constants.Z_SYNC_FLUSH, level: 9 };
  const first = deflateRawSync(enc.encode(head), sync);
  const middle = deflateRawSync(enc.encode(piece), sync);
  const last = deflateRawSync(enc.encode(tail));
  const out = new Uint8Array(first.length + middle.length * count + last.length);
  out.set(first, 0);
  for (let i = 0; i < count; i++) out.set(middle, first.length + i * middle.length);
  out.set(last, first.length + middle.length * count);
  return { name, deflated: out, size: head.length + piece.length * count + tail.length, crc: 0 };
}

/** A ZIP archive of the parts (deflate; headers state `claimedSize` where a part has one). */
export function zipOf(parts: readonly ZipPart[]): Uint8Array {
  const enc = new TextEncoder();
  const chunks: Uint8Array[] = [];
  const central: Uint8Array[] = [];
  let offset = 0;
  for (const p of parts) {
    const name = enc.encode(p.name);
    const stated = p.claimedSize ?? p.size;
    const local = new DataView(new ArrayBuffer(30));
    local.setUint32(0, 0x04034b50, true);
    local.setUint16(4, 20, true);
    local.setUint16(8, 8, true); // deflate
    local.setUint32(14, p.crc, true);
    local.setUint32(18, p.deflated.length, true);
    local.setUint32(22, stated, true);
    local.setUint16(26, name.length, true);
    chunks.push(new Uint8Array(local.buffer), name, p.deflated);
    const dir = new DataView(new ArrayBuffer(46));
    dir.setUint32(0, 0x02014b50, true);
    dir.setUint16(4, 20, true);
    dir.setUint16(6, 20, true);
    dir.setUint16(10, 8, true);
    dir.setUint32(16, p.crc, true);
    dir.setUint32(20, p.deflated.length, true);
    dir.setUint32(24, stated, true);
    dir.setUint16(28, name.length, true);
    dir.setUint32(42, offset, true);
    central.push(new Uint8Array(dir.buffer), name);
    offset += 30 + name.length + p.deflated.length;
  }
  const cdSize = central.reduce((n, c) => n + c.length, 0);
  const eocd = new DataView(new ArrayBuffer(22));
  eocd.setUint32(0, 0x06054b50, true);
  eocd.setUint16(8, parts.length, true);
  eocd.setUint16(10, parts.length, true);
  eocd.setUint32(12, cdSize, true);
  eocd.setUint32(16, offset, true);
  const all = [...chunks, ...central, new Uint8Array(eocd.buffer)];
  const out = new Uint8Array(all.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of all) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';
const CONTENT_TYPES =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
  '<Default Extension="xml" ContentType="application/xml"/>' +
  '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>' +
  '</Types>';
const RELS =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
  '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>' +
  '</Relationships>';
const DOC_HEAD = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="${W}"><w:body>`;
const DOC_TAIL = '</w:body></w:document>';

/** A paragraph of WordprocessingML. */
export function wordParagraph(text: string): string {
  return `<w:p><w:r><w:t>${text}</w:t></w:r></w:p>`;
}

/**
 * A minimal .docx whose document.xml is `paragraph` repeated to at least `xmlBytes` bytes. With `claimedSize`,
 * the archive's headers state that size for document.xml instead of the real one (a lying archive).
 */
export function repeatedDocx(opts: { xmlBytes: number; paragraph?: string; claimedSize?: number }): {
  bytes: Uint8Array;
  xmlBytes: number;
} {
  const doc = repeatedPart(
    'word/document.xml',
    DOC_HEAD,
    opts.paragraph ?? wordParagraph('All work and no play makes a dull document. '),
    opts.xmlBytes,
    DOC_TAIL,
  );
  if (opts.claimedSize !== undefined) doc.claimedSize = opts.claimedSize;
  return {
    bytes: zipOf([part('[Content_Types].xml', CONTENT_TYPES), part('_rels/.rels', RELS), doc]),
    xmlBytes: doc.size,
  };
}
