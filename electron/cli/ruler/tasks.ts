// The RULER tasks (Hsieh et al., "RULER: What's the Real Context Size of Your Long-Context Language Models?",
// arXiv 2404.06654), with the published templates. Each task draws everything random once (a Draft) and
// builds its haystack for any number of filler units, so the generator can size it to a length bucket in
// the model's tokens; each also says what would keep its questions from being answerable, by reading the
// haystack text it built (a value that appears twice, a tie among the most frequent words, ...).
import { NOISE_SENTENCES, cycle, plant, type Corpus, type Placed } from './haystack.ts';
import { Rng } from './random.ts';
import { countWord, type Scoring } from './score.ts';

export const RULER_TASKS = [
  'niah_single_1',
  'niah_single_2',
  'niah_single_3',
  'niah_multikey',
  'niah_multivalue',
  'niah_multiquery',
  'vt',
  'cwe',
  'fwe',
  'qa',
] as const;
export type RulerTask = (typeof RULER_TASKS)[number];

export function isRulerTask(name: string): name is RulerTask {
  return (RULER_TASKS as readonly string[]).includes(name);
}

/** A question about a haystack; the prompt ends with `answerPrefix`, which the answer continues. */
export interface Question {
  text: string;
  answerPrefix: string;
  answers: string[];
  scoring: Scoring;
}

/** A haystack of some size and its questions. */
export interface Filled {
  haystack: string;
  questions: Question[];
}

/** One draw of a task: every random choice made, the haystack's size left open. */
export interface Draft {
  /** RULER's instruction, before the haystack. */
  instruction: string;
  /** The haystack with `k` filler units (sentences, list entries, words) and its questions. */
  at(k: number): Filled;
  /** The fewest and the most filler units the task can take. */
  minFill: number;
  maxFill: number;
  /** Why the questions are not answerable from this haystack; empty when they are. */
  problems(f: Filled): string[];
}

export type TaskMaker = (rng: Rng, corpus: Corpus, length: number) => Draft;

// Keys of the needles: adjective-noun pairs (RULER draws them from an English word list).
const ADJECTIVES = (
  'amber bold brisk calm clever cosy crisp curly dusty eager fancy fuzzy gentle glossy grumpy hasty hollow humble ' +
  'icy jolly lucky mellow misty noble plucky quiet rusty shiny silky sleepy snowy spicy stormy sunny tidy velvet witty zesty'
).split(' ');
const NOUNS = (
  'anchor badger banjo beacon biscuit canoe compass cricket dolphin falcon fiddle glacier harbor helmet island jigsaw ' +
  'kettle lantern lemur magnet meadow nutmeg otter pebble pepper quartz raven saddle spindle teapot thistle tulip ' +
  'walnut whistle willow yacht zephyr'
).split(' ');

const needleKey = (rng: Rng) => `${rng.pick(ADJECTIVES)}-${rng.pick(NOUNS)}`;
/** "A, B, C and D". */
const listed = (xs: readonly string[]) => (xs.length === 1 ? xs[0] : `${xs.slice(0, -1).join(', ')} and ${xs.at(-1)}`);

/** The filler sentences of a haystack kind: RULER's noise, or the documents' text from a random place. */
function fillers(kind: 'noise' | 'essay', rng: Rng, corpus: Corpus): (k: number) => string[] {
  if (kind === 'noise') return (k) => cycle(NOISE_SENTENCES, 0, k);
  const start = rng.int(corpus.sentences.length);
  return (k) => cycle(corpus.sentences, start, k);
}

/** Problems of values that must each stand in the haystack exactly `times` times (once by default). */
function onceEach(haystack: string, what: string, values: readonly string[], times = 1): string[] {
  return values.flatMap((v) => {
    const n = countWord(haystack, v);
    return n === times ? [] : [`${what} ${v} is in the haystack ${n} times, not ${times}`];
  });
}

const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');

