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

/** Whether a page's recognition is uncertain (a page where nothing was recognised has nothing to doubt). */
export const uncertain = (ocr: { confidence: number }) => ocr.confidence > 0 && ocr.confidence < LOW_OCR_CONFIDENCE;

/**
 * What the note says of the pages read by OCR: which, in what language, and which are uncertain (the import's
 * warnings and the document view's read note say the same). Empty when no page was.
 */
export function ocrNotes(pages: readonly { page: number; ocr?: { language: string; confidence: number } }[]): string[] {
  const read = pages.filter((p) => p.ocr);
  if (!read.length) return [];
  const languages = [...new Set(read.map((p) => languageName(p.ocr!.language)))].join('; ');
  const s = read.length > 1;
  const out = [
    `page${s ? 's' : ''} ${listPages(read.map((p) => p.page))} ${s ? 'were' : 'was'} read by OCR (${languages}): ` +
      'the text is recognised from the image and may hold mistakes',
  ];
  const unsure = read.filter((p) => uncertain(p.ocr!));
  if (unsure.length)
    out.push(
      `the recognition of page${unsure.length > 1 ? 's' : ''} ${listPages(unsure.map((p) => p.page))} is uncertain ` +
        `(mean confidence ${unsure.map((p) => `${Math.round(p.ocr!.confidence)}%`).join(', ')}): check what it says there against the page`,
    );
  return out;
}
