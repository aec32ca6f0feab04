// The `folio` command line, run as a user would run it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PDFDocument } from 'pdf-lib';

import { storiesPdf, storyFiles } from './helpers/e2e-host.ts';
import { DEFAULT_OCR_SECONDS_PER_PAGE } from '../electron/documents/ocr.ts';
import { aboutDuration } from '../electron/shared/ocr.ts';
import { typesetImage } from './helpers/make-pdf.ts';
import { missing, repoRoot, sharedModel, sharedReference } from './helpers/shared.ts';

const stories = sharedModel('stories260K.gguf');
const stories260K = stories;
const skip = missing(stories, sharedReference('stories260K/p1_once.json'));

function folio(...args: string[]) {
  const r = spawnSync(process.execPath, [join(repoRoot, 'electron/cli/folio.mjs'), ...args], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test("generate --json prints llama.cpp's greedy continuation", { skip }, () => {
  const ref = JSON.parse(readFileSync(sharedReference('stories260K/p1_once.json'), 'utf8'));
  const r = folio('generate', '--model', stories, '--prompt', 'Once upon a time', '--n', '64', '--temp', '0', '--json');
  assert.equal(r.code, 0, r.err);
  const j = JSON.parse(r.out);
  assert.deepEqual(j.tokens, ref.greedy.tokens);
  assert.equal(j.text, ref.greedy.text);
  assert.equal(j.prompt_tokens, 5);
  assert.ok(j.prefill_tokens_per_s > 0 && j.decode_tokens_per_s > 0);
  assert.equal(j.stop_reason, 'length');
});

test('generate without --json streams the text', { skip }, () => {
  const r = folio('generate', '--model', stories, '--prompt', 'Once upon a time', '--n', '16', '--temp', '0');
  assert.equal(r.code, 0, r.err);
  assert.ok(r.out.startsWith(', there was a little girl named Lily.'), r.out);
  assert.match(r.err, /5 prompt tokens/);
});

test('generate samples reproducibly with a seed', { skip }, () => {
  const run = (seed: string) =>
    JSON.parse(
      folio('generate', '--model', stories, '--prompt', 'Lily', '--n', '24', '--temp', '1', '--seed', seed, '--json')
        .out,
    ).tokens;
  assert.deepEqual(run('42'), run('42'));
  assert.notDeepEqual(run('42'), run('43'));
});

test('tokenize, logits and info', { skip }, () => {
  const t = JSON.parse(folio('tokenize', '--model', stories, '--text', 'Once upon a time', '--json').out);
  assert.deepEqual(t.tokens, [1, 403, 407, 261, 378]);
  assert.deepEqual(
    JSON.parse(folio('tokenize', '--model', stories, '--text', 'Once', '--no-bos', '--json').out).tokens,
    [403],
  );

  const ref = JSON.parse(readFileSync(sharedReference('stories260K/p1_once.json'), 'utf8'));
  const l = JSON.parse(
    folio('logits', '--model', stories, '--prompt', 'Once upon a time', '--kv-type', 'f32', '--json').out,
  );
  assert.equal(l.logits.length, 512);
  assert.ok(l.logits.every((x: number, i: number) => Math.abs(x - ref.last_logits[i]) < 1e-4));
  assert.equal(l.top[0][0], ref.greedy.tokens[0]);
  const all = JSON.parse(folio('logits', '--model', stories, '--prompt', 'Once upon a time', '--all', '--json').out);
  assert.equal(all.logits.length, 5);

  const info = JSON.parse(folio('info', '--model', stories, '--json').out);
  assert.equal(info.architecture, 'llama');
  assert.equal(info.nLayer, 5);
  assert.equal(info.memory.nCtx, 512);
  assert.equal(info.memory.kvBytes, 5 * 512 * 4 * (8 + 8) * 2); // F16 keys and values
  const text = folio('info', '--model', stories).out;
  assert.match(text, /5 layers, embedding 64, 8 query heads, 4 KV heads/);
});

test('the cache precision flags: 8 and 4 bits, keys and values apart, rotated unless told otherwise', { skip }, () => {
  // heads of 8 numbers: a q8_0 key is one short block, 2 + 8 bytes; a q4_0 value 2 + 4
  const q = JSON.parse(folio('info', '--model', stories, '--kv-type-k', 'q8_0', '--kv-type-v', 'q4_0', '--json').out);
  assert.equal(q.memory.kvType, 'q8_0/q4_0+rot');
  assert.equal(q.memory.kvBytes, 5 * 512 * 4 * (10 + 6));
  const off = JSON.parse(folio('info', '--model', stories, '--kv-type', 'q4_0', '--kv-rotate', 'off', '--json').out);
  assert.equal(off.memory.kvType, 'q4_0');
  // The logits of a q8_0 cache stay near the f32 ones (the reference's).
  const ref = JSON.parse(readFileSync(sharedReference('stories260K/p1_once.json'), 'utf8'));
  const l = JSON.parse(
    folio('logits', '--model', stories, '--prompt', 'Once upon a time', '--kv-type', 'q8_0', '--json').out,
  );
  const worst = Math.max(...l.logits.map((x: number, i: number) => Math.abs(x - ref.last_logits[i])));
  assert.ok(worst > 0 && worst < 0.5, `max |q8_0 - f32| ${worst}`); // seen: 0.15, of logits spread over ~20
  assert.equal(l.top[0][0], ref.greedy.tokens[0]);
  let r = folio('info', '--model', stories, '--kv-type', 'q3_k');
  assert.equal(r.code, 2);
  assert.match(r.err, /--kv-type must be f16, q8_0, q4_0, f32, not 'q3_k'/);
  r = folio('info', '--model', stories, '--kv-rotate', 'maybe');
  assert.equal(r.code, 2);
  assert.match(r.err, /--kv-rotate must be on or off/);
});

test('errors: unknown command, bad flags, missing model, broken file', () => {
  let r = folio('frobnicate');
  assert.equal(r.code, 2);
  assert.match(r.err, /unknown command 'frobnicate'/);
  r = folio('generate', '--model', stories, '--bogus');
  assert.equal(r.code, 2);
  assert.match(r.err, /--bogus/);
  r = folio('generate', '--model', stories, '--n', 'many');
  assert.equal(r.code, 2);
  assert.match(r.err, /--n must be an integer/);
  r = folio('generate', '--prompt', 'x');
  assert.equal(r.code, 2);
  assert.match(r.err, /--model is required/);
  r = folio('info', '--model', '/nonexistent/model.gguf', '--json');
  assert.equal(r.code, 1);
  assert.equal(JSON.parse(r.out).error.code, 'FILE_OPEN');
  r = folio('info', '--model', join(repoRoot, 'package.json'));
  assert.equal(r.code, 1);
  assert.match(r.err, /not a GGUF file.*GGUF_BAD_MAGIC/);
  r = folio();
  assert.equal(r.code, 2);
  assert.match(r.out, /Commands:/);
});

test('compress reads a PDF four times longer than the context in chunks, with re-based positions', {
  skip,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'folio-cli-'));
  const file = join(dir, 'stories.pdf');
  await storiesPdf(file, [...storyFiles, ...storyFiles]); // one story a page, every story twice: ~5,000 tokens
  try {
    const r = folio(
      'compress',
      '--model',
      stories260K,
      '--doc',
      file,
      '--method',
      'ada-snapkv',
      '--budget',
      '0.2',
      '--json',
    );
    assert.equal(r.code, 0, r.err);
    const s = JSON.parse(r.out);
    assert.ok(s.prefixTokens > 4 * 512, `${s.prefixTokens} tokens`);
    assert.equal(s.rebased, true);
    assert.ok(s.chunks > 4);
    assert.equal(s.context_tokens, 512);
    assert.ok(s.positions < 512 && s.kvBytesPeak <= s.kvBytesBound);
    // The text form says how it was read.
    const text = folio('compress', '--model', stories260K, '--doc', file, '--method', 'snapkv', '--budget', '64').out;
    assert.match(
      text,
      /read in \d+ chunks of 128 tokens; the cache peaked at [\d.]+ MiB \(bound [\d.]+ MiB\); positions re-based/,
    );
    // By hand, one pass is refused for what does not fit, saying how to read it.
    const one = folio('compress', '--model', stories260K, '--doc', file, '--budget', '0.2', '--chunk', '0', '--json');
    assert.equal(one.code, 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('compress of a long scan stops before its OCR, saying how long it would take; --ocr-pages reads a range', {
  skip,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'folio-cli-scan-'));
  const file = join(dir, 'scan.pdf');
  // Thirty pages of one picture (made once): at the default seconds a page, over the minute that asks first.
  const pdf = await PDFDocument.create();
  const png = await pdf.embedPng(await typesetImage('Lily had a red kite. The secret code is 7306, she said.'));
  for (let i = 0; i < 30; i++) pdf.addPage([612, 792]).drawImage(png, { x: 0, y: 0, width: 612, height: 792 });
  writeFileSync(file, await pdf.save());
  const compressScan = (...flags: string[]) =>
    folio('compress', '--model', stories260K, '--doc', file, '--budget', '0.2', ...flags);
  try {
    const asked = compressScan();
    assert.equal(asked.code, 2, asked.err);
    assert.ok(
      asked.err.includes(
        `scan.pdf has 30 pages without a text layer to read by OCR (${aboutDuration(30 * DEFAULT_OCR_SECONDS_PER_PAGE)} here): pass --ocr-pages all, or a range`,
      ),
      asked.err,
    );
    const bad = compressScan('--ocr-pages', '9-3');
    assert.match(bad.err, /--ocr-pages must be all, a page or a range of pages/);
    const r = compressScan('--ocr-pages', '2-2', '--json');
    assert.equal(r.code, 0, r.err);
    assert.ok(JSON.parse(r.out).prefixTokens > 10);
    assert.match(r.err, /pages 1, 3–30 were not read: they have no text layer and lay outside the pages chosen/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
