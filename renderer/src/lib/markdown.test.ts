import { describe, expect, it } from 'vitest';

import { renderMarkdown } from './markdown.ts';

describe('answers as Markdown', () => {
  it('renders Markdown', () => {
    const html = renderMarkdown('# Title\n\nSome **bold** and `code`.\n\n- a\n- b\n\n| x | y |\n|---|---|\n| 1 | 2 |');
    expect(html).toContain('<h1>Title</h1>');
    expect(html).toContain('<strong>bold</strong>');
    expect(html).toContain('<code>code</code>');
    expect(html).toContain('<li>a</li>');
    expect(html).toContain('<table>');
  });

  it('strips script tags and event handlers', () => {
    const html = renderMarkdown('Hi <script>alert(1)</script> <img src=x onerror="alert(2)"> <b onclick="x()">b</b>');
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/alert\(1\)/);
    expect(html).not.toMatch(/onerror|onclick/i);
    expect(html).toContain('<b>b</b>');
  });

  it('strips javascript: links, iframes, forms and styles; links open outside', () => {
    const html = renderMarkdown(
      '[x](javascript:alert(1)) [ok](https://example.com) <iframe src="https://e.vil"></iframe><form><input></form><style>*{}</style><p style="color:red">s</p>',
    );
    expect(html).not.toMatch(/javascript:/i);
    expect(html).not.toMatch(/<iframe|<form|<input|<style|style=/i);
    expect(html).toContain('href="https://example.com"');
    expect(html).toMatch(/target="_blank"/);
    expect(html).toMatch(/rel="noopener noreferrer"/);
  });
});