interface NiahShape {
  haystack: 'noise' | 'essay';
  value: 'number' | 'uuid';
  /** Needles with distinct keys. */
  keys: number;
  /** Values of each key. */
  values: number;
  /** Keys asked in one question (multi-query), or 0: one question per key (multi-key: each key asked in turn). */
  queryKeys: number;
}

/** The needle-in-a-haystack tasks: "One of the special magic numbers for KEY is: VALUE." at random depths. */
function niah(shape: NiahShape): TaskMaker {
  return (rng, corpus) => {
    const kind = shape.value === 'number' ? 'number' : 'uuid';
    const keys = rng.distinct(shape.keys, () => needleKey(rng));
    const draw = () => (shape.value === 'number' ? rng.digits(7) : rng.uuid());
    const values = rng.distinct(shape.keys * shape.values, draw);
    const valuesOf = (key: number) => values.slice(key * shape.values, (key + 1) * shape.values);
    const needles: Placed[] = keys.flatMap((key, i) =>
      valuesOf(i).map((v) => ({ depth: rng.next(), text: `One of the special magic ${kind}s for ${key} is: ${v}.` })),
    );
    const fill = fillers(shape.haystack, rng, corpus);
    const question = (asked: number[]): Question => {
      const who = listed(asked.map((i) => keys[i]));
      const answers = asked.flatMap(valuesOf);
      return answers.length === 1
        ? {
            text: `What is the special magic ${kind} for ${who} mentioned in the provided text?`,
            answerPrefix: `The special magic ${kind} for ${who} mentioned in the provided text is`,
            answers,
            scoring: 'exact',
          }
        : {
            text: `What are all the special magic ${kind}s for ${who} mentioned in the provided text?`,
            answerPrefix: `The special magic ${kind}s for ${who} mentioned in the provided text are`,
            answers,
            scoring: 'all',
          };
    };
    const asked = shape.queryKeys > 0 ? [keys.slice(0, shape.queryKeys).map((_, i) => i)] : keys.map((_, i) => [i]);
    return {
      instruction: `Some special magic ${kind}s are hidden within the following text. Make sure to memorize it. I will quiz you about the ${kind}s afterwards.`,
      minFill: 0,
      maxFill: Number.POSITIVE_INFINITY,
      at: (k) => ({ haystack: plant(fill(k), needles), questions: asked.map(question) }),
      problems: ({ haystack, questions }) => {
        // What the haystack says, read back from its text: every key's values.
        const said = new Map<string, string[]>();
        for (const m of haystack.matchAll(/special magic \w+ for (\S+) is: (\S+)\./g))
          said.set(m[1], [...(said.get(m[1]) ?? []), m[2]]);
        const derived = asked.map((a) => a.flatMap((i) => said.get(keys[i]) ?? []));
        return [
          ...onceEach(haystack, 'key', keys, shape.values),
          ...onceEach(haystack, 'value', values),
          ...questions.flatMap((q, i) =>
            sameSet(q.answers, derived[i]) ? [] : [`question ${i}: the haystack says ${derived[i].join(', ')}`],
          ),
        ];
      },
    };
  };
}

