// folio eval --suite cite: do an answer's citations point at the needle? (docs/citations.md, docs/quality.md
// "Citations"). Each needle-eval case is read as the app reads a document: the haystack paged as plain text,
// every token mapped to its page and characters (prefix.ts mapPages), compressed question-agnostically; then
// the question is appended and the answer greedy-decoded with the engine adding up its attention. The
// attention is folded onto sentences and pages exactly as the chats do (services/citations.ts), and so is
// the lexical measure the app falls back on (services/evidence.ts). A measure finds the needle when its first
// sentence (page) is the one holding the needle.
import type { CompressionMethod, Model } from '../engine/binding.ts';
import { PieceLengths, specialIdsOfModel } from '../engine/tokenize.ts';
import { textPages } from '../documents/text.ts';
import { passages } from '../documents/token-map.ts';
import { citationLayers, rankCitations, sentenceMass } from '../services/citations.ts';
import { evidencePages } from '../services/evidence.ts';
import { mapPages, type PrefixMap } from '../services/prefix.ts';
import { UsageError } from './args.ts';
import { evalCompressOptions, type NeedleRunOptions, type NiahCase, splitQuestion } from './eval-niah.ts';
import { fmtBudget, methodWidth } from './text-table.ts';

/** Characters per page of a haystack: small, so that the shortest (256 tokens) has several pages to choose from. */
export const CITE_PAGE_CHARS = 400;

/** The measures compared: attention over a set of layers, and the lexical fallback. */
export type CiteMeasure =
  | 'attention'
  | 'attention-all-layers'
  | 'attention-other-layers'
  | 'lexical'
  | 'lexical-restated';
export const CITE_MEASURES: readonly CiteMeasure[] = [
  'attention',
  'attention-all-layers',
  'attention-other-layers',
  'lexical',
  'lexical-restated',
];
const MEASURE_NOTE: Record<CiteMeasure, string> = {
  attention: "the app's: attention of the layers citationLayers() picks",
  'attention-all-layers': 'attention summed over every layer',
  'attention-other-layers': 'attention of the layers the app leaves out only',
  lexical: "the app's fallback (evidence.ts) on the answer's text",
  'lexical-restated': 'the same on the question\'s last sentence and the answer ("The <thing> is <digits>")',
};

export interface CiteTally {
  /** Cases where the measure's first sentence (page) holds the needle, of those counted. */
  sentence_first: number;
  page_first: number;
  /** Cases where the measure named nothing at all. */
  none: number;
  cases: number;
}

export interface CiteRow {
  method: CompressionMethod;
  budget: number;
  cases: number;
  correct: number;
  /** Per measure: over the cases answered right, and over all. */
  right: Record<CiteMeasure, CiteTally>;
  all: Record<CiteMeasure, CiteTally>;
  /** Attention of each layer alone, over the cases answered right (which layers carry the retrieval). */
  by_layer: CiteTally[];
  /** The mean share of the document's attention (the app's layers) the needle's sentence took, right answers. */
  needle_share_right: number;
}

export type CiteOptions = NeedleRunOptions;

/** A case read as a document: its pages over the prompt, the token map, and where the needle is. */
interface CiteCase {
  c: NiahCase;
  tokens: Int32Array;
  questionStart: number;
  map: PrefixMap;
  needle: { page: number; start: number; end: number };
  /** The question's last sentence ("The <thing> is"), for the restated lexical measure. */
  lead: string;
}

