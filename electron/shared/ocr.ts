// What the app and the document view share about OCR (electron/documents/ocr.ts reads the pages): when a page's
// recognition is uncertain, and the note that says which pages were recognised. No imports: the renderer
// imports it too.

/** Below this mean word confidence (Tesseract's 0–100) a page's recognition is marked as uncertain: in the read
 * note, on its thumbnail. */
export const LOW_OCR_CONFIDENCE = 60;

/** Languages' names, by Tesseract's code (its tessdata files' names); others are named by their code. */
const LANGUAGE_NAMES: Record<string, string> = {
  eng: 'English',
  fra: 'French',
  deu: 'German',
  spa: 'Spanish',
  ita: 'Italian',
  por: 'Portuguese',
  nld: 'Dutch',
  pol: 'Polish',
  swe: 'Swedish',
  rus: 'Russian',
  ukr: 'Ukrainian',
  tur: 'Turkish',
  ara: 'Arabic',
  heb: 'Hebrew',
  hin: 'Hindi',
  jpn: 'Japanese',
  kor: 'Korean',
  chi_sim: 'Chinese (simplified)',
  chi_tra: 'Chinese (traditional)',
};
/** A language's name, or several's ("eng+fra": "English, French"), as Tesseract joins them. */
export const languageName = (code: string) =>
  code
    .split('+')
    .map((c) => LANGUAGE_NAMES[c] ?? c)
    .join(', ');
/** What a language's code looks like (Tesseract's: "eng", "chi_sim", "deu_latf"). */
export const OCR_LANGUAGE_CODE = /^[a-z]{3}(_[a-z]{3,4})?$/;
/** The language shipped with the app. */
export const SHIPPED_OCR_LANGUAGE = 'eng';

/** Pages as people list them: "3", "1–4, 7", the first twelve runs and "…". */
export function listPages(pages: readonly number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < pages.length; ) {
    let j = i;
    while (j + 1 < pages.length && pages[j + 1] === pages[j] + 1) j++;
    parts.push(i === j ? `${pages[i]}` : `${pages[i]}–${pages[j]}`);
    i = j + 1;
  }
  return parts.length > 12 ? parts.slice(0, 12).join(', ') + ', …' : parts.join(', ');
}

/** Whether a page's recognition is uncertain (a page where nothing was recognised, or that was not read, has
 * nothing to doubt). */
export const uncertain = (ocr: { confidence: number; unread?: boolean }) =>
  !ocr.unread && ocr.confidence > 0 && ocr.confidence < LOW_OCR_CONFIDENCE;

/**
 * Before a long OCR starts the import stops for the user's choice (all the pages, a range of them, or cancel) when
 * the pages to recognise would take longer than this: a minute is 12 dense pages at the default 5 s a page, 30 of a
 * short letter's, so a scanned letter or a short paper just runs, a report or a book waits to be asked.
 */
export const OCR_ASK_OVER_SECONDS = 60;

/** Which of a scan's pages OCR reads: all of them, or those of a range (first, last; the text-layer pages of a mixed
 * PDF are read whatever the range). */
export type OcrPages = 'all' | readonly [number, number];

/** What an import that stopped before a long OCR knows (contract OcrChoice): the pages needing OCR, those of them
 * not recognised yet (a resume keeps the others), and the time a page takes here. */
export interface OcrPlan {
  pages: number;
  ocrPages: readonly number[];
  pending: readonly number[];
  secondsPerPage: number;
}

/** `all`, `7` or `3-40` (a command line's or a form's pages to read by OCR) as OcrPages; null when it is none. */
export function parseOcrPages(text: string): OcrPages | null {
  if (text.trim() === 'all') return 'all';
  const m = /^\s*(\d+)\s*(?:[-–]\s*(\d+))?\s*$/.exec(text);
  if (!m) return null;
  const a = Number(m[1]);
  const b = Number(m[2] ?? m[1]);
  return a >= 1 && a <= b ? [a, b] : null;
}

/** The pages of `pages` within `range` (all of them for 'all'). */
export const inRange = (pages: readonly number[], range: OcrPages) =>
  range === 'all' ? [...pages] : pages.filter((p) => p >= range[0] && p <= range[1]);

/** How long the OCR of `range` would take: its pages not recognised yet, each at the plan's seconds a page. */
export const ocrSeconds = (plan: OcrPlan, range: OcrPages = 'all') =>
  inRange(plan.pending, range).length * plan.secondsPerPage;

/** "about 40 s", "about 3 min", "about 1 h 20 min": an estimate, rounded as one. */
export function aboutDuration(seconds: number): string {
  if (seconds < 60) return `about ${Math.max(1, Math.round(seconds / 5) * 5 || 1)} s`;
  const min = Math.round(seconds / 60);
  return min < 60 ? `about ${min} min` : `about ${Math.floor(min / 60)} h ${min % 60} min`;
}

/** "3", "2–7": a range as people write it. */
export const rangeText = (range: readonly [number, number]) =>
  range[0] === range[1] ? `${range[0]}` : `${range[0]}–${range[1]}`;

/**
 * What the note says of the pages read by OCR: which, in what language, and which are uncertain (the import's
 * warnings and the document view's read note say the same). Empty when no page was.
 */
export function ocrNotes(
  pages: readonly { page: number; ocr?: { language: string; confidence: number; unread?: boolean } }[],
): string[] {
  const read = pages.filter((p) => p.ocr && !p.ocr.unread);
  const unread = pages.filter((p) => p.ocr?.unread).map((p) => p.page);
  const out: string[] = [];
  if (read.length) {
    const languages = [...new Set(read.map((p) => languageName(p.ocr!.language)))].join('; ');
    const s = read.length > 1;
    out.push(
      `page${s ? 's' : ''} ${listPages(read.map((p) => p.page))} ${s ? 'were' : 'was'} read by OCR (${languages}): ` +
        'the text is recognised from the image and may hold mistakes',
    );
  }
  if (unread.length) {
    const s = unread.length > 1;
    out.push(
      `page${s ? 's' : ''} ${listPages(unread)} ${s ? 'were' : 'was'} not read: ${s ? 'they have' : 'it has'} no text ` +
        'layer and lay outside the pages chosen for OCR at import, so answers know nothing of ' +
        `${s ? 'them' : 'it'} (import the file again to read ${s ? 'them' : 'it'})`,
    );
  }
  const unsure = read.filter((p) => uncertain(p.ocr!));
  if (unsure.length)
    out.push(
      `the recognition of page${unsure.length > 1 ? 's' : ''} ${listPages(unsure.map((p) => p.page))} is uncertain ` +
        `(mean confidence ${unsure.map((p) => `${Math.round(p.ocr!.confidence)}%`).join(', ')}): check what it says there against the page`,
    );
  return out;
}
