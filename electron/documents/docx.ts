// Word (.docx) through mammoth: its HTML is read back into blocks of text.
//   - Headings stay lines of their own (the "Title" and "Subtitle" styles count as headings).
//   - Lists: one line per item, "•" or "1." (numbered per list), two spaces of indent per nesting level.
//   - Tables: one line per row, cells joined with " | " (paragraphs inside a cell joined with a space).
//   - Footnotes and endnotes come at the end, as mammoth places them, without the "↑" back-links.
//   - Images are dropped (mammoth is told not to encode them at all, which keeps big documents fast).
// DOCX has no fixed pages, so pages are groups of blocks by pages.ts's rule (about 3,000 characters, at block
// boundaries, sections starting pages). Title: the document properties' title (docProps/core.xml), else
// the first level-1 heading, else the first heading, else the first short paragraph, else the file name.
// ZIP bombs: mammoth never unzips anything itself. It is given our own reader (zip.ts), which inflates each
// part it asks for with a limit per part and a running total, counted while inflating (the archive's stated
// sizes may lie); word/document.xml is inflated before mammoth starts, so a bomb fails at once.
import mammoth from 'mammoth';

import { ImportError } from './errors.ts';
import { MAX_DOCX_INFLATED_BYTES, MAX_DOCX_PART_BYTES, mib } from '../shared/limits.ts';
import { cleanTitle, normalizeText, paginate, titleFromFileName, type Block, type PageText } from './pages.ts';
import { BoundedZipReader, ZipLimitError, readZipEntry, zipEntries } from './zip.ts';

interface Node {
  tag: string;
  attrs: Record<string, string>;
  children: (Node | string)[];
}

const VOID = new Set(['br', 'img', 'hr', 'col', 'meta', 'input', 'wbr']);

export function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos|nbsp);/gi, (m, e: string) => {
    const k = e.toLowerCase();
    if (k[0] === '#') {
      const cp = k[1] === 'x' ? parseInt(k.slice(2), 16) : parseInt(k.slice(1), 10);
      return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : m;
    }
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' }[k] ?? m;
  });
}

/** Parses the well-formed HTML mammoth writes into a tree (not a general HTML parser). */
export function parseHtml(html: string): Node {
  const root: Node = { tag: '#root', attrs: {}, children: [] };
  const stack: Node[] = [root];
  const re =
    /<(\/?)([a-zA-Z][a-zA-Z0-9]*)((?:\s+[^\s=>/]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+))?)*)\s*(\/?)>|<!--[\s\S]*?-->|([^<]+|<)/g;
  for (let m = re.exec(html); m; m = re.exec(html)) {
    const top = stack[stack.length - 1];
    if (m[5] !== undefined) {
      top.children.push(decodeEntities(m[5]));
      continue;
    }
    if (!m[2]) continue;
    const tag = m[2].toLowerCase();
    if (m[1]) {
      const at = stack.map((n) => n.tag).lastIndexOf(tag);
      if (at > 0) stack.length = at;
      continue;
    }
    const attrs: Record<string, string> = {};
    for (const a of (m[3] ?? '').matchAll(/([^\s=>/]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/g)) {
      attrs[a[1].toLowerCase()] = decodeEntities(a[2] ?? a[3] ?? a[4] ?? '');
    }
    const node: Node = { tag, attrs, children: [] };
    top.children.push(node);
    if (!m[4] && !VOID.has(tag)) stack.push(node);
  }
  return root;
}

const BLOCK_TAGS = new Set([
  'p',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'ul',
  'ol',
  'li',
  'table',
  'thead',
  'tbody',
  'tfoot',
  'tr',
  'td',
  'th',
  'div',
  'blockquote',
  'pre',
]);

