// A harder needle set for needle-llama (docs/quality.md, "The harder needle set"), made here so that the quality
// figures do not rest on the development set alone: other stories (test/docs, not the dev set's haystacks),
// other wordings of the needle and its question, 5-digit keys, and documents up to the model's whole context.
// Deterministic from its seed; the cases are in the dev set's format (../shared/models/needle-eval/README.md),
// so `folio eval --suite niah --cases` reads them.
//
//   node --import tsx scripts/make-needle-set.ts --out needle-hard.jsonl [--seed 7] [--per-cell 10]
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { Rng } from '../electron/cli/ruler/random.ts';
import { loadAddon } from '../electron/engine/binding.ts';

const root = join(import.meta.dirname, '..');
const { values: v } = parseArgs({
  options: {
    out: { type: 'string' },
    seed: { type: 'string', default: '7' },
    'per-cell': { type: 'string', default: '10' },
    model: { type: 'string', default: join(root, '../shared/models/needle-llama.gguf') },
  },
});
if (!v.out) throw new Error('--out FILE is required');

// The RULER generator's seeded PRNG: the same set on every machine.
const rng = new Rng(Number(v.seed));
const random = () => rng.next();
const pick = <T>(xs: readonly T[]): T => rng.pick(xs);

const ADJECTIVES = ['red', 'secret', 'little', 'shiny', 'old', 'happy', 'blue', 'magic'];
const NOUNS = ['box', 'door', 'garden', 'boat', 'kite', 'treasure', 'house', 'star'];

/** The needle and its question, each wording its own: the question ends "... is " (the key follows). */
const WORDINGS: ((adj: string, noun: string, key: string) => { needle: string; question: string })[] = [
  (a, n, k) => ({
    needle: `The ${a} ${n} code is ${k}.`,
    question: `What is the ${a} ${n} code? The ${a} ${n} code is `,
  }),
  (a, n, k) => ({
    needle: `Mom said that the number of the ${a} ${n} is ${k}.`,
    question: `What is the number of the ${a} ${n}? The number of the ${a} ${n} is `,
  }),
  (_a, n, k) => ({
    needle: `Remember this: the key to the ${n} is ${k}.`,
    question: `What is the key to the ${n}? The key to the ${n} is `,
  }),
  (a, n, k) => ({
    needle: `On the ${a} sign, the ${n} number is ${k}.`,
    question: `What is the ${n} number? The ${n} number is `,
  }),
];

/** Five digits, the first not 0. */
const key = () => String(10000 + Math.floor(random() * 90000));

// Other stories than the dev set's haystacks: test/docs, sentence by sentence, in one long loop.
const docs = join(root, 'test/docs');
const sentences = readdirSync(docs)
  .filter((f) => f.endsWith('.txt'))
  .sort()
  .flatMap((f) =>
    readFileSync(join(docs, f), 'utf8')
      .replace(/\s+/g, ' ')
      .trim()
      .split(/(?<=[.!?]) (?=[A-Z"])/),
  );

const addon = loadAddon();
const model = await addon.loadModel(v.model);
const count = (text: string) => model.tokenize(text, { addSpecial: true, parseSpecial: false }).length;

const lines: string[] = [];
for (const length of [256, 512, 1024]) {
  for (const depth of [0.1, 0.3, 0.5, 0.7, 0.9]) {
    for (let i = 0; i < Number(v['per-cell']); i++) {
      const k = key();
      const { needle, question } = pick(WORDINGS)(pick(ADJECTIVES), pick(NOUNS), k);
      // The haystack: whole sentences from a random place, as many as leave room for the needle, the question
      // and the answer within `length` tokens.
      const room = length - count(`${needle} ${question}`) - k.length - 2;
      const hay: string[] = [];
      let at = Math.floor(random() * sentences.length);
      while (count(hay.concat(sentences[at % sentences.length]).join(' ')) <= room)
        hay.push(sentences[at++ % sentences.length]);
      // The needle at the sentence boundary nearest `depth` of the haystack's tokens.
      const target = depth * count(hay.join(' '));
      let best = 0;
      for (let j = 0; j <= hay.length; j++)
        if (
          Math.abs(count(hay.slice(0, j).join(' ')) - target) < Math.abs(count(hay.slice(0, best).join(' ')) - target)
        )
          best = j;
      const body = [...hay.slice(0, best), needle, ...hay.slice(best)].join(' ');
      const prompt = `${body} ${question}`;
      const promptTokens = model.tokenize(prompt, { addSpecial: true, parseSpecial: false });
      const whole = model.tokenize(prompt + k, { addSpecial: true, parseSpecial: false });
      // The answer's tokens: what the key adds after the prompt (digits are single tokens after its last space).
      if (!promptTokens.every((t, j) => t === whole[j]))
        throw new Error(`the key does not follow the prompt's tokens: ${prompt}`);
      const answerTokens = [...whole.subarray(promptTokens.length)];
      lines.push(
        JSON.stringify({
          id: `hd-${length}-${Math.round(depth * 100)}-${i}`,
          task: 'passkey',
          prompt,
          answer: k,
          answer_tokens: answerTokens,
          context_tokens: promptTokens.length,
          length,
          depth,
          needle_depth_exact: count(hay.slice(0, best).join(' ')) / count(hay.join(' ')),
        }),
      );
    }
  }
}
writeFileSync(v.out, `${lines.join('\n')}\n`);
console.log(`${lines.length} cases in ${v.out}`);
process.exit(0);
