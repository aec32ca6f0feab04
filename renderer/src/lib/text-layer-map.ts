// From the app's page text to pdf.js's text layer. The app's text of a PDF page (electron/documents/pdf.ts,
// pdf-layout.ts) is made of the page's text items: each item's string, cleaned line by line (cleanLine:
// control characters dropped, ligatures spelled out, whitespace runs collapsed, NFC), put in reading order,
// joined by spaces, line breaks and blank lines; a wrapped line's final hyphen may be dropped, soft hyphens
// always are, and a run drawn twice on itself (fake bold) is kept once. The text layer draws one span per
// item, in the items' order. So each item's cleaned string is a piece of the page text, and the pieces
// follow the items' order except where reading order differs from drawing order (columns, a header drawn
// last). mapItemsToText finds each item's piece: the next occurrence after the previous item's piece when
// only whitespace lies between (the usual case), else the first unclaimed occurrence anywhere on the page.
// Pure: the tests run it against pdf-layout.ts's own output.
import { cleanLine } from '../../../electron/shared/pdf-layout.ts';

export interface TextRange {
  start: number;
  end: number;
}

/** An item's string as it appears in the page text (soft hyphens dropped, as the page text drops them). */
export function itemText(str: string): string {
  return cleanLine(str).replace(/\u00ad/g, '');
}

/**
 * The character range of the page text that each text item became; null for an item with no text (a space
 * item) or one whose text the page text does not hold (a duplicate drawn over itself maps to its twin).
 */
export function mapItemsToText(pageText: string, items: readonly string[]): (TextRange | null)[] {
  const claimed: TextRange[] = [];
  const free = (s: number, e: number) => claimed.every((c) => e <= c.start || s >= c.end);
  const out: (TextRange | null)[] = [];
  let cursor = 0;
  let previous = null as { text: string; range: TextRange } | null;
  for (const str of items) {
    const text = itemText(str);
    if (!text) {
      out.push(null);
      continue;
    }
    // A wrapped line's last item may have lost its hyphen in the page text.
    const forms = /\p{L}[-\u2010]$/u.test(text) ? [text, text.slice(0, -1)] : [text];
    let found: TextRange | null = null;
    for (const form of forms) {
      const next = pageText.indexOf(form, cursor);
      if (next >= 0 && !/\S/.test(pageText.slice(cursor, next)) && free(next, next + form.length)) {
        found = { start: next, end: next + form.length };
        break;
      }
    }
    if (!found && previous && previous.text === text) found = previous.range; // overprinted: the same place
    for (let f = 0; !found && f < forms.length; f++) {
      for (let at = pageText.indexOf(forms[f]); at >= 0; at = pageText.indexOf(forms[f], at + 1))
        if (free(at, at + forms[f].length)) {
          found = { start: at, end: at + forms[f].length };
          break;
        }
    }
    out.push(found);
    if (found) {
      if (found !== previous?.range) claimed.push(found);
      cursor = found.end;
      previous = { text, range: found };
    }
  }
  return out;
}

/** Length of the overlap of two ranges. */
export function overlap(a: TextRange, b: TextRange): number {
  return Math.max(0, Math.min(a.end, b.end) - Math.max(a.start, b.start));
}

/**
 * Where `target` (a range of the page text) lies inside an item's own string, as [from, to) offsets, when
 * the item's characters are the page text's one for one (no clean-up changed them: the usual case); null
 * when it does not meet the item or the offsets would not be exact (then the whole span is marked).
 */
export function offsetsInItem(range: TextRange, str: string, target: TextRange): [number, number] | null {
  if (overlap(range, target) === 0) return null;
  const text = itemText(str);
  if (!str.startsWith(text) || range.end - range.start > text.length) return null;
  return [Math.max(target.start, range.start) - range.start, Math.min(target.end, range.end) - range.start];
}
