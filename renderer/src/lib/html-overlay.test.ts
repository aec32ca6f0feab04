import { describe, expect, it } from 'vitest';

import { htmlBlocks, parseHtml } from '../../../electron/documents/docx.ts';
import { importMarkdown } from '../../../electron/documents/markdown.ts';
import { normalizeText, paginate } from '../../../electron/documents/pages.ts';
import { alignTexts, joinPages, mapRange } from './html-overlay.ts';
import { renderMarkdown, sanitizeHtml } from './markdown.ts';

/** The text a browser shows of sanitised HTML, as HtmlDocView walks it (its text nodes in order). */
function renderedText(html: string): string {
  const div = document.createElement('div');
  div.innerHTML = html;
  return div.textContent ?? '';
}

/** Each given word of the page text maps onto the same word of the rendered text. */
function expectWordsMap(pageText: string, rendered: string, words: readonly string[]) {
  const map = alignTexts(pageText, rendered);
  for (const w of words) {
    const at = pageText.indexOf(w);
    expect(at, w).toBeGreaterThanOrEqual(0);
    const r = mapRange(map, at, at + w.length);
    expect(r, w).not.toBeNull();
    expect(rendered.slice(r![0], r![1]), w).toBe(w);
  }
}

describe('page text to rendered HTML', () => {
  it('aligns a Word document’s page text (list markers, table separators) with mammoth’s HTML', () => {
    const html =
      '<h1>The Title</h1><p>First paragraph with <strong>bold</strong> words.</p><ul><li>Apples</li><li>Pears</li></ul>' +
      '<ol><li>Step one</li><li>Step two</li></ol><table><tr><td><p>Cell A</p></td><td><p>Cell B</p></td></tr></table>' +
      '<p>Last words here.</p>';
    const pages = paginate(htmlBlocks(parseHtml(html)).map((b) => ({ ...b, text: normalizeText(b.text) })));
    const { text } = joinPages(pages);
    expect(text).toContain('• Apples');
    expect(text).toContain('Cell A | Cell B');
    const rendered = renderedText(sanitizeHtml(html));
    const words = [...text.matchAll(/\p{L}+/gu)].map((m) => m[0]);
    // Every word, in order: check each occurrence through its own index.
    const map = alignTexts(text, rendered);
    for (const m of text.matchAll(/\p{L}+/gu)) {
      const r = mapRange(map, m.index, m.index + m[0].length);
      expect(r && rendered.slice(r[0], r[1]), m[0]).toBe(m[0]);
    }
    expect(words.length).toBeGreaterThan(10);
  });

  it('aligns Markdown’s page text (the source as written) with its rendering', () => {
    const md =
      '# Heading\n\nSome *emphasis* and a [link](http://x.y/z) here.\n\n- one\n- two\n\n```\ncode line\n```\n\nThe **end**.\n';
    const { pages } = importMarkdown(new TextEncoder().encode(md), 'a.md');
    const { text } = joinPages(pages);
    expectWordsMap(text, renderedText(renderMarkdown(md)), [
      'Heading',
      'emphasis',
      'link',
      'here',
      'one',
      'two',
      'code line',
      'end',
    ]);
  });

  it('skips on the side that has extra characters, and maps ranges from their first to last mapped character', () => {
    const map = alignTexts('ab • cd', 'abcd');
    expect([...map]).toEqual([0, 1, -1, -1, -1, 2, 3]);
    expect([...alignTexts('abcd', 'ab[1]cd')]).toEqual([0, 1, 5, 6]);
    expect(mapRange(map, 1, 7)).toEqual([1, 4]);
    expect(mapRange(map, 2, 5)).toBeNull();
    const { text, base } = joinPages([
      { page: 1, text: 'one' },
      { page: 2, text: 'two' },
    ]);
    expect(text).toBe('one\n\ntwo');
    expect(base.get(2)).toBe(5);
  });
});
