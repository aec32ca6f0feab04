// `folio eval --suite ruler` on stories260K (context 512) with the project's documents: a CI-sized run of
// every task. The model fails most RULER tasks; what is checked is the machinery: 'full' answers exactly
// as an uncompressed read computed here without compress() (prefill, prefill, greedy decode), the report
// has its shape, the modes run, the plot is written, and usage errors are plain.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadAddon } from '../electron/engine/binding.ts';
import { documentFiles } from '../electron/cli/predictions.ts';
import { generateCases, modelTokenizer } from '../electron/cli/ruler/generate.ts';
import { readCorpus } from '../electron/cli/ruler/haystack.ts';
import { runRuler } from '../electron/cli/ruler/run.ts';
import { score } from '../electron/cli/ruler/score.ts';
import { templateRenderer } from '../electron/services/chat-format.ts';
import type { RulerReport } from '../electron/cli/ruler/suite.ts';
import { RULER_TASKS } from '../electron/cli/ruler/tasks.ts';
import { missing, repoRoot, sharedModel } from './helpers/shared.ts';

const stories = sharedModel('stories260K.gguf');
const skip = missing(stories);
const dir = mkdtempSync(join(tmpdir(), 'folio-ruler-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

function folio(...args: string[]) {
  const r = spawnSync(process.execPath, [join(repoRoot, 'electron/cli/folio.mjs'), ...args], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const seed = 5;
const budgets = [0.3, 0.6];
// Two threads everywhere, so the uncompressed read below sums in the same order as the CLI's.
const base = ['eval', '--suite', 'ruler', '--model', stories, '--ctx', '512', '--threads', '2'];
const run = (...more: string[]) => {
  const r = folio(
    ...base,
    '--lengths',
    '512',
    '--seed',
    String(seed),
    '--samples',
    '2',
    '--budgets',
    budgets.join(','),
    '--json',
    ...more,
  );
  assert.equal(r.code, 0, r.err || r.out);
  return JSON.parse(r.out) as RulerReport;
};
let report: RulerReport;
const svgPath = join(dir, 'ruler.svg');

test('a CI-sized run of every task: the report has its shape', { skip }, () => {
  report = run('--methods', 'full,ada-snapkv', '--svg', svgPath);
  assert.deepEqual(report.settings.tasks, [...RULER_TASKS]);
  assert.equal(report.settings.mode, 'question-agnostic');
  assert.equal(report.settings.n_ctx, 512);
  assert.equal(report.model.chat_template, false);
  assert.equal(report.cases.length, RULER_TASKS.length * 2);
  const questions = report.cases.reduce((a, c) => a + c.question_tokens.length, 0);
  assert.ok(questions >= 20 && questions <= 40, `${questions} questions`);
  assert.equal(report.rows.length, RULER_TASKS.length * 2 * budgets.length);
  assert.equal(report.results.length, questions * 2 * budgets.length);
  for (const row of report.rows) {
    const cases = report.cases.filter((c) => c.task === row.task);
    assert.equal(
      row.questions,
      cases.reduce((a, c) => a + c.question_tokens.length, 0),
      `${row.task}: every question once`,
    );
    assert.ok(row.accuracy >= 0 && row.accuracy <= 1 && row.correct <= row.questions);
    assert.deepEqual(Object.keys(row.by_length), ['512']);
    assert.ok(row.kv_bytes_full > 0 && row.seconds > 0);
    if (row.method === 'full') assert.equal(row.kept_ratio, 1);
    else
      assert.ok(Math.abs(row.kept_ratio - row.budget) < 0.05, `${row.method} at ${row.budget} keeps ${row.kept_ratio}`);
  }
  assert.equal(report.average.length, 2 * budgets.length);
  for (const c of report.cases)
    assert.ok(c.document_tokens > 200 && c.document_tokens < 512, `${c.id}: ${c.document_tokens}`);
  const svg = readFileSync(svgPath, 'utf8');
  assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.match(svg, /<\/svg>\n$/);
  for (const task of RULER_TASKS) assert.ok(svg.includes(`>${task}</text>`), `a panel for ${task}`);
});

test("'full' answers as an uncompressed read does, question by question", { skip }, async () => {
  const model = await loadAddon().loadModel(stories);
  const tok = modelTokenizer(model);
  const corpus = readCorpus(documentFiles(join(repoRoot, 'test/docs')));
  const cases = generateCases(tok, corpus, { tasks: [...RULER_TASKS], lengths: [512], samples: 2, seed });
  const full = report.results.filter((r) => r.method === 'full' && r.budget === budgets[0]);
  let i = 0;
  const byTask = new Map<string, number[]>();
  for (const c of cases)
    for (const q of c.questions) {
      const session = model.createSession({ nCtx: 512, nThreads: 2, kvType: 'f16' });
      await session.prefill(c.prefixTokens);
      await session.prefill(q.tokens);
      const g = await session.generate({ n: q.maxTokens, temperature: 0, stopAtEog: true });
      session.dispose();
      const s = score(q.scoring, g.text, q.answers);
      byTask.set(c.task, [...(byTask.get(c.task) ?? []), s]);
      assert.equal(full[i].case, c.id);
      assert.equal(full[i].output, g.text, `${c.id} question ${i}`);
      assert.equal(full[i].score, s);
      i++;
    }
  assert.equal(i, full.length);
  for (const row of report.rows.filter((r) => r.method === 'full')) {
    const s = byTask.get(row.task)!;
    assert.equal(row.accuracy, s.reduce((a, b) => a + b, 0) / s.length, row.task);
  }
  model.dispose();
});

test('multi-question: one compression per document, the questions as turns; question-aware runs', { skip }, () => {
  // Two qa questions per document; a 320-token bucket leaves the second turn room in the 512 context.
  const qa = ['--methods', 'full', '--tasks', 'qa', '--lengths', '320'];
  const multi = run(...qa, '--multi-question');
  const agnostic = run(...qa);
  assert.equal(multi.settings.mode, 'multi-question');
  assert.equal(multi.results.length, 4 * budgets.length);
  const turns = multi.results.filter((r) => r.budget === budgets[0]);
  const alone = agnostic.results.filter((r) => r.budget === budgets[0]);
  // The first turn is the question-agnostic prompt: the same answer. The second follows the first answer.
  for (const r of turns.filter((t) => t.question === 0))
    assert.equal(r.output, alone.find((a) => a.case === r.case && a.question === 0)!.output);
  assert.equal(multi.rows[0].kv_bytes_full, agnostic.rows[0].kv_bytes_full, 'one compression per document');
  // A conversation past the context is refused, saying so.
  const r = folio(...base, '--lengths', '512', '--tasks', 'niah_multikey', '--samples', '1', '--multi-question');
  assert.equal(r.code, 1);
  assert.match(r.err, /niah_multikey-512-0: the conversation needs more than the 512 tokens of the context/);
  const aware = run('--methods', 'full', '--tasks', 'niah_single_2', '--question-aware');
  assert.equal(aware.settings.mode, 'question-aware');
  assert.equal(aware.rows[0].questions, 2);
});

test('usage errors: unknown task, bad lengths, a length past the context, two modes', { skip }, () => {
  const cases: [string[], RegExp][] = [
    [['--tasks', 'niah_single_1,nope'], /unknown task 'nope': use niah_single_1, /],
    [['--lengths', '512,abc'], /--lengths: 'abc' is not a length/],
    [['--lengths', '1024'], /1024 is longer than the context \(512 tokens\)/],
    [['--lengths', '128', '--tasks', 'vt'], /128 tokens is too short for vt/],
    [['--question-aware', '--multi-question'], /do not go together/],
    [['--samples', '0'], /--samples must be an integer >= 1/],
  ];
  for (const [args, message] of cases) {
    const r = folio(...base, ...args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.err}`);
    assert.match(r.err, message);
  }
});

test('a chat template: the document is the system message, the answer prefix follows the assistant header, turns continue', {
  skip,
}, async () => {
  // stories260K has no template; a ChatML one is put on its tokenizer. It renders an answer in capitals, so a
  // later turn finds the cache's answer rendered otherwise and sends it again as rendered (dropLastAnswer).
  const chatml =
    '{% for m in messages %}<|im_start|>{{ m.role }}\n' +
    "{% if m.role == 'assistant' %}{{ m.content | upper }}{% else %}{{ m.content }}{% endif %}<|im_end|>\n" +
    '{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}';
  const model = await loadAddon().loadModel(stories);
  const plainTok = modelTokenizer(model);
  const tok = {
    ...plainTok,
    format: { ...plainTok.format, renderer: templateRenderer(chatml, { bos: '', eos: '' }), template: true },
  };
  const corpus = readCorpus(documentFiles(join(repoRoot, 'test/docs')));
  const cases = generateCases(tok, corpus, { tasks: ['qa'], lengths: [300], samples: 2, seed });
  for (const c of cases) {
    for (const q of c.questions) {
      assert.ok(q.prompt.startsWith('<|im_start|>user\n'), JSON.stringify(q.prompt));
      assert.ok(q.prompt.endsWith(`<|im_start|>assistant\n${q.answerPrefix}`), JSON.stringify(q.prompt));
    }
    assert.ok(c.prefixTokens[0] === 1, 'BOS as the model asks');
  }
  const o = { methods: ['full' as const], budgets: [1], alpha: 0.2, window: 32, kernel: 7 };
  const sessionOpts = { nCtx: 512, nThreads: 2, kvType: 'f16' as const };
  const multi = await runRuler(model, tok, cases, { ...o, sessionOpts, mode: 'multi-question' });
  const agnostic = await runRuler(model, tok, cases, { ...o, sessionOpts, mode: 'question-agnostic' });
  assert.equal(multi.results.length, 4);
  for (const r of multi.results.filter((x) => x.question === 0))
    assert.equal(r.output, agnostic.results.find((a) => a.case === r.case && a.question === 0)!.output);
  model.dispose();
});
