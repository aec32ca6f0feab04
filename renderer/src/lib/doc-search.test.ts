import { describe, expect, it } from 'vitest';

import { searchPages, searchPattern, stepHit } from './doc-search.ts';

const pages = [
  { page: 1, text: 'The Kite flew.\nA kite is a toy.' },
  { page: 2, text: 'No kites here? Yes: kite (a.b) [x]' },
];

describe('search in a document', () => {
  it('finds every hit, case-insensitive, page by page in order', () => {
    expect(searchPages(pages, 'kite').map((h) => [h.page, h.start])).toEqual([
      [1, 4],
      [1, 17],
      [2, 3],
      [2, 20],
    ]);
  });

  it('lets a space match a line break, and takes the query literally', () => {
    expect(searchPages(pages, 'flew.  a')).toEqual([{ page: 1, start: 9, end: 16 }]);
    expect(searchPages(pages, '(a.b) [x]')).toEqual([{ page: 2, start: 25, end: 34 }]);
    expect(searchPages(pages, '   ')).toEqual([]);
    expect(searchPattern('')).toBeNull();
    expect(searchPages(pages, 'kite', 2)).toHaveLength(2);
  });

  it('steps through the hits, wrapping around', () => {
    expect(stepHit(3, -1, 1)).toBe(0);
    expect(stepHit(3, -1, -1)).toBe(2);
    expect(stepHit(3, 2, 1)).toBe(0);
    expect(stepHit(3, 0, -1)).toBe(2);
    expect(stepHit(0, -1, 1)).toBe(-1);
  });
});
