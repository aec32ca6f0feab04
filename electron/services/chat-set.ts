// A chat over a set of documents (docs/compression.md, "Many documents"): each document's saved compressed cache
// is placed after the previous one in one session, its keys rotated to their new positions (the engine's
// appendSaved), so the model attends to every kept entry of every document; nothing is read again. The text
// around them (the chat template's opening, the system prompt, a header before each document naming it, the
// template's closing) is read as it is, so the session holds exactly the prefix the conversation renders:
//
//   <opening + system prompt>  Document one of three: <title>\n\n  [document 1's kept entries]  \n\nDocument two of …
//
// Positions keep each document's spacing where the context allows it with room for the conversation; else
// each document's kept entries are packed onto as many positions as its fullest head keeps (its answers then
// cite by shared words: a packed entry's position no longer names its token).
//
// With one budget over the set, the assembled entries are then re-selected together by the scores their reads
// kept them by (the engine's reselect), so that a document the scorer finds less needed keeps less.
import { ApiError, type ChatStyle, type CitedPage, type DocumentPage, type SetShare } from '../api/contract.ts';
import type { SetBudgetChoice } from '../shared/kv/budget.ts';
import type { Conversation } from './chat-format.ts';
import { rankCitations, sentenceMass, type SentenceMass } from './citations.ts';
import { evidenceScores } from './evidence.ts';
import type { EngineManager, LoadedModel } from './engine-manager.ts';
import { conversationOver, documentText, tokenizeFormatted, type ChatFormat } from './prefix.ts';

/** A document of a set as its saved cache holds it. */
export interface SetDocument {
  id: string;
  title: string;
  /** Its saved cache, at the document's own positions. */
  kvPath: string;
  /** The pages the cache holds, each with the token range it became there. */
  pages: readonly DocumentPage[];
  /** Per token of its cache: [page, charStart, charEnd] (prefix.ts PrefixMap); null when unknown. */
  charMap: Int32Array | null;
}

/** What the user chose for positions (the settings' compression.positions). */
export type SetPositions = 'auto' | 'own' | 'packed';

/** Where a document's kept entries lie in the set's session: positions [start, end), from its own [from, to). */
export interface SetPart {
  documentId: string;
  start: number;
  end: number;
  from: number;
  to: number;
}

export interface AssembledSet {
  documents: readonly SetDocument[];
  sessionId: string;
  nPast: number;
  nCtx: number;
  /** The conversation over the set, its prefix the text the session holds. */
  conversation: Conversation;
  /** The documents' kept entries were packed (fewer positions; no attention citations). */
  packed: boolean;
  /** Assembled: where each document's entries lie. Empty when read together. */
  parts: SetPart[];
  /** Positions the documents themselves take (the rest: the template, the system prompt, the headers). */
  documentTokens: number;
  /** Assembled: each document's entries per layer and KV head, and the bytes of every entry of the prefix (the
   * documents', the headers', the template's) as the engine holds them. */
  shares?: SetShare[];
  keptBytes?: number;
  /** Read together: the one read's page map (its pages numbered in order, each header a page of its own),
   * each document page's owner, and its cache's kept and full bytes. */
  together?: {
    pages: readonly DocumentPage[];
    charMap: Int32Array;
    owner: ReadonlyMap<number, { documentId: string; page: number }>;
    kvBytesKept: number;
    kvBytesFull: number;
  };
}

const NUMBER_WORDS = [
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'eleven',
  'twelve',
  'thirteen',
  'fourteen',
  'fifteen',
  'sixteen',
];
/** A count in words (a set holds at most MAX_CHAT_DOCUMENTS): a header's digits would stand beside the
 * documents' own numbers, which a question may ask for (needle-llama copies whatever digits follow a space). */
const inWords = (n: number) => NUMBER_WORDS[n - 1] ?? String(n);

/** The line that introduces a document of a set, read with it so that the model sees where each begins. */
export function setHeader(index: number, count: number, title: string): string {
  return `Document ${inWords(index + 1)} of ${inWords(count)}: ${title}\n\n`;
}

/** About the tokens a header takes (its words and the title), for estimates before a set is assembled. */
export const SET_HEADER_TOKENS = 16;