async function readCase(model: Model, pieces: PieceLengths, c: NiahCase): Promise<CiteCase> {
  const { tokens, questionStart } = splitQuestion(model, c);
  const at = c.prompt.lastIndexOf(' What is');
  const haystack = c.prompt.slice(0, at);
  const pages = textPages(haystack, CITE_PAGE_CHARS);
  // Each page is a piece of the haystack as it stands in the prompt (paging trims only whitespace).
  const starts: number[] = [];
  let from = 0;
  for (const p of pages) {
    const s = c.prompt.indexOf(p.text, from);
    if (s < 0) throw new UsageError(`case ${c.id}: page ${p.page} is not a piece of the prompt`);
    starts.push(s);
    from = s + p.text.length;
  }
  const map = await mapPages(c.prompt, { tokens, pieceBytes: pieces.of(tokens, { addSpecial: true }) }, starts, pages);
  // The queried needle: the sentence that holds the answer's digits.
  let needle: CiteCase['needle'] | null = null;
  for (const p of pages) {
    const i = p.text.indexOf(c.answer);
    if (i < 0) continue;
    const s = passages(p.text, 'sentences').find((x) => x.start <= i && i < x.end);
    if (s) needle = { page: p.page, ...s };
    break;
  }
  if (!needle) throw new UsageError(`case ${c.id}: the answer ${c.answer} is not in the haystack`);
  const question = c.prompt.slice(at);
  const lead = question.slice(question.lastIndexOf('?') + 1).trim();
  return { c, tokens, questionStart, map, needle, lead };
}

const emptyTally = (): CiteTally => ({ sentence_first: 0, page_first: 0, none: 0, cases: 0 });
const tallies = () => Object.fromEntries(CITE_MEASURES.map((m) => [m, emptyTally()])) as Record<CiteMeasure, CiteTally>;

/** A measure's first sentence and first page, or nulls when it names none. */
interface Pick {
  sentence: { page: number; start: number } | null;
  page: number | null;
}

function attentionPick(attention: Float32Array[], map: PrefixMap, layers: number[]): Pick {
  const sentences = sentenceMass(attention, map, layers);
  const best = [...sentences].sort((a, b) => b.mass - a.mass)[0];
  const pages = rankCitations(sentences);
  return {
    sentence: best && best.mass > 0 ? { page: best.page, start: best.start } : null,
    page: pages?.[0]?.page ?? null,
  };
}

/** The lexical measure over pages, and over sentences taken as pages of their own. */
function lexicalPick(text: string, map: PrefixMap): Pick {
  const sentences = map.pages.flatMap((p) =>
    passages(p.text, 'sentences').map((s) => ({ page: p.page, start: s.start, text: p.text.slice(s.start, s.end) })),
  );
  const bestSentence = evidencePages(
    text,
    sentences.map((s, i) => ({ page: i, text: s.text })),
    1,
  )[0];
  return {
    sentence: bestSentence === undefined ? null : sentences[bestSentence],
    page: evidencePages(text, map.pages, 1)[0] ?? null,
  };
}

