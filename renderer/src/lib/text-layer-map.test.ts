import { describe, expect, it } from 'vitest';

import { hyphenatedWords, layoutPage, renderParagraphs, type TextRun } from '../../../electron/shared/pdf-layout.ts';
import { itemText, mapItemsToText, offsetsInItem } from './text-layer-map.ts';

const SIZE = 10;
/** A run as pdf.js reports a text item: upright, half an em a character. */
const run = (str: string, x: number, y: number): TextRun => ({
  str,
  x,
  y,
  width: str.length * SIZE * 0.5,
  size: SIZE,
  dx: 1,
  dy: 0,
});

/** The page text exactly as the importer makes it (pdf.ts: layoutPage, hyphenatedWords, renderParagraphs). */
const pageTextOf = (runs: TextRun[]) => {
  const layout = layoutPage(runs);
  return renderParagraphs(layout, hyphenatedWords([layout]));
};

/** Checks that every item with text maps onto its own text (or that text less a line-end hyphen). */
function expectExact(text: string, items: readonly string[]) {
  const ranges = mapItemsToText(text, items);
  items.forEach((s, i) => {
    const want = itemText(s);
    if (!want) return expect(ranges[i]).toBeNull();
    const r = ranges[i];
    expect(r, `item ${i} '${s}'`).not.toBeNull();
    const got = text.slice(r!.start, r!.end);
    expect([want, want.replace(/-$/, '')]).toContain(got);
  });
  return ranges;
}

describe('page text to text-layer items', () => {
  it('maps a single column of runs, spaces between items and all', () => {
    const lines = ['Once upon a time, ', 'there was a girl', 'She had a red kite.'];
    const runs = lines.flatMap((l, k) => {
      const [a, b] = [l.slice(0, 7), l.slice(7)];
      return [run(a, 50, 100 + 14 * k), run(b, 50 + a.length * 5, 100 + 14 * k)];
    });
    const text = pageTextOf(runs);
    const ranges = expectExact(
      text,
      runs.map((r) => r.str),
    );
    // In order, never overlapping.
    for (let i = 1; i < ranges.length; i++) expect(ranges[i]!.start).toBeGreaterThanOrEqual(ranges[i - 1]!.end);
  });

  it('finds items whose reading order is not their drawing order (two columns drawn line by line across)', () => {
    const left = ['The left column starts', 'here and goes on for', 'a few lines of text', 'until it ends here.'];
    const right = ['The right column is', 'drawn in the same', 'stream, line by line', 'beside the left one.'];
    const runs: TextRun[] = [];
    for (let k = 0; k < 4; k++) runs.push(run(left[k], 50, 100 + 14 * k), run(right[k], 320, 100 + 14 * k));
    const text = pageTextOf(runs);
    expect(text.indexOf('until it ends here.')).toBeLessThan(text.indexOf('The right column is'));
    const ranges = expectExact(
      text,
      runs.map((r) => r.str),
    );
    expect(text.slice(ranges[1]!.start, ranges[1]!.end)).toBe('The right column is');
  });

  it('follows the clean-up: ligatures spelled out, whitespace collapsed, a wrapped line’s hyphen dropped', () => {
    // The first line reaches the column's edge, so the next one continues it and "exam-" + "ple" join.
    const runs = [
      run('An \ufb01ne   example of a long line that is exam-', 50, 100),
      run('ple text and more words in the column here', 50, 114),
      run('and a last line that ends the paragraph.', 50, 128),
    ];
    const text = pageTextOf(runs);
    expect(text).toContain('example text');
    expectExact(
      text,
      runs.map((r) => r.str),
    );
  });

  it('gives null to items with no text, and maps a run drawn twice on itself to the same place', () => {
    const text = 'Bold title\n\nBody text.';
    expect(mapItemsToText(text, ['Bold title', 'Bold title', ' ', 'Body text.'])).toEqual([
      { start: 0, end: 10 },
      { start: 0, end: 10 },
      null,
      { start: 12, end: 22 },
    ]);
    expect(mapItemsToText(text, ['missing'])).toEqual([null]);
  });
});

describe('a range inside an item', () => {
  it('gives exact offsets when the item is the page text one for one, else null', () => {
    const range = { start: 10, end: 20 };
    expect(offsetsInItem(range, 'boats go b', { start: 10, end: 14 })).toEqual([0, 4]);
    expect(offsetsInItem(range, 'boats go b', { start: 18, end: 25 })).toEqual([8, 10]);
    expect(offsetsInItem(range, 'boats go b', { start: 20, end: 25 })).toBeNull();
    // Clean-up changed the characters (a ligature spelled out, spaces collapsed): offsets would be wrong.
    expect(offsetsInItem({ start: 0, end: 4 }, '\ufb01ne', { start: 0, end: 2 })).toBeNull();
    expect(offsetsInItem({ start: 0, end: 3 }, 'a  b', { start: 0, end: 1 })).toBeNull();
    // A line-end hyphen dropped from the page text: the item's offsets still start at the same place.
    expect(offsetsInItem({ start: 5, end: 9 }, 'exam-', { start: 5, end: 9 })).toEqual([0, 4]);
  });
});