/** Between one document of a set and the next header. */
const SET_SEPARATOR = '\n\n';
/** What the text after a document is tokenized behind (assembleSet). */
const ANCHOR = '\n';

/**
 * A set's documents as the pages of one read (read together): each header a page of its own, then the document's
 * pages, numbered in order, joined as any document's pages are (PAGE_SEPARATOR), so that the read's text is the
 * assembled set's; and each document page's owner.
 */
export function setPages(
  documents: readonly { id: string; title: string; pages: readonly { page: number; text: string }[] }[],
): { pages: { page: number; text: string }[]; owner: Map<number, { documentId: string; page: number }> } {
  const pages: { page: number; text: string }[] = [];
  const owner = new Map<number, { documentId: string; page: number }>();
  documents.forEach((d, i) => {
    pages.push({ page: pages.length + 1, text: setHeader(i, documents.length, d.title).trimEnd() });
    for (const p of d.pages) {
      pages.push({ page: pages.length + 1, text: p.text });
      owner.set(pages.length, { documentId: d.id, page: p.page });
    }
  });
  return { pages, owner };
}

/** A set's documents as one text (each after its header), with each document's own text's [start, end) in it. */
export function setText(documents: readonly { title: string; text: string }[]): {
  text: string;
  spans: [number, number][];
} {
  let text = '';
  const spans: [number, number][] = [];
  documents.forEach((d, i) => {
    if (i > 0) text += SET_SEPARATOR;
    text += setHeader(i, documents.length, d.title);
    spans.push([text.length, text.length + d.text.length]);
    text += d.text;
  });
  return { text, spans };
}

/** The token range a document's cache holds its pages in: from its first page's first token to its last's end. */
export function documentTokens(pages: readonly DocumentPage[]): [number, number] {
  const read = pages.filter((p) => p.tokenEnd > p.tokenStart);
  if (read.length === 0) throw new ApiError('DOCUMENT_NOT_READY', 'the document has no pages read into its cache');
  return [read[0].tokenStart, read[read.length - 1].tokenEnd];
}

export interface AssembleRequest {
  model: LoadedModel;
  format: ChatFormat;
  systemPrompt: string;
  style: ChatStyle;
  documents: readonly SetDocument[];
  /** The context of the set's session. */
  nCtx: number;
  /** Positions kept for the conversation: 'auto' packs the documents when their own spacing leaves less. */
  room: number;
  positions: SetPositions;
  /** One budget over the set (reselectSet); none: each document keeps what its read kept. */
  budget?: SetBudgetChoice;
  signal?: AbortSignal;
}