export async function runCite(model: Model, cases: NiahCase[], o: CiteOptions): Promise<CiteRow[]> {
  const pieces = new PieceLengths(model, specialIdsOfModel(model));
  const read = await Promise.all(cases.map((c) => readCase(model, pieces, c)));
  const nLayer = model.info().nLayer;
  const appLayers = citationLayers(nLayer);
  const layersOf: Record<'attention' | 'attention-all-layers' | 'attention-other-layers', number[]> = {
    attention: appLayers,
    'attention-all-layers': Array.from({ length: nLayer }, (_, l) => l),
    'attention-other-layers': Array.from({ length: nLayer }, (_, l) => l).filter((l) => !appLayers.includes(l)),
  };
  const rows: CiteRow[] = [];
  for (const method of o.methods) {
    for (const budget of method === 'full' ? [1] : o.budgets) {
      const right = tallies(),
        all = tallies(),
        byLayer = Array.from({ length: nLayer }, emptyTally);
      let correct = 0,
        shareSum = 0;
      for (const k of read) {
        const { c } = k;
        const session = model.createSession(o.sessionOpts);
        await session.compress(
          k.tokens.subarray(0, k.questionStart),
          evalCompressOptions(method, budget, o, k.tokens.length - k.questionStart + c.answer_tokens.length),
        );
        await session.prefill(k.tokens.subarray(k.questionStart));
        const g = await session.generate({ n: c.answer_tokens.length, temperature: 0, collectAttention: true });
        session.dispose();
        const ok = g.tokens.length === c.answer_tokens.length && g.tokens.every((t, i) => t === c.answer_tokens[i]);
        if (ok) correct++;
        const picks: Record<CiteMeasure, Pick> = {
          attention: attentionPick(g.attention ?? [], k.map, layersOf.attention),
          'attention-all-layers': attentionPick(g.attention ?? [], k.map, layersOf['attention-all-layers']),
          'attention-other-layers': attentionPick(g.attention ?? [], k.map, layersOf['attention-other-layers']),
          lexical: lexicalPick(g.text, k.map),
          'lexical-restated': lexicalPick(`${k.lead} ${g.text}`, k.map),
        };
        for (const m of CITE_MEASURES) {
          const p = picks[m];
          for (const t of ok ? [right[m], all[m]] : [all[m]]) {
            t.cases++;
            if (!p.sentence && p.page === null) t.none++;
            if (p.sentence?.page === k.needle.page && p.sentence.start === k.needle.start) t.sentence_first++;
            if (p.page === k.needle.page) t.page_first++;
          }
        }
        if (ok && g.attention)
          for (let l = 0; l < nLayer; l++) {
            const p = attentionPick(g.attention, k.map, [l]);
            const t = byLayer[l];
            t.cases++;
            if (!p.sentence && p.page === null) t.none++;
            if (p.sentence?.page === k.needle.page && p.sentence.start === k.needle.start) t.sentence_first++;
            if (p.page === k.needle.page) t.page_first++;
          }
        if (ok && g.attention) {
          const ss = sentenceMass(g.attention, k.map, appLayers);
          const total = ss.reduce((s, x) => s + x.mass, 0);
          const needle = ss.find((x) => x.page === k.needle.page && x.start === k.needle.start);
          shareSum += total > 0 && needle ? needle.mass / total : 0;
        }
      }
      rows.push({
        method,
        budget,
        cases: read.length,
        correct,
        right,
        all,
        by_layer: byLayer,
        needle_share_right: correct ? shareSum / correct : 0,
      });
    }
  }
  return rows;
}

export function citeTable(rows: CiteRow[], layers: number[], nLayer: number): string {
  const mw = Math.max(methodWidth(rows.map((r) => r.method)), 'method'.length);
  const mm = Math.max(...CITE_MEASURES.map((m) => m.length));
  const pct = (a: number, n: number) => (n ? `${((100 * a) / n).toFixed(1)}%` : '–').padStart(9);
  const out = [
    "citations: is the needle's sentence (page) the first one cited?",
    `(attention layers the app counts: ${layers.join(', ')} of ${nLayer}; pages of ${CITE_PAGE_CHARS} characters)`,
    '',
    `${'method'.padEnd(mw)}  budget  ${'measure'.padEnd(mm)}   right answers: sentence      page    none   |  all answers: sentence      page`,
  ];
  for (const r of rows) {
    for (const m of CITE_MEASURES) {
      const a = r.right[m],
        b = r.all[m];
      out.push(
        `${r.method.padEnd(mw)}  ${(r.method === 'full' ? 'all' : fmtBudget(r.budget)).padStart(6)}  ${m.padEnd(mm)}  ` +
          `${String(a.cases).padStart(14)}: ${pct(a.sentence_first, a.cases)} ${pct(a.page_first, a.cases)} ${pct(a.none, a.cases)}   |  ` +
          `${String(b.cases).padStart(11)}: ${pct(b.sentence_first, b.cases)} ${pct(b.page_first, b.cases)}`,
      );
    }
    r.by_layer.forEach((t, l) =>
      out.push(
        `${' '.repeat(mw + 10)}${`attention of layer ${l} alone`.padEnd(mm)}  ` +
          `${String(t.cases).padStart(14)}: ${pct(t.sentence_first, t.cases)} ${pct(t.page_first, t.cases)} ${pct(t.none, t.cases)}`,
      ),
    );
    out.push(
      `${' '.repeat(mw + 10)}the needle's sentence took ${(100 * r.needle_share_right).toFixed(1)}% of the document's attention (right answers, mean)`,
    );
  }
  out.push('', 'measures:', ...CITE_MEASURES.map((m) => `  ${m.padEnd(mm)}  ${MEASURE_NOTE[m]}`));
  return out.join('\n') + '\n';
}
