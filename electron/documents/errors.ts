// Errors of document import: a stable code the services and the UI can branch on, and a message for people
// that names the file and says what to do. They are ApiErrors, so the API layer carries them as they are.
import { ApiError, type FailureRemedy } from '../api/contract.ts';
import { MAX_PAGES, MAX_TEXT_CHARS } from '../shared/limits.ts';

export type ImportErrorCode =
  /** The file could not be read (missing, a folder, no permission). */
  | 'READ_FAILED'
  /** No content at all: an empty file, or a document with no text and nothing drawn. */
  | 'EMPTY'
  /** A format Folio does not read (an image, a spreadsheet, an old .doc, binary data). */
  | 'UNSUPPORTED'
  /** The extension says one format and the content another. */
  | 'MISMATCH'
  /** Text that is neither valid UTF-8/UTF-16 nor plainly a single-byte (Windows-1252) file. */
  | 'BAD_ENCODING'
  /** A PDF encrypted with a scheme pdf.js cannot open. */
  | 'ENCRYPTED'
  /** A password-protected PDF imported without its password. */
  | 'PASSWORD_REQUIRED'
  /** A password-protected PDF imported with a wrong password. */
  | 'PASSWORD_WRONG'
  /** The file claims a format but cannot be parsed (truncated, damaged). */
  | 'CORRUPT'
  /** A PDF whose pages carry no text, only images or drawings (a scan): OCR is not supported. */
  | 'NO_TEXT_LAYER'
  /** Bigger than the limits (bytes, pages, memory while parsing). */
  | 'TOO_LARGE'
  /** Many pages need OCR (longer than the caller's limit, ImportOptions.ocrAsk): the parse stopped before reading
   * them, for the choice of pages (details: contract OcrChoice less `measured`); not a failure of the file. */
  | 'OCR_CHOICE'
  /** The pages asked for (ImportOptions.ocrPages) are not among the document's. */
  | 'BAD_RANGE'
  /** Parsing made no progress for too long (hostile or pathological input). */
  | 'TIMEOUT'
  /** Cancelled through the AbortSignal. */
  | 'ABORTED';

/** Whether an import that failed with this code failed for a fault of the file itself: trying the same file
 * again cannot help (a password can, for the two that ask for one). */
const FILE_FAULT: Record<ImportErrorCode, boolean> = {
  READ_FAILED: true,
  EMPTY: true,
  UNSUPPORTED: true,
  MISMATCH: true,
  BAD_ENCODING: true,
  ENCRYPTED: true,
  PASSWORD_REQUIRED: false,
  PASSWORD_WRONG: false,
  CORRUPT: true,
  NO_TEXT_LAYER: true,
  OCR_CHOICE: false,
  BAD_RANGE: false,
  TOO_LARGE: true,
  TIMEOUT: true,
  ABORTED: false,
};

/**
 * The one rule of what can help a document that failed with `code` (an import's, an engine's, CANCELLED):
 * the password when one is needed, nothing for the file's own faults, else trying again (a crash, a cancel,
 * a missing model may pass). `stage`: what failed, reading the file (then trying again needs the file,
 * `held`) or compressing its pages.
 */
export function failureRemedy(code: string | null, stage: 'import' | 'compress', held: boolean): FailureRemedy | null {
  if (code === 'PASSWORD_REQUIRED' || code === 'PASSWORD_WRONG') return held ? 'password' : null;
  if (isFileFault(code)) return null;
  if (stage === 'compress') return 'compress';
  return held ? 'import' : null;
}

/** The file itself is at fault (damaged, empty, unsupported, too large...): reading it again cannot help. */
export function isFileFault(code: string | null): boolean {
  return code !== null && Object.hasOwn(FILE_FAULT, code) && FILE_FAULT[code as ImportErrorCode];
}

export class ImportError extends ApiError {
  declare readonly code: ImportErrorCode;
  constructor(code: ImportErrorCode, message: string, options?: { cause?: unknown; details?: unknown }) {
    super(code, message, options?.details);
    this.name = 'ImportError';
    if (options && 'cause' in options) (this as { cause?: unknown }).cause = options.cause;
  }
}

export function isImportError(e: unknown, code?: ImportErrorCode): e is ImportError {
  return e instanceof ImportError && (code === undefined || e.code === code);
}

/** Throws ABORTED when the signal has fired. */
export function throwIfAborted(signal: AbortSignal | undefined, fileName: string): void {
  if (signal?.aborted) throw aborted(signal, fileName);
}

export function aborted(signal: AbortSignal | undefined, fileName: string): ImportError {
  return new ImportError('ABORTED', `the import of ${fileName} was cancelled`, { cause: signal?.reason });
}

/** TOO_LARGE when a document's text is longer than MAX_TEXT_CHARS (checked before the text is paged). */
export function checkTextLength(fileName: string, chars: number): void {
  if (chars > MAX_TEXT_CHARS) {
    throw new ImportError(
      'TOO_LARGE',
      `${fileName} has more than ${MAX_TEXT_CHARS.toLocaleString('en')} characters of text; Folio reads documents up to that (about ${MAX_PAGES.toLocaleString('en')} pages): split it into smaller files`,
      { details: { limit: MAX_TEXT_CHARS } },
    );
  }
}

/** TOO_LARGE when a document has more than MAX_PAGES pages. */
export function checkPageCount(fileName: string, pages: number): void {
  if (pages > MAX_PAGES) {
    throw new ImportError(
      'TOO_LARGE',
      `${fileName} has ${pages.toLocaleString('en')} pages; Folio reads at most ${MAX_PAGES.toLocaleString('en')}: split it into smaller files`,
      { details: { pages, limit: MAX_PAGES } },
    );
  }
}

/** BAD_RANGE when the pages asked to read by OCR (a range, first to last) start past the document's last page. */
export function checkOcrRange(fileName: string, pages: number, range: 'all' | readonly [number, number]): void {
  if (range !== 'all' && range[0] > pages)
    throw new ImportError(
      'BAD_RANGE',
      `${fileName} has ${pages === 1 ? 'one page' : `${pages} pages`}: pages ${range[0]}–${range[1]} are not among them; choose pages from 1 to ${pages}`,
      { details: { pages } },
    );
}
