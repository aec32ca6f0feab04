// folio eval --suite niah --set N: the needle suite over sets of documents (issue 41, "Quality"). Each case's
// haystack (its needle in it) is one document of N; the others are the haystacks of the next cases of the same
// length, their own needles taken out (needle-llama cannot tell needles apart by name). The question comes after
// the last document. Three ways to hold the set, at equal ratio budgets, question-agnostic:
//   full       the documents' text one after the other, nothing compressed;
//   together   that text read as one document and compressed (later documents attend to earlier ones);
//   assembled  each document read and compressed alone, saved, and the saved caches placed side by side
//              (Session.appendSaved: the first whole, each next one after its BOS), as a chat over stored
//              documents opens: no document attends to another;
//   one budget each read alone at twice the budget, placed, then cut to the entries assembled keeps, by one
//              budget over the set (Session.reselect with the reads' scores): the same memory, spent where the
//              scores say.
//
// With --pair the question needs two documents: the needle's first half is said in one document ("The first half
// of the happy pass key is 96.") and its second half in the next one ("The second half ... is 78."), and the
// answer is the whole key. That is the question independent encoding should fail and reading together should
// not: it asks a model that can put two facts together (needle-llama cannot: it copies one span).
import { UsageError } from './args.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { CompressionMethod, Model, Session } from '../engine/binding.ts';
import { compressOptionsFor, type SetBudgetChoice } from '../shared/kv/budget.ts';
import { budgetToMatch, placeApart, type PlacedSet } from './eval-set-assembly.ts';
import { type NeedleRunOptions, type NiahCase, splitQuestion } from './eval-niah.ts';
import { fmtBudget, methodWidth } from './text-table.ts';

export type SetMode = 'full' | 'together' | 'assembled' | 'one budget';

export interface NiahSetRow {
  mode: SetMode;
  method: CompressionMethod;
  budget: number;
  cases: number;
  accuracy: number;
  /** Accuracy by the needle document's place in the set (0: first). */
  by_place: Record<string, number>;
  /** The share of answers whose first half is right (with --pair: the fact of the first document alone). */
  half: number;
}

export interface NiahSetOptions extends NeedleRunOptions {
  /** Documents per set. */
  size: number;
  /** Two facts in two documents, the answer needing both. */
  pair?: boolean;
}

/** A haystack's needle sentence (the one holding the answer) split in two: "The first half of <what the
 * question asks for> is <ab>." in its place, and "The second half of ... is <cd>." to say elsewhere. */
function splitNeedle(c: NiahCase, hay: string): { first: string; second: string } {
  const q = c.prompt.lastIndexOf(' What is ');
  const asked = c.prompt.slice(q + ' What is '.length, c.prompt.indexOf('?', q));
  const sentences = hay.split(/(?<=[.!?]) /);
  const at = sentences.findIndex((x) => x.includes(c.answer));
  if (q < 0 || !asked || at < 0) throw new UsageError(`case ${c.id}: no needle sentence and question to split in two`);
  const half = Math.ceil(c.answer.length / 2);
  sentences[at] = `The first half of ${asked} is ${c.answer.slice(0, half)}.`;
  return { first: sentences.join(' '), second: `The second half of ${asked} is ${c.answer.slice(half)}.` };
}

/** `sentence` said in the middle of a document, between two of its sentences. */
function sayWithin(doc: string, sentence: string): string {
  const s = doc.split(/(?<=[.!?]) /);
  const at = Math.floor(s.length / 2);
  return [...s.slice(0, at), sentence, ...s.slice(at)].join(' ');
}

/** A case's haystack without its needle sentence: a document with nothing to find. */
function withoutNeedle(c: NiahCase): string {
  const hay = c.prompt.slice(0, c.prompt.lastIndexOf(' What is'));
  return hay
    .split(/(?<=[.!?]) /)
    .filter((s) => !s.includes(c.answer))
    .join(' ');
}

interface SetCase {
  c: NiahCase;
  /** Each document's tokens, BOS first (read alone). */
  docs: Int32Array[];
  /** The documents' text one after the other, BOS first. */
  together: Int32Array;
  question: Int32Array;
  place: number;
}

function sets(model: Model, cases: NiahCase[], size: number, pair: boolean): SetCase[] {
  const tok = (text: string) => model.tokenize(text, { addSpecial: true, parseSpecial: false });
  return cases.map((c, i) => {
    const same = cases.filter((x) => x.length === c.length && x.id !== c.id);
    const others = Array.from({ length: size - 1 }, (_, j) => withoutNeedle(same[(i + j) % same.length]));
    const place = i % size;
    const { tokens, questionStart } = splitQuestion(model, c);
    const hay = c.prompt.slice(0, c.prompt.lastIndexOf(' What is'));
    const texts = [...others.slice(0, place), hay, ...others.slice(place)];
    if (pair) {
      // The first half where the needle was, the second half in the next document (the first, after the last).
      const { first, second } = splitNeedle(c, hay);
      texts[place] = first;
      const next = (place + 1) % size;
      texts[next] = sayWithin(texts[next], second);
    }
    return {
      c,
      docs: texts.map(tok),
      together: tok(texts.join(' ')),
      question: tokens.subarray(questionStart),
      place,
    };
  });
}

