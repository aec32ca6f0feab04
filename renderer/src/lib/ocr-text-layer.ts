// A page read by OCR has no text layer of its own: its recognised words (documents.pageWords) are handed to
// pdf.js's TextLayer as the page's text content, one item a word, so that the scan gets transparent spans where
// its words are, and the retention map, the citations and the search hits land on them as on any PDF page
// (text-layer-map.ts maps the items to the page text, which was laid out from the same words).
import type { OcrWord } from '../../../electron/api/contract.ts';

/** The font name the items carry (TextLayer sizes each span to the item's width whatever the font). */
const OCR_FONT = 'folio-ocr';

/** The parts of pdf.js's TextContent that TextLayer reads. */
export interface OcrTextContent {
  items: {
    str: string;
    dir: 'ltr';
    width: number;
    height: number;
    transform: number[];
    fontName: string;
    hasEOL: boolean;
  }[];
  styles: Record<string, { fontFamily: string; ascent: number; descent: number; vertical: boolean }>;
  lang: null;
}

/**
 * The words as text content in the page's PDF space: `toPdf` maps a point of the page's display space at scale 1
 * (points, y down: where the words are) to PDF space (pdf.js's viewport.convertToPdfPoint), so a rotated or
 * offset page is drawn right. Each item's transform turns text space into PDF space: its x axis along the
 * baseline, one em (the word's size) long; its y axis up from the baseline.
 */
export function ocrTextContent(words: readonly OcrWord[], toPdf: (x: number, y: number) => number[]): OcrTextContent {
  const items = words.map((w) => {
    const [ex, ey] = toPdf(w.x, w.y);
    const [rx, ry] = toPdf(w.x + w.size, w.y);
    const [ux, uy] = toPdf(w.x, w.y - w.size);
    return {
      str: w.text,
      dir: 'ltr' as const,
      width: w.width,
      height: w.size,
      transform: [rx - ex, ry - ey, ux - ex, uy - ey, ex, ey],
      fontName: OCR_FONT,
      hasEOL: false,
    };
  });
  return {
    items,
    styles: { [OCR_FONT]: { fontFamily: 'sans-serif', ascent: 0.8, descent: -0.2, vertical: false } },
    lang: null,
  };
}
