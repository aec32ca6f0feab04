import { describe, expect, it } from 'vitest';

import type { DocumentPage } from '../../../electron/api/contract.ts';
import { pagesThatFit } from '../../../electron/services/prefix.ts';
import {
  conversationRoom as coreRoom,
  DEFAULT_CONVERSATION_ROOM as CORE_DEFAULT_ROOM,
} from '../../../electron/services/read-plan.ts';
import { conversationRoom, DEFAULT_CONVERSATION_ROOM, fittingPages } from './fitting-pages.ts';

/** Six pages of 100 tokens after a 30-token system prompt. */
const pages: DocumentPage[] = Array.from({ length: 6 }, (_, i) => ({
  page: i + 1,
  text: `page ${i + 1}`,
  tokenStart: 30 + 100 * i,
  tokenEnd: 30 + 100 * (i + 1),
}));

describe('the pages that fit a context', () => {
  it('keeps the default room, 1,024 at most a quarter of the context, or the setting', () => {
    expect(conversationRoom(512, null)).toBe(128);
    expect(conversationRoom(8192, null)).toBe(1024);
    expect(conversationRoom(8192, 300)).toBe(300);
    expect(conversationRoom(512, 300)).toBe(128);
  });

  it('are the first pages whose tokens end within the context less the room', () => {
    // 512 - 128 = 384: pages 1 to 3 end at 130, 230, 330; page 4 ends at 430.
    expect(fittingPages(pages, 512, null)).toEqual([1, 3]);
    // 512 - 50 = 462: page 4 fits too.
    expect(fittingPages(pages, 512, 50)).toEqual([1, 4]);
    expect(fittingPages(pages, 100, null)).toBeNull();
    expect(
      fittingPages(
        [
          { ...pages[2], page: 3 },
          { ...pages[3], page: 4 },
        ],
        512,
        null,
      ),
    ).toEqual([3, 3]);
  });

  it('follows the app core’s rule', () => {
    expect(DEFAULT_CONVERSATION_ROOM).toBe(CORE_DEFAULT_ROOM);
    for (const ctx of [64, 512, 4096, 8192, 32768])
      for (const setting of [null, 16, 300, 2048]) {
        const room = conversationRoom(ctx, setting);
        expect(room).toBe(coreRoom(ctx, setting));
        const fit = pagesThatFit(pages, ctx - room);
        expect(fittingPages(pages, ctx, setting)).toEqual(fit ? [1, fit] : null);
      }
  });
});
