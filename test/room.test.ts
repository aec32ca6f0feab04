// The room a document leaves for its conversation and the pages that fit a context with it
// (electron/services/room.ts), one rule for the app core and the UI; and how the read plan uses the room.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import type { DocumentPage } from '../electron/api/contract.ts';
import { conversationRoom, fittingPages, pagesThatFit } from '../electron/services/room.ts';

/** Six pages of 100 tokens after a 30-token system prompt. */
const pages: DocumentPage[] = Array.from({ length: 6 }, (_, i) => ({
  page: i + 1,
  text: `page ${i + 1}`,
  tokenStart: 30 + 100 * i,
  tokenEnd: 30 + 100 * (i + 1),
}));

test('the room: the setting or 1,024, at most a quarter of the context', () => {
  assert.equal(conversationRoom(512, null), 128);
  assert.equal(conversationRoom(8192, null), 1024);
  assert.equal(conversationRoom(8192, 300), 300);
  assert.equal(conversationRoom(512, 300), 128);
});

test('the pages that fit: the first ones whose tokens end within the context less the room', () => {
  // 512 − 128 = 384: pages 1 to 3 end at 130, 230, 330; page 4 ends at 430.
  assert.deepEqual(fittingPages(pages, 512, null), [1, 3]);
  // 512 − 50 = 462: page 4 fits too.
  assert.deepEqual(fittingPages(pages, 512, 50), [1, 4]);
  assert.equal(fittingPages(pages, 100, null), null);
  assert.deepEqual(fittingPages([pages[2], pages[3]], 512, null), [3, 3]);
  assert.equal(pagesThatFit(pages, 429), 3);
  assert.equal(pagesThatFit(pages, 430), 4);
});
