// The compressed prefix of a document: the system prompt and the document's pages rendered as the system
// message of the model's chat format, tokenized, with every token mapped back to the page and characters
// it came from (so the retention map and the answers can point at pages).
import type { ChatStyle, DocumentPage } from '../api/contract.ts';
import {
  completionRenderer,
  Conversation,
  needsBos,
  plainRenderer,
  systemContent,
  templateRenderer,
  tokenizeOptions,
  type Renderer,
} from './chat-format.ts';
import { TokenStarts, type ModelInfo } from '../engine/protocol.ts';

/** Pages are joined with a blank line between them. */
export const PAGE_SEPARATOR = '\n\n';

export interface ChatFormat {
  renderer: Renderer;
  /** A chat template renders special tokens as text: they are parsed when tokenizing. */
  template: boolean;
  bos: { id: number; add: boolean };
}

export function chatFormat(info: ModelInfo, bosText: string, eosText: string): ChatFormat {
  const template = info.chatTemplate.trim() !== '';
  return {
    renderer: template ? templateRenderer(info.chatTemplate, { bos: bosText, eos: eosText }) : plainRenderer,
    template,
    bos: { id: info.tokenizer.bos, add: info.tokenizer.addBos },
  };
}

/** A document's text as its prefix holds it: its pages joined. */
export function documentText(pages: readonly { text: string }[]): string {
  return pages.map((p) => p.text).join(PAGE_SEPARATOR);
}

/** A conversation over a document: the rendered prefix holds the system prompt and the document (the same in
 * either style, so one compressed cache serves both); its turns are written in `style`. */
export function conversationFor(
  format: ChatFormat,
  systemPrompt: string,
  pages: readonly { text: string }[],
  style: ChatStyle = 'chat',
): { conversation: Conversation; documentStart: number } {
  return conversationOver(format, systemPrompt, documentText(pages), style);
}

/** A conversation over a text in the system message (a document, or a set's documents with their headers). */
export function conversationOver(
  format: ChatFormat,
  systemPrompt: string,
  document: string,
  style: ChatStyle = 'chat',
): { conversation: Conversation; documentStart: number } {
  const renderer = style === 'completion' ? completionRenderer(format.renderer) : format.renderer;
  const conversation = new Conversation(renderer, systemContent(document, systemPrompt));
  const documentStart = conversation.prefixText.indexOf(document);
  return { conversation, documentStart };
}

export interface Tokenized {
  tokens: Int32Array;
  pieceBytes: Int32Array;
}

/** Tokenizes rendered text the way the chat format wants it (chat-format.ts tokenizeOptions, needsBos), with piece lengths. */
export async function tokenizeFormatted(
  tokenize: TokenizeText,
  format: ChatFormat,
  text: string,
  first: boolean,
): Promise<Tokenized> {
  const place = { template: format.template, first, bos: format.bos };
  const t = await tokenize(text, tokenizeOptions(place));
  if (!needsBos(t.tokens, place)) return t;
  const tokens = new Int32Array(t.tokens.length + 1);
  const pieceBytes = new Int32Array(t.tokens.length + 1);
  tokens[0] = format.bos.id; // BOS covers no text
  tokens.set(t.tokens, 1);
  pieceBytes.set(t.pieceBytes, 1);
  return { tokens, pieceBytes };
}

/** A text tokenizer of the model (the engine's, with piece lengths). */
export type TokenizeText = (text: string, o: { addSpecial: boolean; parseSpecial: boolean }) => Promise<Tokenized>;

/** A document's prefix as the engine will hold it: the conversation it starts, its tokens, its page map. */
export interface DocumentPrefix {
  conversation: Conversation;
  tokenized: Tokenized;
  map: PrefixMap;
}

/**
 * The one way a document becomes the prefix that is compressed: the system prompt and the pages as the
 * system message of the chat format, tokenized as the format wants (BOS once), mapped back to pages. The
 * app's documents and `folio chat` both compress this.
 */
export async function documentPrefix(
  tokenize: TokenizeText,
  format: ChatFormat,
  systemPrompt: string,
  pages: readonly { page: number; text: string }[],
): Promise<DocumentPrefix> {
  const { conversation, documentStart } = conversationFor(format, systemPrompt, pages);
  const tokenized = await tokenizeFormatted(tokenize, format, conversation.prefixText, true);
  return { conversation, tokenized, map: await mapPrefix(conversation.prefixText, tokenized, documentStart, pages) };
}

export interface PrefixMap {
  /** Per token: [page, charStart, charEnd] (page 0: not document text), 3 ints a token. */
  charMap: Int32Array;
  /** Pages with the token range each became. */
  pages: DocumentPage[];
}

/**
 * Maps the prefix's tokens to pages. `documentStart` is where the document's text begins in the rendered
 * prefix; the pages follow each other there, joined by PAGE_SEPARATOR.
 */
export function mapPrefix(
  rendered: string,
  t: Tokenized,
  documentStart: number,
  pages: readonly { page: number; text: string }[],
): Promise<PrefixMap> {
  // Page p covers [pageStart[p], pageStart[p] + text.length) of the rendered text.
  const pageStart: number[] = [];
  let at = documentStart;
  for (const p of pages) {
    pageStart.push(at);
    at += p.text.length + PAGE_SEPARATOR.length;
  }
  return mapPages(rendered, t, documentStart < 0 ? null : pageStart, pages);
}

/**
 * How long the map runs before it lets the event loop turn (a long document's map takes a few turns). A
 * time, not a count of tokens: a count sized on a fast machine held the loop ~200 ms on a loaded one.
 */
const MAP_SLICE_MS = 10;

/**
 * Maps tokens of `rendered` to pages that start at the given offsets of it, in order (null: no document text).
 * mapPrefix's rule for a prefix; also for text paged otherwise (the citation suite's haystacks).
 */
export async function mapPages(
  rendered: string,
  t: Tokenized,
  pageStart: readonly number[] | null,
  pages: readonly { page: number; text: string }[],
): Promise<PrefixMap> {
  const n = t.tokens.length;
  const starts = new TokenStarts(rendered, t.pieceBytes);
  const charMap = new Int32Array(n * 3);
  const out: DocumentPage[] = pages.map((p) => ({ page: p.page, text: p.text, tokenStart: -1, tokenEnd: -1 }));
  let k = 0; // pages are in order, and so are the tokens
  let next = n > 0 ? starts.next() : 0;
  let sliceStart = performance.now();
  for (let i = 0; i < n; i++) {
    if ((i & 4095) === 4095 && performance.now() - sliceStart > MAP_SLICE_MS) {
      await new Promise((ok) => setImmediate(ok));
      sliceStart = performance.now();
    }
    const s = next;
    next = i + 1 < n ? starts.next() : rendered.length;
    const e = next;
    if (!pageStart || e <= s) continue;
    while (k < pages.length && s >= pageStart[k] + pages[k].text.length) k++;
    if (k >= pages.length || e <= pageStart[k]) continue; // template text, a separator, or past the document
    const page = out[k];
    charMap[i * 3] = page.page;
    charMap[i * 3 + 1] = Math.max(0, s - pageStart[k]);
    charMap[i * 3 + 2] = Math.min(page.text.length, e - pageStart[k]);
    if (page.tokenStart < 0) page.tokenStart = i;
    page.tokenEnd = i + 1;
  }
  for (const p of out) if (p.tokenStart < 0) p.tokenStart = p.tokenEnd = 0;
  return { charMap, pages: out };
}