/** Builds the set's session from the documents' saved caches (none is read again). */
export async function assembleSet(engine: SetEngine, r: AssembleRequest): Promise<AssembledSet> {
  const docs = r.documents.map((d) => ({ ...d, text: documentText(d.pages), own: documentTokens(d.pages) }));
  const { text, spans } = setText(docs.map((d) => ({ title: d.title, text: d.text })));
  const { conversation, documentStart } = conversationOver(r.format, r.systemPrompt, text, r.style);
  const prefix = conversation.prefixText;
  // The text between the documents: before the first, each next header, and the template's closing.
  const cuts = spans.map(([a, b]) => [documentStart + a, documentStart + b]);
  const between = [
    prefix.slice(0, cuts[0][0]),
    ...cuts.slice(1).map(([a], i) => prefix.slice(cuts[i][1], a)),
    prefix.slice(cuts[cuts.length - 1][1]),
  ];
  const tokenize = (s: string, first: boolean) =>
    tokenizeFormatted(
      (t, o) => engine.call('tokenize', { modelId: r.model.engineId, text: t, ...o }, { signal: r.signal }),
      r.format,
      s,
      first,
    );
  // The text after a document goes on from it: a SentencePiece vocabulary would put its space in front of the
  // text tokenized alone (a "▁" the whole text has not, and one needle-llama's circuit copies after). Tokenized
  // after an anchor that never merges (a newline, a byte token there) and without the anchor's tokens; where the
  // anchor does merge (a byte-level BPE, which adds no space), as it is.
  const anchor = (await tokenize(ANCHOR, false)).tokens;
  const goOn = async (s: string) => {
    const t = (await tokenize(ANCHOR + s, false)).tokens;
    return anchor.every((id, i) => t[i] === id) ? { tokens: t.slice(anchor.length) } : tokenize(s, false);
  };
  const pieces = await Promise.all(between.map((s, i) => (i === 0 ? tokenize(s, true) : goOn(s))));
  const own = pieces.reduce((n, p) => n + p.tokens.length, 0) + docs.reduce((n, d) => n + d.own[1] - d.own[0], 0);
  const packed = r.positions === 'packed' || (r.positions === 'auto' && own + r.room > r.nCtx);
  const handle = await engine.createSession(r.model, { ...engine.sessionOptions(), nCtx: r.nCtx });
  const parts: SetPart[] = [];
  try {
    let nPast = 0;
    const prefill = async (tokens: Int32Array) => {
      if (tokens.length > 0)
        nPast = (await engine.call('prefill', { sessionId: handle.sessionId, tokens }, { signal: r.signal })).nPast;
    };
    for (const [i, d] of docs.entries()) {
      await prefill(pieces[i].tokens);
      const start = nPast;
      try {
        nPast = (
          await engine.call('appendSaved', {
            sessionId: handle.sessionId,
            path: d.kvPath,
            from: d.own[0],
            to: d.own[1],
            pack: packed,
          })
        ).nPast;
      } catch (e) {
        throw partError(e, d.title, i, docs.length, r.nCtx, packed);
      }
      parts.push({ documentId: d.id, start, end: nPast, from: d.own[0], to: d.own[1] });
    }
    await prefill(pieces[pieces.length - 1].tokens);
    const set: AssembledSet = {
      documents: r.documents,
      sessionId: handle.sessionId,
      nPast,
      nCtx: handle.nCtx,
      conversation,
      packed,
      parts,
      documentTokens: 0,
    };
    await reselectSet(engine, set, r.budget, r.signal);
    set.documentTokens = set.parts.reduce((n, p) => n + p.end - p.start, 0);
    return set;
  } catch (e) {
    await engine.disposeSession(handle.sessionId);
    throw e;
  }
}

type SetEngine = Pick<EngineManager, 'call' | 'createSession' | 'disposeSession' | 'sessionOptions'>;

/**
 * The set's shares (each document's entries per layer and head) and its bytes, after its one budget where it
 * has one: the documents' entries re-selected together by their kept scores (the engine's reselect), and packed
 * again where they were packed, so that the positions they no longer need go to the conversation.
 */
async function reselectSet(
  engine: SetEngine,
  set: AssembledSet,
  budget: SetBudgetChoice | undefined,
  signal?: AbortSignal,
): Promise<void> {
  const counted = () =>
    engine.call(
      'reselect',
      { sessionId: set.sessionId, spans: set.parts.map((p) => [p.start, p.end] as [number, number]), keep: 1 },
      { signal },
    );
  const before = await counted();
  let after = before;
  if (budget && budget.keep < 1) {
    after = await engine.call(
      'reselect',
      {
        sessionId: set.sessionId,
        spans: set.parts.map((p) => [p.start, p.end] as [number, number]),
        keep: budget.keep,
        alpha: budget.alpha,
        acrossLayers: budget.acrossLayers,
      },
      { signal },
    );
    if (set.packed) {
      // Last first, so that the parts before keep their positions while each is packed.
      for (let i = set.parts.length - 1; i >= 0; i--) {
        const p = set.parts[i];
        const nPast = (
          await engine.call('packSpan', { sessionId: set.sessionId, from: p.start, to: p.end }, { signal })
        ).nPast;
        const freed = set.nPast - nPast;
        set.nPast = nPast;
        p.end -= freed;
        for (const later of set.parts.slice(i + 1)) {
          later.start -= freed;
          later.end -= freed;
        }
      }
    }
  }
  const heads = before.heads;
  const sum = (a: number[]) => a.reduce((n, x) => n + x, 0);
  set.shares = set.parts.map((p, i) => ({
    documentId: p.documentId,
    entries: Array.from({ length: after.entries[i].length / heads }, (_, l) =>
      after.entries[i].slice(l * heads, (l + 1) * heads),
    ),
    before: sum(before.entries[i]),
  }));
  set.keptBytes = after.bytesUsed;
}

