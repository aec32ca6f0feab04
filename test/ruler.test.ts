// The RULER generator (electron/cli/ruler): deterministic by seed, every task's cases answerable from their
// haystack (checked here by reading the haystack back independently of the generator's own checks), sized
// to their length bucket in the model's tokens; and RULER's scoring on hand cases.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';

import { loadAddon, type Model } from '../electron/engine/binding.ts';
import { documentFiles } from '../electron/cli/predictions.ts';
import { generateCase, generateCases, modelTokenizer, type RulerCase } from '../electron/cli/ruler/generate.ts';
import { readCorpus, splitSentences } from '../electron/cli/ruler/haystack.ts';
import { Rng } from '../electron/cli/ruler/random.ts';
import { score, scoreAll, scoreExact } from '../electron/cli/ruler/score.ts';
import { RULER_TASKS } from '../electron/cli/ruler/tasks.ts';
import { missing, repoRoot, sharedModel } from './helpers/shared.ts';

const stories = sharedModel('stories260K.gguf');
const skip = missing(stories);
const corpus = readCorpus(documentFiles(join(repoRoot, 'test/docs')));
let model: Model;
const tok = () => modelTokenizer(model);

test.before(async () => {
  if (!skip) model = await loadAddon().loadModel(stories);
});
test.after(() => model?.dispose());

/** A case as plain data (typed arrays as arrays), for byte comparison. */
const plain = (cases: RulerCase[]) => JSON.stringify(cases, (_, v) => (v instanceof Int32Array ? Array.from(v) : v));