/** The inline text of a node: runs concatenated, <br> as a newline, back-links and images dropped. */
function inline(node: Node | string): string {
  if (typeof node === 'string') return node;
  if (node.tag === 'br') return '\n';
  if (node.tag === 'img') return '';
  if (node.tag === 'a' && /^#(footnote|endnote|comment)-ref-/.test(node.attrs.href ?? '')) return '';
  let s = '';
  for (const c of node.children) {
    if (typeof c !== 'string' && BLOCK_TAGS.has(c.tag)) {
      const t = inline(c).trim();
      if (t) s += (s && !/\s$/.test(s) ? ' ' : '') + t;
    } else s += inline(c);
  }
  return s;
}

function tidy(s: string): string {
  return s
    .replace(/[ \t\u00a0]+/g, ' ')
    .replace(/ ?\n ?/g, '\n')
    .trim();
}

function children(node: Node, ...tags: string[]): Node[] {
  return node.children.filter((c): c is Node => typeof c !== 'string' && tags.includes(c.tag));
}

function listBlocks(list: Node, depth: number, out: Block[]): void {
  const items = children(list, 'li');
  items.forEach((li, i) => {
    const marker = list.tag === 'ol' ? `${i + 1}.` : '•';
    const own = li.children.filter((c) => typeof c === 'string' || (c.tag !== 'ul' && c.tag !== 'ol'));
    const text = tidy(own.map(inline).join('')).replace(/\n/g, '\n' + '  '.repeat(depth + 1));
    const first = depth === 0 && i === 0;
    out.push({ text: `${'  '.repeat(depth)}${marker} ${text}`, sep: first ? '\n\n' : '\n' });
    for (const sub of children(li, 'ul', 'ol')) listBlocks(sub, depth + 1, out);
  });
}

function tableBlocks(table: Node, out: Block[]): void {
  const rows: Node[] = [];
  const collect = (n: Node) => {
    for (const c of children(n, 'thead', 'tbody', 'tfoot', 'tr')) c.tag === 'tr' ? rows.push(c) : collect(c);
  };
  collect(table);
  rows.forEach((tr, i) => {
    const cells = children(tr, 'td', 'th').map((c) => tidy(inline(c)).replace(/\n+/g, ' '));
    if (cells.some((c) => c)) out.push({ text: cells.join(' | '), sep: i === 0 ? '\n\n' : '\n' });
  });
}

/** The blocks of mammoth's HTML. */
export function htmlBlocks(root: Node): Block[] {
  const out: Block[] = [];
  const walk = (node: Node) => {
    for (const c of node.children) {
      if (typeof c === 'string') {
        if (c.trim()) out.push({ text: tidy(c) });
        continue;
      }
      const h = /^h([1-6])$/.exec(c.tag);
      if (h) out.push({ text: tidy(inline(c)), heading: Number(h[1]) });
      else if (c.tag === 'p' || c.tag === 'pre')
        out.push({ text: c.tag === 'pre' ? inline(c).replace(/^\n+|\s+$/g, '') : tidy(inline(c)) });
      else if (c.tag === 'ul' || c.tag === 'ol') listBlocks(c, 0, out);
      else if (c.tag === 'table') tableBlocks(c, out);
      else if (BLOCK_TAGS.has(c.tag)) walk(c);
      else {
        const t = tidy(inline(c));
        if (t) out.push({ text: t });
      }
    }
  };
  walk(root);
  return out.filter((b) => b.text.trim());
}

/** dc:title from docProps/core.xml, if the archive has one. */
export function docxCoreTitle(bytes: Uint8Array): string | null {
  const entry = zipEntries(bytes)?.find((e) => e.name === 'docProps/core.xml');
  if (!entry) return null;
  const xml = readZipEntry(bytes, entry, 1024 * 1024);
  if (!xml) return null;
  const m = /<dc:title(?:\s[^>]*)?>([\s\S]*?)<\/dc:title>/.exec(new TextDecoder().decode(xml));
  return m ? cleanTitle(decodeEntities(m[1])) : null;
}

export interface DocxImport {
  title: string;
  pages: PageText[];
  warnings: string[];
  /** mammoth's HTML of the document (images left out), which the document view shows. */
  html: string;
}

/** The archive interface mammoth uses internally (its `{ file }` input, which skips its own unzipping). */
interface MammothZip {
  exists(name: string): boolean;
  read(name: string, encoding?: string): Promise<Uint8Array | string>;
}

function mammothZip(zip: BoundedZipReader, preRead: Map<string, Uint8Array>): MammothZip {
  return {
    exists: (name) => zip.has(name),
    read: async (name, encoding) => {
      const bytes = preRead.get(name) ?? zip.read(name);
      preRead.delete(name);
      if (encoding === 'base64')
        return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
      return encoding ? new TextDecoder(encoding).decode(bytes) : bytes;
    },
  };
}

function zipTooLarge(fileName: string, e: ZipLimitError): ImportError {
  return new ImportError(
    'TOO_LARGE',
    e.whole
      ? `${fileName} is too large to read: its parts inflate to more than ${mib(e.limit)} in all (a ZIP bomb?); Folio reads Word documents up to that`
      : `${fileName} is too large to read: its part ${e.entry} inflates to more than ${mib(e.limit)} (a ZIP bomb?); Folio reads Word documents up to that`,
    { cause: e, details: { entry: e.entry, limit: e.limit } },
  );
}

/** The time mammoth may take per MiB of document.xml (it reports no progress): ~0.6 s here, with room for slow machines. */
const CONVERT_MS_PER_MIB = 3000;

/** `onPhase` hears of the conversion with the time it may take, since mammoth gives no sign of progress. */
export async function importDocx(
  bytes: Uint8Array,
  fileName: string,
  onPhase?: (phase: string, allowanceMs?: number) => void,
): Promise<DocxImport> {
  const entries = zipEntries(bytes);
  const main = entries?.find((e) => e.name === 'word/document.xml');
  if (!entries || !main)
    throw new ImportError('CORRUPT', `${fileName} is damaged: it has no readable word/document.xml`);
  const zip = new BoundedZipReader(bytes, entries, MAX_DOCX_PART_BYTES, MAX_DOCX_INFLATED_BYTES);
  const preRead = new Map<string, Uint8Array>();
  let result: { value: string; messages: { type: string; message: string }[] };
  try {
    const xml = zip.read(main.name);
    preRead.set(main.name, xml);
    onPhase?.(
      `converting the Word document (${mib(xml.length)} of XML)`,
      CONVERT_MS_PER_MIB * Math.ceil(xml.length / 2 ** 20),
    );
    result = await mammoth.convertToHtml({ file: mammothZip(zip, preRead) } as unknown as { buffer: Buffer }, {
      styleMap: ["p[style-name='Title'] => h1:fresh", "p[style-name='Subtitle'] => h2:fresh"],
      convertImage: mammoth.images.imgElement(async () => ({ src: '' })),
      ignoreEmptyParagraphs: true,
      externalFileAccess: false,
    });
  } catch (e) {
    if (e instanceof ZipLimitError) throw zipTooLarge(fileName, e);
    throw new ImportError(
      'CORRUPT',
      `${fileName} is damaged: the Word document cannot be read (${(e as Error).message})`,
      { cause: e },
    );
  } finally {
    preRead.clear();
  }
  const blocks = htmlBlocks(parseHtml(result.value)).map((b) => ({ ...b, text: normalizeText(b.text) }));
  const pages = paginate(blocks);
  if (!pages.length) throw new ImportError('EMPTY', `${fileName} contains no text`);
  const headings = blocks.filter((b) => b.heading !== undefined);
  const firstPara = blocks.find((b) => b.heading === undefined)?.text;
  const title =
    docxCoreTitle(bytes) ??
    cleanTitle(headings.find((h) => h.heading === 1)?.text) ??
    cleanTitle(headings[0]?.text) ??
    (firstPara && firstPara.length <= 120 ? cleanTitle(firstPara) : null) ??
    titleFromFileName(fileName);
  const warnings = result.messages.filter((m) => m.type === 'error').map((m) => m.message);
  return { title, pages, warnings, html: result.value };
}