/** Why a document could not join the set, and what to do. */
function partError(e: unknown, title: string, index: number, count: number, nCtx: number, packed: boolean): unknown {
  const code = (e as { code?: string }).code;
  if (code === 'CONTEXT_FULL')
    return new ApiError(
      'SET_DOES_NOT_FIT',
      `the ${count} documents do not fit the model's context of ${nCtx.toLocaleString('en-US')} positions` +
        `${packed ? ', even packed' : ''} (it was full at “${title}”, document ${index + 1}): choose fewer documents, ` +
        'compress them to a smaller budget' +
        (packed ? '' : ', let their positions be packed (Settings → Document positions: auto or packed)') +
        ', or read them together (the chat header’s Read), which reads a set longer than the context in chunks',
      { document: index + 1, nCtx, packed },
    );
  if (code === 'NOT_SUPPORTED')
    return new ApiError(
      'DOCUMENT_NOT_ASSEMBLABLE',
      `“${title}” was saved with re-based positions, so its cache cannot be placed beside others: compress it ` +
        'again (a document longer than the context cannot join a set; a range of its pages can)',
      { document: index + 1 },
    );
  return e;
}

/**
 * Where an answer's evidence is in a set whose attention cannot be read (packed): the pages, of any document,
 * that share the most words with it (evidence.ts), each naming its document, marked basis 'words'; null when
 * none shares enough.
 */
export function setEvidence(answer: string, set: Pick<AssembledSet, 'documents' | 'together'>): CitedPage[] | null {
  const together = set.together;
  const pages = together
    ? together.pages.flatMap((p) => {
        const o = together.owner.get(p.page);
        return o ? [{ ...o, text: p.text }] : [];
      })
    : set.documents.flatMap((d) => d.pages.map((p) => ({ documentId: d.id, page: p.page, text: p.text })));
  // Numbered in order across the documents, as evidenceScores wants pages.
  const scored = evidenceScores(
    answer,
    pages.map((p, i) => ({ page: i + 1, text: p.text })),
  );
  const total = scored.reduce((n, s) => n + s.score, 0);
  if (!(total > 0)) return null;
  return scored.map((s) => ({
    documentId: pages[s.page - 1].documentId,
    page: pages[s.page - 1].page,
    basis: 'words' as const,
    share: s.score / total,
    sentences: [],
  }));
}

/**
 * An answer's citations across the set: its attention over the set's positions folded onto each document's
 * sentences (citations.ts, by the document's own positions), ranked together; each page names its document.
 * Null when the documents were packed or nothing was measured.
 */
export function setCitations(
  attention: Float32Array[] | null,
  set: Pick<AssembledSet, 'packed' | 'parts' | 'documents' | 'together'>,
): CitedPage[] | null {
  if (!attention || attention.length === 0 || set.packed) return null;
  if (set.together) {
    // One read: its pages are the documents' pages (and the headers, which no document owns) in order.
    const { pages, charMap, owner } = set.together;
    return rankCitations(
      sentenceMass(attention, { pages, charMap }).flatMap((m) => {
        const o = owner.get(m.page);
        return o ? [{ ...m, documentId: o.documentId, page: o.page }] : [];
      }),
    );
  }
  const masses: SentenceMass[] = [];
  for (const part of set.parts) {
    const d = set.documents.find((x) => x.id === part.documentId);
    if (!d?.charMap) continue;
    // The document's own positions [from, to) are the set's [start, end): attention read at an offset.
    const shift = part.start - part.from;
    const own = attention.map((layer) => {
      const a = new Float32Array(part.to);
      for (let t = part.from; t < part.to && t + shift < layer.length; t++) a[t] = layer[t + shift];
      return a;
    });
    for (const m of sentenceMass(own, { pages: d.pages, charMap: d.charMap })) masses.push({ ...m, documentId: d.id });
  }
  return rankCitations(masses);
}