test('the PRNG is mulberry32', () => {
  // The widely used reference implementation, written out independently.
  function mulberry32(a: number) {
    return () => {
      a = (a + 0x6d2b79f5) | 0;
      let t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  for (const seed of [0, 1, 42, 0xdeadbeef]) {
    const ref = mulberry32(seed);
    const rng = new Rng(seed);
    for (let i = 0; i < 100; i++) assert.equal(rng.next(), ref());
  }
});

test('the same seed gives byte-identical cases; another seed other ones; a case does not depend on the others', {
  skip,
}, () => {
  const o = { tasks: [...RULER_TASKS], lengths: [512], samples: 2, seed: 7 };
  const a = generateCases(tok(), corpus, o);
  const b = generateCases(tok(), corpus, o);
  assert.equal(a.length, RULER_TASKS.length * 2);
  assert.equal(plain(a), plain(b));
  const c = generateCases(tok(), corpus, { ...o, seed: 8 });
  for (let i = 0; i < a.length; i++)
    assert.notEqual(a[i].haystack + a[i].questions[0].text, c[i].haystack + c[i].questions[0].text, a[i].id);
  const alone = generateCase(tok(), corpus, 'qa', 512, 1, 7);
  assert.equal(plain([alone]), plain([a.find((x) => x.id === 'qa-512-1')!]));
});

/** Whole-word occurrences, counted independently of the generator. */
function count(text: string, s: string): number {
  let n = 0;
  for (let at = text.indexOf(s); at >= 0; at = text.indexOf(s, at + 1)) {
    const before = text[at - 1] ?? ' ',
      after = text[at + s.length] ?? ' ';
    if (!/[\p{L}\p{N}]/u.test(before) && !/[\p{L}\p{N}]/u.test(after)) n++;
  }
  return n;
}

/** The words of a list ranked by count; the top `n` must beat every other. */
function topWords(words: string[], n: number): string[] {
  const counts = new Map<string, number>();
  for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
  const ranked = [...counts].sort((a, b) => b[1] - a[1]);
  assert.ok(ranked.length <= n || ranked[n - 1][1] > ranked[n][1], 'the most frequent words are strictly ahead');
  return ranked.slice(0, n).map(([w]) => w);
}

const sorted = (xs: string[]) => [...xs].sort();

/** What the haystack itself says the answers are. */
function answerable(c: RulerCase) {
  const h = c.haystack;
  for (const q of c.questions) {
    if (c.task.startsWith('niah')) {
      for (const v of q.answers) {
        assert.equal(count(h, v), 1, `${c.id}: value ${v} once`);
        const needle = new RegExp(`for (\\S+) is: ${v}\\.`).exec(h);
        assert.ok(needle && q.text.includes(needle[1]), `${c.id}: the question asks the key of ${v}`);
      }
      for (const key of q.text.match(/[a-z]+-[a-z]+/g)!)
        assert.equal(count(h, key), c.task === 'niah_multivalue' ? q.answers.length : 1, `${c.id}: key ${key}`);
    } else if (c.task === 'vt') {
      const value = /value (\d+)/.exec(q.text)![1];
      assert.equal(count(h, value), 1);
      const holding = new Set([value]);
      const assigned = [...h.matchAll(/VAR (\w+) = (\w+)\./g)];
      for (let i = 0; i < assigned.length; i++)
        for (const [, to, from] of assigned) if (holding.has(from)) holding.add(to);
      holding.delete(value);
      assert.deepEqual(sorted([...holding]), sorted(q.answers), `${c.id}: the chain`);
    } else if (c.task === 'cwe') {
      const words = h.split(/ ?\d+\. /).filter((w) => w !== '');
      assert.deepEqual(sorted(topWords(words, q.answers.length)), sorted(q.answers), c.id);
    } else if (c.task === 'fwe') {
      assert.deepEqual(sorted(topWords(h.split(' '), 3)), sorted(q.answers), c.id);
    } else {
      const anchor = /"(.*)" in the document\?$/.exec(q.text)![1];
      const [answer] = q.answers;
      assert.equal(count(h, anchor), 1, `${c.id}: "${anchor}" once`);
      assert.equal(count(h, answer), 1, `${c.id}: "${answer}" once`);
      const sentences = splitSentences(h);
      assert.equal(sentences[sentences.indexOf(anchor) + 1], answer, `${c.id}: the answer follows the anchor`);
    }
  }
}

test('every task is answerable from its haystack and fits its length, over seeds and lengths', { skip }, () => {
  const m = model;
  for (const seed of [1, 2, 3])
    for (const c of generateCases(tok(), corpus, { tasks: [...RULER_TASKS], lengths: [512, 1024], samples: 2, seed })) {
      answerable(c);
      // The tokens are the model's, of the prompt's text; the case fills its bucket without passing it.
      const again = m.tokenize(c.instruction + '\n\n' + c.haystack, { addSpecial: true, parseSpecial: false });
      assert.deepEqual(Array.from(c.prefixTokens), Array.from(again), `${c.id}: the document's tokens`);
      for (const q of c.questions) {
        assert.ok(q.prompt.endsWith(` ${q.answerPrefix} `), 'a plain prompt ends with the answer prefix');
        const used = c.prefixTokens.length + q.tokens.length + q.maxTokens;
        assert.ok(used <= c.length, `${c.id}: ${used} tokens in a ${c.length} bucket`);
        assert.ok(used > 0.6 * c.length, `${c.id}: ${used} tokens fill a ${c.length} bucket`);
      }
    }
});

test('a length too short for a task is refused, naming it', { skip }, () => {
  assert.throws(
    () => generateCase(tok(), corpus, 'niah_multiquery', 128, 0, 0),
    /128 tokens is too short for niah_multiquery/,
  );
});

test('scoring: a single value must begin the answer; several score the fraction found', () => {
  assert.equal(scoreExact(' 1234567. And more', '1234567'), 1);
  assert.equal(scoreExact('"1234567"', '1234567'), 1);
  assert.equal(scoreExact('12345678', '1234567'), 1, 'what follows the value is not read');
  assert.equal(scoreExact('123456', '1234567'), 0);
  assert.equal(scoreExact('The number is 1234567', '1234567'), 0, 'echoing text before the value does not score');
  assert.equal(scoreExact('Then a big  gust of wind came.', 'then a big gust of wind came.'), 1, 'case and spaces');
  assert.equal(scoreAll('GGBZC, ghwqh and NEXVR', ['GGBZC', 'GHWQH', 'NEXVR', 'DDCLM']), 0.75);
  assert.equal(scoreAll('nothing', ['a1', 'b2']), 0);
  assert.equal(score('all', 'x 1 2', ['1', '2']), 1);
  assert.equal(score('exact', 'x 1 2', ['1']), 0);
});
