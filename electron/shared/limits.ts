// The limits of document import, in one place. Each is far above what a real document needs and far below
// what would hurt the process; each has a clear error where it is enforced. No imports: the web host and the
// services import these too.

/**
 * Largest file imported, by path or uploaded (the web host streams uploads to disk with the same cap).
 * 256 MiB holds a 10,000-page scanned-and-OCRed PDF; a file this big is held once in memory while it is read.
 */
export const MAX_DOCUMENT_BYTES = 256 * 1024 * 1024;

/**
 * Largest part of a .docx (word/document.xml, styles, footnotes...) once inflated, counted as it is inflated.
 * A 1,000-page book is about 20-30 MiB of WordprocessingML; 64 MiB is twice the biggest real one we know of,
 * while 200 MiB of XML (a 700 KB zip bomb) is refused after inflating 64 MiB, in well under a second.
 */
export const MAX_DOCX_PART_BYTES = 64 * 1024 * 1024;

/**
 * All the parts of a .docx inflated for one import, together. Images are never inflated (they are dropped),
 * so this counts only XML, which mammoth holds as strings and trees: 128 MiB keeps it inside the parser's heap.
 */
export const MAX_DOCX_INFLATED_BYTES = 128 * 1024 * 1024;

/** Most documents one chat reads together (the memory they take is checked apart, by the model and budget). */
export const MAX_CHAT_DOCUMENTS = 16;

/** Most pages of a document (PDF pages, or pages made by pages.ts's rule). */
export const MAX_PAGES = 10_000;

/**
 * Longest text of a document, in characters (UTF-16 code units): MAX_PAGES pages of about 3,000 characters.
 * That is some 8 M tokens, eight times the longest context of any model Folio runs, so a document past it
 * could never be read whole; compressing page ranges of a shorter one still works.
 */
export const MAX_TEXT_CHARS = 32 * 1024 * 1024;

/**
 * Old-generation heap of the parser thread, in MiB. The biggest legitimate inputs (a MAX_DOCX_PART_BYTES
 * document.xml as mammoth's tree and HTML, or MAX_TEXT_CHARS of text and its pages) need a few hundred MiB;
 * 1 GiB leaves room for them, and a file that needs more is hostile: its thread dies, the process lives.
 */
export const PARSER_HEAP_MB = 1024;

/** At most this many documents are parsed at once (each parser thread may take PARSER_HEAP_MB); others wait. */
export const MAX_PARSER_THREADS = 2;

/** A parse that reports no progress (a PDF page, a step of the other formats) for this long is stopped. */
export const PARSE_STALL_MS = 30_000;

/** The longest one parse may take in all: a MAX_PAGES PDF at ~50 ms a page, with room to spare. */
export const PARSE_TIME_LIMIT_MS = 15 * 60_000;

/** "12 MiB", for messages. */
export function mib(bytes: number): string {
  return `${Math.round(bytes / 2 ** 20)} MiB`;
}
