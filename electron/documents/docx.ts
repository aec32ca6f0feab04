// Word (.docx) through mammoth: its HTML is read back into blocks of text.
//   - Headings stay lines of their own (the "Title" and "Subtitle" styles count as headings).
//   - Lists: one line per item, "•" or "1." (numbered per list), two spaces of indent per nesting level.
//   - Tables: one line per row, cells joined with " | " (paragraphs inside a cell joined with a space).
//   - Footnotes and endnotes come at the end, as mammoth places them, without the "↑" back-links.
//   - Images are dropped (mammoth is told not to encode them at all, which keeps big documents fast).
// DOCX has no fixed pages, so pages are groups of blocks by pages.ts's rule (about 3,000 characters, at block
// boundaries, sections starting pages). Title: the document properties' title (docProps/core.xml), else
// the first level-1 heading, else the first heading, else the first short paragraph, else the file name.
import mammoth from 'mammoth';

import { ImportError } from './errors.ts';
import { cleanTitle, normalizeText, paginate, titleFromFileName, type Block, type PageText } from './pages.ts';
import { readZipEntry, zipEntries } from './zip.ts';

/** Limits against ZIP bombs: the declared inflated size of the main part and of the whole archive. */
const MAX_DOCUMENT_XML = 256 * 1024 * 1024;
const MAX_ARCHIVE_INFLATED = 1024 * 1024 * 1024;

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
  const re = /<(\/?)([a-zA-Z][a-zA-Z0-9]*)((?:\s+[^\s=>/]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+))?)*)\s*(\/?)>|<!--[\s\S]*?-->|([^<]+|<)/g;
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

const BLOCK_TAGS = new Set(['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'ul', 'ol', 'li', 'table', 'thead', 'tbody', 'tfoot', 'tr', 'td', 'th', 'div', 'blockquote', 'pre']);

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
  return s.replace(/[ \t\u00a0]+/g, ' ').replace(/ ?\n ?/g, '\n').trim();
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
    for (const c of children(n, 'thead', 'tbody', 'tfoot', 'tr')) (c.tag === 'tr' ? rows.push(c) : collect(c));
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
      else if (c.tag === 'p' || c.tag === 'pre') out.push({ text: c.tag === 'pre' ? inline(c).replace(/^\n+|\s+$/g, '') : tidy(inline(c)) });
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
}

export async function importDocx(bytes: Uint8Array, fileName: string): Promise<DocxImport> {
  const entries = zipEntries(bytes);
  const main = entries?.find((e) => e.name === 'word/document.xml');
  if (!entries || !main) throw new ImportError('CORRUPT', `${fileName} is damaged: it has no readable word/document.xml`);
  const inflated = entries.reduce((s, e) => s + e.uncompressedSize, 0);
  if (main.uncompressedSize > MAX_DOCUMENT_XML || inflated > MAX_ARCHIVE_INFLATED) {
    throw new ImportError('TOO_LARGE', `${fileName} is too large to read: its document text alone would take ${Math.round(main.uncompressedSize / 2 ** 20)} MiB (the limit is ${MAX_DOCUMENT_XML / 2 ** 20} MiB)`);
  }
  let result: { value: string; messages: { type: string; message: string }[] };
  try {
    result = await mammoth.convertToHtml(
      { buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) },
      {
        styleMap: ["p[style-name='Title'] => h1:fresh", "p[style-name='Subtitle'] => h2:fresh"],
        convertImage: mammoth.images.imgElement(async () => ({ src: '' })),
        ignoreEmptyParagraphs: true,
        externalFileAccess: false,
      },
    );
  } catch (e) {
    throw new ImportError('CORRUPT', `${fileName} is damaged: the Word document cannot be read (${(e as Error).message})`, { cause: e });
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
  return { title, pages, warnings };
}
