// Markdown: the text as written (the model reads Markdown well), minus what carries nothing for it: HTML
// comments, and images, which become their alt text (nothing when there is none). Code blocks are left
// exactly as they are. Blocks are headings (ATX "# ..." and setext underlines), paragraphs and fenced code
// blocks (kept whole where they fit on a page); pages follow pages.ts's rule, so sections start pages.
// Title: the front matter's `title:`, else the first level-1 heading, else the first heading, else the
// first short line, else the file name.
import { ImportError, checkTextLength } from './errors.ts';
import { decodeText, firstLineTitle, type TextEncoding } from './text.ts';
import { cleanTitle, normalizeText, paginate, titleFromFileName, type Block, type PageText } from './pages.ts';

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const FENCE_CLOSE = /^ {0,3}(`{3,}|~{3,})[ \t]*$/;
const ATX = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;

interface Segment {
  code: boolean;
  lines: string[];
}

/** Splits lines into fenced code and the rest (an unclosed fence runs to the end, as in CommonMark). */
function segments(lines: readonly string[]): Segment[] {
  const out: Segment[] = [];
  let cur: Segment = { code: false, lines: [] };
  let fence: { ch: string; len: number } | null = null;
  for (const line of lines) {
    const m = FENCE.exec(line);
    if (!fence && m) {
      if (cur.lines.length) out.push(cur);
      cur = { code: true, lines: [line] };
      fence = { ch: m[1][0], len: m[1].length };
      continue;
    }
    if (fence) {
      cur.lines.push(line);
      const c = FENCE_CLOSE.exec(line);
      if (c && c[1][0] === fence.ch && c[1].length >= fence.len) {
        out.push(cur);
        cur = { code: false, lines: [] };
        fence = null;
      }
      continue;
    }
    cur.lines.push(line);
  }
  if (cur.lines.length) out.push(cur);
  return out;
}

/** Drops HTML comments and images (keeping alt text) from prose. */
export function stripMarkdownNoise(text: string): string {
  return text
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/!\[([^\]]*)\]\((?:[^()\s]|\([^()]*\))*(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g, '$1')
    .replace(/!\[([^\]]*)\]\[[^\]]*\]/g, '$1')
    .replace(/<img\b[^>]*>/gi, '')
    .replace(/[ \t]+$/gm, '');
}

export interface MarkdownParse {
  blocks: Block[];
  frontMatterTitle: string | null;
  headings: { level: number; text: string }[];
}

function headingText(s: string): string {
  return s
    .replace(/[*_`]+/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim();
}

export function parseMarkdown(text: string): MarkdownParse {
  let lines = text.split('\n');
  const blocks: Block[] = [];
  let frontMatterTitle: string | null = null;
  const headings: { level: number; text: string }[] = [];

  // YAML front matter: kept as a block of its own; its title is the document's.
  if (lines[0]?.trim() === '---') {
    const end = lines.findIndex((l, i) => i > 0 && i < 200 && (l.trim() === '---' || l.trim() === '...'));
    if (end > 0) {
      const fm = lines.slice(0, end + 1);
      const t = fm.map((l) => /^title:\s*(.*)$/.exec(l)).find(Boolean);
      if (t) frontMatterTitle = cleanTitle(t[1].replace(/^["']|["']$/g, ''));
      blocks.push({ text: fm.join('\n') });
      lines = lines.slice(end + 1);
    }
  }

  for (const seg of segments(lines)) {
    if (seg.code) {
      blocks.push({ text: seg.lines.join('\n') });
      continue;
    }
    const prose = stripMarkdownNoise(seg.lines.join('\n')).split('\n');
    let para: string[] = [];
    const flush = () => {
      if (para.some((l) => l.trim())) blocks.push({ text: para.join('\n') });
      para = [];
    };
    for (const line of prose) {
      if (!line.trim()) {
        flush();
        continue;
      }
      const atx = ATX.exec(line);
      if (atx) {
        flush();
        const level = atx[1].length;
        headings.push({ level, text: headingText(atx[2] ?? '') });
        blocks.push({ text: line, heading: level });
        continue;
      }
      const setext = SETEXT.exec(line);
      if (setext && para.length && !/^ {0,3}([-*+]|\d+[.)])\s/.test(para[0])) {
        const level = setext[1][0] === '=' ? 1 : 2;
        headings.push({ level, text: headingText(para.join(' ')) });
        blocks.push({ text: [...para, line].join('\n'), heading: level });
        para = [];
        continue;
      }
      para.push(line);
    }
    flush();
  }
  return { blocks, frontMatterTitle, headings };
}

export interface MarkdownImport {
  title: string;
  pages: PageText[];
  encoding: TextEncoding;
}

export function importMarkdown(bytes: Uint8Array, fileName: string): MarkdownImport {
  const { text: raw, encoding } = decodeText(bytes, fileName);
  checkTextLength(fileName, raw.length);
  const text = normalizeText(raw).replace(/\f/g, '\n');
  const { blocks, frontMatterTitle, headings } = parseMarkdown(text);
  const pages = paginate(blocks);
  if (!pages.length) throw new ImportError('EMPTY', `${fileName} contains no text`);
  const title =
    frontMatterTitle ??
    cleanTitle(headings.find((h) => h.level === 1)?.text) ??
    cleanTitle(headings[0]?.text) ??
    firstLineTitle(pages[0].text) ??
    titleFromFileName(fileName);
  return { title, pages, encoding };
}
