// What the haystacks are made of: RULER's repeated noise sentences, or the sentences and words of a folder
// of documents (any .txt/.md text: test/docs by default), and where needles go in them.
import { readText } from '../args.ts';

/** RULER's noise haystack: these five sentences over and over. */
export const NOISE_SENTENCES = [
  'The grass is green.',
  'The sky is blue.',
  'The sun is yellow.',
  'Here we go.',
  'There and back again.',
];

/** The text the document haystacks are cut from. */
export interface Corpus {
  /** Every sentence of every document, in order (documents by name). */
  sentences: string[];
  /** The distinct lowercase words of the documents (letters only, three or more), in order of first use. */
  words: string[];
}

/** Splits text into sentences: at . ! or ? (and a closing quote) followed by white space. */
export function splitSentences(text: string): string[] {
  return text
    .replace(/\s+/g, ' ')
    .trim()
    .split(/(?<=[.!?]["”’']?) (?=\S)/)
    .filter((s) => s !== '');
}

export function readCorpus(files: readonly string[]): Corpus {
  const texts = files.map((f) => readText(f));
  const sentences = texts.flatMap(splitSentences);
  const words = [...new Set(texts.flatMap((t) => t.toLowerCase().match(/\b[a-z]{3,}\b/g) ?? []))];
  return { sentences, words };
}

/** `k` sentences of `source` from `start` on, starting over at the end when there are not enough. */
export function cycle(source: readonly string[], start: number, k: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < k; i++) out.push(source[(start + i) % source.length]);
  return out;
}

/** A needle and how deep it goes: 0 before the first filler sentence, 1 after the last. */
export interface Placed {
  depth: number;
  text: string;
}

/** The fillers with the needles put in at their depths (between sentences; needles at one place keep their order). */
export function plant(fillers: readonly string[], needles: readonly Placed[]): string {
  const at = needles.map((n, i) => ({ ...n, i, slot: Math.round(n.depth * fillers.length) }));
  at.sort((a, b) => a.slot - b.slot || a.i - b.i);
  const out: string[] = [];
  let next = 0;
  for (let s = 0; s <= fillers.length; s++) {
    while (next < at.length && at[next].slot === s) out.push(at[next++].text);
    if (s < fillers.length) out.push(fillers[s]);
  }
  return out.join(' ');
}
