// The room a document leaves for its conversation and the ranges of pages that fit a context with it
// (electron/shared/room.ts), one rule for the app core and the UI.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import type { DocumentPage } from '../electron/api/contract.ts';
import {
  conversationRoom,
  fittingEnds,
  fittingPages,
  lastFittingPage,
  pagesRead,
  type PagesRead,
} from '../electron/shared/room.ts';

/** Pages of the given token counts, one after the other, after `prompt` tokens and before `after`, in 512
 * positions. */
function paged(lengths: number[], prompt = 30, after = 0): PagesRead {
  let at = prompt;
  const pages = lengths.map((n, i) => {
    const p = { page: i + 1, text: `page ${i + 1}`, tokenStart: at, tokenEnd: at + n };
    at += n;
    return p;
  });
  return { pages, prefixTokens: at + after, contextTokens: 512 };
}

/** Six pages of 100 tokens after a 30-token system prompt: 630 tokens in 512 positions. */
const read = paged([100, 100, 100, 100, 100, 100]);
const pages = read.pages;

test('the room: the setting or 1,024, at most a quarter of the context', () => {
  assert.equal(conversationRoom(512, null), 128);
  assert.equal(conversationRoom(8192, null), 1024);
  assert.equal(conversationRoom(8192, 300), 300);
  assert.equal(conversationRoom(512, 300), 128);
});

test('the pages that fit from the first: the prompt and the pages within the context less the room', () => {
  // 512 − 128 − 30 = 354: pages 1 to 3 take 300 tokens; page 4 would make 400.
  assert.deepEqual(fittingPages(read, null), [1, 3]);
  // 512 − 50 − 30 = 432: page 4 fits too.
  assert.deepEqual(fittingPages(read, 50), [1, 4]);
  assert.equal(fittingPages({ ...read, contextTokens: 100 }, null), null);
  // A list that starts later (a range read before) starts there.
  assert.deepEqual(fittingPages({ pages: [pages[2], pages[3]], prefixTokens: 430, contextTokens: 512 }, null), [3, 3]);
  assert.equal(fittingPages({ pages: [], prefixTokens: 30, contextTokens: 512 }, null), null);
});

test('from a later page: the longest range from there that fits', () => {
  assert.equal(lastFittingPage(read, 1, null), 3);
  assert.equal(lastFittingPage(read, 2, null), 4);
  // Pages 3 to 5: 300 tokens of 354; page 6 would make 400.
  assert.equal(lastFittingPage(read, 3, null), 5);
  // To the end of the document.
  assert.equal(lastFittingPage(read, 4, null), 6);
  assert.equal(lastFittingPage(read, 6, null), 6);
  assert.equal(lastFittingPage(read, 7, null), null, 'no page from there');
  // Exactly at the budget fits, one token more does not: 512 − 128 − 30 = 354 for 3 pages of 118.
  assert.equal(lastFittingPage(paged([118, 118, 118, 118, 118]), 2, null), 4);
  assert.equal(lastFittingPage(paged([118, 118, 118, 118, 118], 31), 2, null), 3);
  assert.equal(lastFittingPage(paged([118, 118, 118, 118, 118], 30, 1), 2, null), 3);
});

test('what follows the pages in the prefix (the end of the template) counts as the prompt does', () => {
  // 40 tokens after the last page: 512 − 50 − 30 − 40 = 392, and pages 1 to 4 take 400.
  assert.deepEqual(fittingPages({ ...read, prefixTokens: 670 }, 50), [1, 3]);
  assert.equal(lastFittingPage({ ...read, prefixTokens: 670 }, 3, 50), 5);
});

test('not even the first page of the range fits: null', () => {
  const r = paged([100, 400, 100, 100]);
  assert.equal(lastFittingPage(r, 2, null), null);
  assert.equal(lastFittingPage(r, 1, null), 1, 'the range ends before the page that is too long');
  assert.equal(lastFittingPage(r, 3, null), 4);
  // The prompt alone takes more than the context less the room.
  assert.equal(lastFittingPage(paged([10, 10], 400), 1, null), null);
  // 512 − 128 − 375 = 9 tokens for pages of 10; 10 with a prompt of 374; 20 with one of 364.
  assert.equal(fittingPages(paged([10, 10], 375), null), null);
  assert.deepEqual(fittingPages(paged([10, 10], 374), null), [1, 1]);
  assert.deepEqual(fittingPages(paged([10, 10], 364), null), [1, 2]);
});