/** Whether the session answers the case's whole answer, and its first half. */
async function answerOf(session: Session, s: SetCase): Promise<Answered> {
  await session.prefill(s.question);
  const want = s.c.answer_tokens;
  const g = await session.generate({ n: want.length, temperature: 0 });
  const right = (n: number) => g.tokens.length >= n && want.slice(0, n).every((t, i) => t === g.tokens[i]);
  return { ok: right(want.length), half: right(Math.ceil(want.length / 2)) };
}

interface Answered {
  ok: boolean;
  half: boolean;
}

export async function runNiahSets(model: Model, cases: NiahCase[], o: NiahSetOptions): Promise<NiahSetRow[]> {
  const all = sets(model, cases, o.size, !!o.pair);
  const dir = mkdtempSync(join(tmpdir(), 'folio-niah-set-'));
  const rows: NiahSetRow[] = [];
  const row = (mode: SetMode, method: CompressionMethod, budget: number, answers: Answered[]) => {
    const by = new Map<number, [number, number]>();
    all.forEach((s, i) => {
      const [a, n] = by.get(s.place) ?? [0, 0];
      by.set(s.place, [a + (answers[i].ok ? 1 : 0), n + 1]);
    });
    rows.push({
      mode,
      method,
      budget,
      cases: all.length,
      accuracy: answers.filter((a) => a.ok).length / all.length,
      by_place: Object.fromEntries([...by].sort(([a], [b]) => a - b).map(([k, [a, n]]) => [String(k), a / n])),
      half: answers.filter((a) => a.half).length / all.length,
    });
  };
  /** The set read as one document with `options`. */
  const together = async (s: SetCase, options: Parameters<Session['compress']>[1]) => {
    const one = model.createSession(o.sessionOpts);
    await one.compress(s.together, options);
    const answered = await answerOf(one, s);
    one.dispose();
    return answered;
  };
  /** Each document read alone with `options`, saved, and the saved caches placed side by side; with one budget
   * over them where asked. Whether it answers, and the entries the documents held before the budget. */
  const assembled = async (
    s: SetCase,
    options: Parameters<Session['compress']>[1],
    budget?: (placed: PlacedSet) => SetBudgetChoice,
  ) => {
    const placed = await placeApart(model, o.sessionOpts, dir, s.docs, options);
    if (budget) placed.session.reselect(placed.spans, budget(placed));
    const answered = await answerOf(placed.session, s);
    placed.session.dispose();
    return { answered, held: placed.held };
  };
  const each = async (f: (s: SetCase) => Promise<Answered>) => {
    const answers: Answered[] = [];
    for (const s of all) answers.push(await f(s));
    return answers;
  };
  try {
    // Nothing compressed: what reading the set together gives, and what encoding each document alone costs.
    row('full', 'full', 1, await each((s) => together(s, { method: 'full' })));
    row('assembled', 'full', 1, await each(async (s) => (await assembled(s, { method: 'full' })).answered));
    for (const method of o.methods.filter((m) => m !== 'full'))
      for (const budget of o.budgets) {
        const options = compressOptionsFor(method, budget, o);
        row('together', method, budget, await each((s) => together(s, options)));
        const held = new Map<SetCase, number>();
        row(
          'assembled',
          method,
          budget,
          await each(async (s) => {
            const r = await assembled(s, options);
            held.set(s, r.held);
            return r.answered;
          }),
        );
        if (budget > 0.5) continue;
        const twice = compressOptionsFor(method, 2 * budget, o);
        const share = (s: SetCase) => (placed: PlacedSet) =>
          budgetToMatch(placed, held.get(s)!, s.docs, o.window, method, o.alpha);
        row('one budget', method, budget, await each(async (s) => (await assembled(s, twice, share(s))).answered));
      }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

export function niahSetTable(rows: NiahSetRow[], size: number, pair = false): string {
  const places = Object.keys(rows[0]?.by_place ?? {});
  const mw = methodWidth(rows.map((r) => r.method));
  const out = [
    pair
      ? `two facts in a set of ${size} documents, question-agnostic: the key's first half in one document (first, second, ...), its second half in the next`
      : `needle in a set of ${size} documents, question-agnostic: the needle's document first, second, ... in the set`,
    '',
    `${'mode'.padEnd(11)}${'method'.padEnd(mw)}  budget   accuracy  first half  ` +
      places.map((p) => `doc ${Number(p) + 1}`.padStart(8)).join(''),
  ];
  for (const r of rows)
    out.push(
      `${r.mode.padEnd(11)}${r.method.padEnd(mw)}  ${(r.method === 'full' ? 'all' : fmtBudget(r.budget)).padStart(6)}   ` +
        `${r.accuracy.toFixed(3).padStart(8)}  ${r.half.toFixed(3).padStart(10)}  ` +
        places.map((p) => r.by_place[p].toFixed(2).padStart(8)).join(''),
    );
  return `${out.join('\n')}\n`;
}
