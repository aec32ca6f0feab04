// Citations from the model's own attention (docs/citations.md): while an answer is generated the engine adds up
// the attention its tokens pay every position the cache held before it (GenerateOptions.collectAttention); here
// that mass is folded onto the sentences and pages of the document read, the way the retention map is
// (token-map.ts passages, the prefix's character map). Plain functions with no imports of Node.
import type { CitedPage, DocumentPage } from '../api/contract.ts';
import { passages } from '../documents/token-map.ts';
import { citedChips } from '../shared/citation-chips.ts';

/** Pages a message cites at most, and sentences per page. */
export const MAX_CITED_PAGES = 5;
export const MAX_CITED_SENTENCES = 3;
/** A sentence is highlighted when it holds at least this much of its page's best sentence's share. */
const SENTENCE_MIN_OF_BEST = 0.25;

/**
 * The layers whose attention counts (docs/citations.md): the middle half. The first layers attend
 * by position (the tokens just before, the start); the last ones mostly to the question and the most recent
 * text; the retrieval of a fact, where the answer's queries find the sentence that holds it, happens in between.
 * Measured on needle-llama with `folio eval --suite cite` (docs/quality.md, "Citations"): of the rules that do not
 * know the model, this one puts the needle's sentence first most often.
 */
export function citationLayers(nLayer: number): number[] {
  const first = Math.floor(nLayer / 4),
    end = Math.max(first + 1, Math.floor((3 * nLayer) / 4));
  return Array.from({ length: Math.min(end, nLayer) - first }, (_, i) => first + i);
}

/**
 * The first positions of the cache draw attention whatever they hold (attention sinks, as StreamingLLM keeps
 * them): the answer's attention to them says nothing about the document, so it does not count.
 */
export const ATTENTION_SINKS = 4;

/** A document's read as the citations need it: its pages with their token ranges, and the per-token map. */
export interface CitationMap {
  pages: readonly DocumentPage[];
  /** Per prefix token: [page, charStart, charEnd] (page 0: not document text), 3 ints a token. */
  charMap: ArrayLike<number>;
}

/** Per-sentence attention mass, before it is normalised and cut: every sentence of every page read. */
export interface SentenceMass {
  /** In a set of documents, the document the sentence is of. */
  documentId?: string;
  page: number;
  start: number;
  end: number;
  mass: number;
}

/**
 * The attention mass of each sentence of the pages read: the sum over the chosen layers of what every token of
 * the sentence received (a token counts for the sentence holding its first character). `attention` is the
 * engine's [layer][position]; positions are the prefix's tokens (a document read without re-based positions).
 */
export function sentenceMass(
  attention: readonly ArrayLike<number>[],
  map: CitationMap,
  layers: readonly number[] = citationLayers(attention.length),
): SentenceMass[] {
  const out: SentenceMass[] = [];
  for (const p of map.pages) {
    const ps = passages(p.text, 'sentences');
    const sum = new Float64Array(ps.length);
    let k = 0;
    for (let t = Math.max(p.tokenStart, ATTENTION_SINKS); t < p.tokenEnd; t++) {
      if (map.charMap[t * 3] !== p.page) continue;
      const c = map.charMap[t * 3 + 1];
      while (k + 1 < ps.length && c >= ps[k].end) k++;
      let m = 0;
      for (const l of layers) m += t < attention[l].length ? attention[l][t] : 0;
      sum[k] += m;
    }
    ps.forEach((x, i) => out.push({ page: p.page, start: x.start, end: x.end, mass: sum[i] }));
  }
  return out;
}

/**
 * Pages ranked by their best sentence's mass (a long page gathers diffuse mass; what the answer looked for is a
 * sentence), at most MAX_CITED_PAGES, each with its share of the document's attention mass and its sentences
 * that took the most (at least a quarter of its best one's, at most MAX_CITED_SENTENCES); null when the answer
 * paid the document no attention at all.
 */
export function rankCitations(sentences: readonly SentenceMass[]): CitedPage[] | null {
  const total = sentences.reduce((s, x) => s + x.mass, 0);
  if (!(total > 0)) return null;
  // By page (of its document, in a set).
  const byPage = new Map<string, SentenceMass[]>();
  for (const s of sentences) {
    const key = `${s.documentId ?? ''}\u0000${s.page}`;
    if (s.mass > 0) byPage.set(key, [...(byPage.get(key) ?? []), s]);
  }
  const pages = [...byPage.values()].map((ss) => {
    const ranked = [...ss].sort((a, b) => b.mass - a.mass || a.start - b.start);
    const best = ranked[0].mass;
    const { page, documentId } = ss[0];
    return {
      ...(documentId === undefined ? {} : { documentId }),
      page,
      best,
      share: clampShare(ss.reduce((s, x) => s + x.mass, 0) / total),
      sentences: ranked
        .filter((x) => x.mass >= best * SENTENCE_MIN_OF_BEST)
        .slice(0, MAX_CITED_SENTENCES)
        .map((x) => ({ start: x.start, end: x.end, share: clampShare(x.mass / total) })),
    };
  });
  pages.sort((a, b) => b.best - a.best || b.share - a.share || a.page - b.page);
  return pages.slice(0, MAX_CITED_PAGES).map(({ best: _, ...p }) => p);
}

const clampShare = (x: number) => Math.min(1, Math.max(0, x));

/** An answer's citations from the engine's attention over the document's read. */
export function citationsFromAttention(
  attention: readonly ArrayLike<number>[] | null,
  map: CitationMap,
): CitedPage[] | null {
  if (!attention || attention.length === 0) return null;
  return rankCitations(sentenceMass(attention, map));
}

/** The page chips of an answer with citations: its best pages, those with at least a quarter of the first's share. */
export function pageRefsOf(citations: readonly CitedPage[]): number[] {
  return citedChips(citations).map((c) => c.page);
}