test('empty pages take no room, wherever they are; pages the last read left out (-1) were not measured: no range holds them', () => {
  const gaps: DocumentPage[] = [
    { page: 1, text: '', tokenStart: -1, tokenEnd: -1 },
    { page: 2, text: 'two', tokenStart: 30, tokenEnd: 130 },
    { page: 3, text: '', tokenStart: 0, tokenEnd: 0 },
    { page: 4, text: 'four', tokenStart: 130, tokenEnd: 230 },
    { page: 5, text: 'five', tokenStart: 230, tokenEnd: 330 },
    { page: 6, text: 'six', tokenStart: 330, tokenEnd: 430 },
    { page: 7, text: '', tokenStart: -1, tokenEnd: -1 },
  ];
  const r = { pages: gaps, prefixTokens: 430, contextTokens: 512 };
  // Page 1 was not read: what it takes is unknown, so no range starts there. The prompt is what comes
  // before page 2 (30 tokens): 354 left, pages 2 to 5 take 300.
  assert.equal(fittingPages(r, null), null);
  assert.equal(lastFittingPage(r, 2, null), 5);
  // From the empty page 3 the tokens start at page 4's: pages 4 to 6 take 300; page 7 was not read.
  assert.equal(lastFittingPage(r, 3, null), 6);
  assert.equal(lastFittingPage(r, 7, null), null);
  // However few tokens the measured pages take, a range stops before an unread page.
  let at = 30;
  const few = gaps.map((p) => (p.tokenStart > 0 ? { ...p, tokenStart: at, tokenEnd: ++at } : p));
  assert.deepEqual(fittingEnds({ ...r, pages: few, prefixTokens: at }, null), [null, 6, 6, 6, 6, 6, null]);
  // A document not read yet: no page has tokens, and the whole prefix is the template's.
  const unread = gaps.map((p) => ({ ...p, tokenStart: 0, tokenEnd: 0 }));
  assert.deepEqual(fittingPages({ pages: unread, prefixTokens: 30, contextTokens: 512 }, null), [1, 7]);
  assert.equal(fittingPages({ pages: unread, prefixTokens: 400, contextTokens: 512 }, null), null);
});

test('the pages a read took in: its range, or every page', () => {
  assert.deepEqual(
    pagesRead(pages, [2, 4]).map((p) => p.page),
    [2, 3, 4],
  );
  assert.deepEqual(pagesRead(pages, null), pages);
  assert.notEqual(pagesRead(pages, null), pages, 'a list of its own');
  assert.deepEqual(pagesRead(pages, [7, 9]), []);
});

test('every page at once (fittingEnds) agrees with measuring each range by its definition', () => {
  // A seeded generator: pages of 0 to 150 tokens (some empty, some -1), a prompt and a template end.
  let seed = 7;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (let round = 0; round < 200; round++) {
    const prompt = rand(120);
    let at = prompt;
    const list: DocumentPage[] = Array.from({ length: 1 + rand(12) }, (_, i) => {
      const n = rand(5) === 0 ? 0 : 1 + rand(150);
      const p =
        n === 0 ? { tokenStart: rand(2) ? -1 : 0, tokenEnd: rand(2) ? -1 : 0 } : { tokenStart: at, tokenEnd: at + n };
      at += n + rand(3); // a separator's tokens between pages, sometimes
      return { page: 2 + 2 * i, text: '', ...p };
    });
    const r: PagesRead = { pages: list, prefixTokens: at + rand(20), contextTokens: 256 + rand(512) };
    const room = rand(3) === 0 ? null : 16 + rand(200);
    const budget = r.contextTokens - conversationRoom(r.contextTokens, room);
    const read = list.filter((p) => p.tokenStart >= 0 && p.tokenEnd > p.tokenStart);
    const notPages = (read[0]?.tokenStart ?? 0) + r.prefixTokens - (read.at(-1)?.tokenEnd ?? 0);
    const cost = (i: number, j: number) => {
      if (list.slice(i, j + 1).some((p) => p.tokenStart < 0)) return Infinity; // not measured
      const inRange = list.slice(i, j + 1).filter((p) => read.includes(p));
      return notPages + (inRange.length ? inRange.at(-1)!.tokenEnd - inRange[0].tokenStart : 0);
    };
    const expected = list.map((_, i) => {
      let last: number | null = null;
      for (let j = i; j < list.length && cost(i, j) <= budget; j++) last = list[j].page;
      return last;
    });
    assert.deepEqual(fittingEnds(r, room), expected, JSON.stringify({ r, room }));
    // A first page between two listed ones starts at the next.
    assert.equal(lastFittingPage(r, list[0].page + 1, room), expected[1] ?? null);
  }
});