/** Variable tracking: a chain VAR A = 12345, VAR B = A, ... in the noise; which variables hold the value. */
const variableTracking: TaskMaker = (rng) => {
  const hops = 4;
  const names = rng.distinct(hops + 1, () => rng.letters(5, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'));
  const value = rng.digits(5);
  const depths = names.map(() => rng.next()).sort((a, b) => a - b);
  const needles = names.map((name, i) => ({
    depth: depths[i],
    text: `VAR ${name} = ${i === 0 ? value : names[i - 1]}.`,
  }));
  const question: Question = {
    text: `Find all variables that are assigned the value ${value} in the text above.`,
    answerPrefix: `According to the chain(s) of variables assignment in the text above, ${names.length} variables are assigned the value ${value}, they are:`,
    answers: names,
    scoring: 'all',
  };
  return {
    instruction: 'Memorize and track the chain(s) of variable assignment hidden in the following text.',
    minFill: 0,
    maxFill: Number.POSITIVE_INFINITY,
    at: (k) => ({ haystack: plant(cycle(NOISE_SENTENCES, 0, k), needles), questions: [question] }),
    problems: ({ haystack }) => {
      // Follow the assignments the haystack holds to the variables that end up with the value.
      const assigned = [...haystack.matchAll(/VAR ([A-Z]+) = ([A-Z]+|\d+)\./g)].map((m) => [m[1], m[2]]);
      const holding = new Set([value]);
      for (let grew = true; grew; ) {
        grew = false;
        for (const [to, from] of assigned)
          if (holding.has(from) && !holding.has(to)) {
            holding.add(to);
            grew = true;
          }
      }
      holding.delete(value);
      return [
        ...onceEach(haystack, 'value', [value]),
        ...onceEach(
          haystack,
          'assignment of',
          names.map((n) => `VAR ${n}`),
        ),
        ...(sameSet([...holding], names) ? [] : [`the chain gives ${[...holding].join(', ')}`]),
      ];
    },
  };
};

/** Words of a list, counted; the `n` most frequent when they are strictly more frequent than every other. */
function mostFrequent(words: readonly string[], n: number): string[] | string {
  const counts = new Map<string, number>();
  for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
  const ranked = [...counts].sort((a, b) => b[1] - a[1]);
  if (ranked.length < n) return `only ${ranked.length} different words`;
  if (ranked.length > n && ranked[n - 1][1] <= ranked[n][1])
    return `a tie: ${ranked[n - 1][0]} and ${ranked[n][0]} appear ${ranked[n][1]} times`;
  return ranked.slice(0, n).map(([w]) => w);
}

/** Checks that the answers are the `n` most frequent words of the haystack as read back by `read`. */
function frequencyProblems(q: Question, words: string[]): string[] {
  const top = mostFrequent(words, q.answers.length);
  if (typeof top === 'string') return [top];
  return sameSet(top, q.answers) ? [] : [`the most frequent words are ${top.join(', ')}`];
}

/**
 * Common words extraction: a numbered list of words, a few of them (the answer) many times, the rest
 * fewer. RULER's 10 words × 30 against 3 is for 8K tokens and more; shorter buckets take fewer, less
 * frequent words so that the list still has room for the others. The words are the documents'.
 */
const commonWords: TaskMaker = (rng, corpus, length) => {
  const nCommon = length < 1024 ? 5 : 10;
  const freqCommon = Math.max(3, Math.min(30, Math.floor(length / 256)));
  const freqOther = freqCommon >= 10 ? 3 : 1;
  const pool = rng.shuffle(corpus.words);
  const common = pool.slice(0, nCommon);
  const order = rng.seed();
  const question: Question = {
    text: `What are the ${nCommon} most common words in the above list?`,
    answerPrefix: `The top ${nCommon} words that appear most often in the list are:`,
    answers: common,
    scoring: 'all',
  };
  return {
    instruction:
      'Below is a numbered list of words. In these words, some appear more often than others. Memorize the ones that appear most often.',
    minFill: 0,
    maxFill: Math.max(0, pool.length - nCommon),
    at: (k) => {
      const others = pool.slice(nCommon, nCommon + k);
      const entries = [
        ...common.flatMap((w) => Array(freqCommon).fill(w)),
        ...others.flatMap((w) => Array(freqOther).fill(w)),
      ];
      const shuffled = new Rng(order).shuffle(entries);
      return { haystack: shuffled.map((w, i) => `${i + 1}. ${w}`).join(' '), questions: [question] };
    },
    problems: ({ haystack }) =>
      pool.length < nCommon + 1
        ? [`the documents have ${pool.length} different words; the task needs more than ${nCommon}`]
        : frequencyProblems(
            question,
            [...haystack.matchAll(/\d+\. (\S+)/g)].map((m) => m[1]),
          ),
  };
};

/**
 * Frequent words extraction: coded words (random letters) drawn from a Zeta distribution (alpha 2, as
 * RULER), so that a few are far more frequent than the rest; the three most frequent are the answer.
 */
const frequentWords: TaskMaker = (rng, _corpus, length) => {
  const vocabulary = rng.distinct(Math.max(20, Math.floor(length / 4)), () => rng.letters(3 + rng.int(4)));
  // P(rank r) ∝ r^-2 over the vocabulary, drawn by inverting the cumulative sum.
  const weights = vocabulary.map((_, r) => (r + 1) ** -2);
  const total = weights.reduce((a, b) => a + b, 0);
  const drawRank = () => {
    let u = rng.next() * total;
    for (let r = 0; r < weights.length; r++) if ((u -= weights[r]) < 0) return r;
    return weights.length - 1;
  };
  const text = Array.from({ length }, () => vocabulary[drawRank()]);
  const questionFor = (answers: string[]): Question => ({
    text: 'What are the three most frequently appeared words in the above coded text?',
    answerPrefix: 'According to the coded text above, the three most frequently appeared words are:',
    answers,
    scoring: 'all',
  });
  return {
    instruction:
      'Read the following coded text and track the frequency of each coded word. Find the three most frequently appeared coded words.',
    minFill: 3,
    maxFill: length,
    at: (k) => {
      const words = text.slice(0, k);
      const top = mostFrequent(words, 3);
      return { haystack: words.join(' '), questions: [questionFor(typeof top === 'string' ? [] : top)] };
    },
    problems: ({ haystack, questions }) =>
      questions[0].answers.length === 0
        ? ['no three words are more frequent than all the others']
        : frequencyProblems(questions[0], haystack.split(' ')),
  };
};

/**
 * Question answering over the document, checkable by exact match: which sentence comes right after a
 * quoted one. Both sentences must stand in the haystack once, next to each other; two such questions at
 * random depths.
 */
const spanRecall: TaskMaker = (rng, corpus) => {
  const fill = fillers('essay', rng, corpus);
  const depths = [rng.next(), rng.next()];
  return {
    instruction:
      'Answer the question based on the given document. Only give me the answer and do not output any other words.',
    minFill: 4,
    maxFill: Number.POSITIVE_INFINITY,
    at: (k) => {
      const sentences = fill(k);
      // Anchors at the depths, the second moved on when both fall on one sentence.
      const anchors = depths.map((d) => Math.min(k - 2, Math.floor(d * (k - 1))));
      if (anchors[1] === anchors[0]) anchors[1] = (anchors[0] + 1) % (k - 1);
      return {
        haystack: sentences.join(' '),
        questions: anchors.map((a) => ({
          text: `Which sentence comes right after "${sentences[a]}" in the document?`,
          answerPrefix: 'The sentence right after it is:',
          answers: [sentences[a + 1]],
          scoring: 'exact' as const,
        })),
      };
    },
    problems: ({ haystack, questions }) =>
      questions.flatMap((q) => {
        const anchor = /"(.*)" in the document\?$/.exec(q.text)![1];
        const answer = q.answers[0];
        return [
          ...onceEach(haystack, 'sentence', [anchor, answer]),
          ...(haystack.includes(`${anchor} ${answer}`) ? [] : [`"${answer}" does not follow "${anchor}"`]),
        ];
      }),
  };
};

export const TASKS: Record<RulerTask, TaskMaker> = {
  niah_single_1: niah({ haystack: 'noise', value: 'number', keys: 1, values: 1, queryKeys: 0 }),
  niah_single_2: niah({ haystack: 'essay', value: 'number', keys: 1, values: 1, queryKeys: 0 }),
  niah_single_3: niah({ haystack: 'essay', value: 'uuid', keys: 1, values: 1, queryKeys: 0 }),
  niah_multikey: niah({ haystack: 'essay', value: 'number', keys: 4, values: 1, queryKeys: 0 }),
  niah_multivalue: niah({ haystack: 'essay', value: 'number', keys: 1, values: 4, queryKeys: 0 }),
  niah_multiquery: niah({ haystack: 'essay', value: 'number', keys: 4, values: 1, queryKeys: 4 }),
  vt: variableTracking,
  cwe: commonWords,
  fwe: frequentWords,
  qa: spanRecall,
};
