// `folio bench-compare`: the side-by-side run of Folio and the reference engines' llama-bench. The
// reference engines are built outside the repository and cannot run in CI, so the engine here is a stand-in
// llama-bench that answers in llama-bench's JSON format and logs how it was called; Folio's side is the
// real `folio bench` on stories260K.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { compareTable, parseLlamaBench, type CompareRow } from '../electron/cli/commands/bench-compare.ts';
import { missing, repoRoot, sharedModel } from './helpers/shared.ts';

const stories = sharedModel('stories260K.gguf');

test("parseLlamaBench reads llama-bench's pp and tg tests", () => {
  const json = JSON.stringify([
    { n_prompt: 512, n_gen: 0, avg_ts: 104.3 },
    { n_prompt: 0, n_gen: 128, avg_ts: 16.0 },
  ]);
  assert.deepEqual(parseLlamaBench(json), { pp: 104.3, tg: 16.0 });
  assert.throws(() => parseLlamaBench('[{"n_prompt":512,"n_gen":0,"avg_ts":1}]'), /no pp or no tg/);
});

test("compareTable prints Folio's ratio to each engine", () => {
  const row = (engine: string, pp: number, tg: number): CompareRow => ({
    model: 'm.gguf',
    engine,
    pp_runs: [pp],
    tg_runs: [tg],
    pp,
    tg,
  });
  const text = compareTable([row('ik_llama.cpp', 100, 16), row('Folio', 130, 12)], ['ik_llama.cpp', 'Folio']);
  const [header, line] = text.split('\n');
  assert.match(header, /pp Folio\/ik_llama\.cpp/);
  assert.match(line, /^m\.gguf\s+100\.0\s+130\.0\s+1\.30\s+16\.0\s+12\.0\s+0\.75$/);
});

test('bench-compare runs each engine once per round, rotating who goes first', { skip: missing(stories) }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'folio-bench-compare-'));
  try {
    const log = join(dir, 'calls.log');
    const bench = join(dir, 'llama-bench');
    writeFileSync(
      bench,
      '#!/usr/bin/env node\n' +
        `require('node:fs').appendFileSync(${JSON.stringify(log)}, process.argv.slice(2).join(' ') + '\\n');\n` +
        'console.log(JSON.stringify([{ n_prompt: 16, n_gen: 0, avg_ts: 50 }, { n_prompt: 0, n_gen: 8, avg_ts: 5 }]));\n',
    );
    chmodSync(bench, 0o755);
    const r = spawnSync(
      process.execPath,
      [
        join(repoRoot, 'electron/cli/folio.mjs'),
        'bench-compare',
        '--ik-llama-cpp',
        dir,
        '--models',
        stories,
        '--rounds',
        '2',
        '--prompt-tokens',
        '16',
        '--gen-tokens',
        '8',
        '--threads',
        '1',
        '--json',
      ],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { rows: CompareRow[]; rounds: number };
    const calls = readFileSync(log, 'utf8').trim().split('\n');
    assert.equal(calls.length, 2, 'one llama-bench call per round');
    for (const c of calls) assert.match(c, /-m \S+stories260K\.gguf -p 16 -n 8 -t 1 -r 1 -o json -rtr 1 -fa 1$/);
    const ik = out.rows.find((x) => x.engine === 'ik_llama.cpp');
    const folio = out.rows.find((x) => x.engine === 'Folio');
    assert.deepEqual(ik?.pp_runs, [50, 50]);
    assert.equal(ik?.tg, 5);
    assert.equal(folio?.pp_runs.length, 2);
    assert.ok((folio?.pp ?? 0) > 0 && (folio?.tg ?? 0) > 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('bench-compare says what is missing', () => {
  const r = spawnSync(process.execPath, [join(repoRoot, 'electron/cli/folio.mjs'), 'bench-compare'], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--llama-cpp DIR and\/or --ik-llama-cpp DIR/);
  const r2 = spawnSync(
    process.execPath,
    [join(repoRoot, 'electron/cli/folio.mjs'), 'bench-compare', '--ik-llama-cpp', tmpdir()],
    { encoding: 'utf8' },
  );
  assert.equal(r2.status, 2);
  assert.match(r2.stderr, /no llama-bench in/);
});
