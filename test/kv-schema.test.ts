// The app's copies of the engine's tables cannot drift: the method table (electron/shared/kv/methods.ts against
// native/src/kv/method.cc), the statistics' fields (electron/shared/kv/stats.ts against native/src/kv/stats.h),
// the options' bounds and defaults (electron/shared/kv/options.ts against native/src/napi/options.cc) and the
// budget rule the memory estimate uses (electron/shared/kv/budget.ts against resolve_budget), each compared in
// both directions; a real compression's statistics parse strictly; and no other source file
// lists the methods, so adding a method touches one table on each side.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { CompressionSettings, Settings } from '../electron/api/contract.ts';
import { compressOptions, UsageError } from '../electron/cli/args.ts';
import { loadAddon, type EngineError, type Model } from '../electron/engine/binding.ts';
import { DEFAULT_BETA, defaultChunk, resolveBudget } from '../electron/shared/kv/budget.ts';
import { METHOD_NAMES, METHOD_TABLE, type CompressionMethod } from '../electron/shared/kv/methods.ts';
import { COMPRESS_OPTION_ROWS, SAMPLING_OPTION_ROWS } from '../electron/shared/kv/options.ts';
import { CompressionStats, EngineCompressionStats, STATS_SCHEMA } from '../electron/shared/kv/stats.ts';
import { DEFAULT_SETTINGS } from '../electron/storage/settings.ts';
import { keptPrefixTokens } from '../electron/models/estimate.ts';
import { missing, repoRoot, sharedModel } from './helpers/shared.ts';

const addon = loadAddon();

test('the method table: every engine method is in the app table with the same properties, and back', () => {
  const engine = addon.methods();
  const app = METHOD_TABLE.map((m) => ({ ...m }));
  for (const m of engine)
    assert.deepEqual(
      app.find((a) => a.name === m.name),
      m,
      `engine method ${m.name} in electron/shared/kv/methods.ts`,
    );
  for (const m of app)
    assert.deepEqual(
      engine.find((e) => e.name === m.name),
      m,
      `app method ${m.name} in native/src/kv/method.cc`,
    );
  assert.deepEqual(
    engine.map((m) => m.name),
    [...METHOD_NAMES],
    'the same order (the UI and the error messages list them so)',
  );
});

test('the engine refuses a method outside its table, naming every method of it', () => {
  assert.throws(
    () => addon.kv.resolveBudget({ method: 'h2o' as CompressionMethod, budget: 0.5 }, 100),
    (e: EngineError) => e.code === 'INVALID_METHOD' && METHOD_NAMES.every((n) => e.message.includes(n)),
  );
});

test("the statistics schema: the engine reports exactly the app's fields and kinds, both ways", () => {
  const engine = addon.statsSchema();
  for (const part of ['compression', 'layer', 'head'] as const) {
    for (const [name, kind] of Object.entries(engine[part]))
      assert.equal(STATS_SCHEMA[part][name], kind, `engine ${part}.${name} in electron/shared/kv/stats.ts`);
    for (const [name, kind] of Object.entries(STATS_SCHEMA[part]))
      assert.equal(engine[part][name], kind, `app ${part}.${name} in native/src/kv/stats.h`);
  }
  assert.deepEqual(Object.keys(engine).sort(), ['compression', 'head', 'layer']);
});

test("the options table: the engine's bounds and defaults are the app's, both ways, and the contract takes them", () => {
  const engine = addon.optionsSchema();
  assert.deepEqual(Object.keys(engine).sort(), ['compress', 'sampling']);
  const app = { compress: COMPRESS_OPTION_ROWS, sampling: SAMPLING_OPTION_ROWS };
  for (const part of ['compress', 'sampling'] as const) {
    for (const row of engine[part])
      assert.deepEqual(
        app[part].find((a) => a.name === row.name),
        row,
        `engine ${part}.${row.name} in electron/shared/kv/options.ts`,
      );
    for (const row of app[part])
      assert.deepEqual(
        engine[part].find((e) => e.name === row.name),
        row,
        `app ${part}.${row.name} in native/src/napi/options.cc`,
      );
  }
  // What the settings accept, the engine accepts: each bound of the contract is the engine's.
  const settings = (compression: object, sampling: object) =>
    Settings.safeParse({
      ...DEFAULT_SETTINGS,
      compression: { ...DEFAULT_SETTINGS.compression, ...compression },
      sampling: { ...DEFAULT_SETTINGS.sampling, ...sampling },
    }).success;
  for (const [part, rows] of [
    ['compress', COMPRESS_OPTION_ROWS],
    ['sampling', SAMPLING_OPTION_ROWS],
  ] as const)
    for (const row of rows) {
      if (row.name === 'budget' || row.name === 'repeatLastN') continue; // the budget's own test; not a setting
      const at = (v: number) =>
        part === 'compress' ? settings({ [row.name]: v }, {}) : settings({}, { [row.name]: v });
      const inside = row.odd && row.max % 2 === 0 ? row.max - 1 : row.max;
      assert.equal(at(inside), true, `${row.name} = ${inside}`);
      assert.equal(at(row.max + (row.integer ? 1 : row.max * 1e-9 + 1e-12)), false, `${row.name} above ${row.max}`);
      assert.equal(
        at(row.minOpen ? row.min : row.min - (row.integer ? 1 : 1e-12)),
        false,
        `${row.name} below ${row.min}`,
      );
    }
});

test('every field name of the statistics is camelCase', () => {
  for (const part of Object.values(STATS_SCHEMA))
    for (const name of Object.keys(part)) assert.match(name, /^[a-z][a-zA-Z0-9]*$/, name);
});

const stories = sharedModel('stories260K.gguf');
let model: Model;

test("a real compression's statistics parse strictly, for every method, measured and not", {
  skip: missing(stories),
}, async () => {
  model = await addon.loadModel(stories);
  const prefix = Array.from({ length: 120 }, (_, i) => 1 + ((i * 37) % 500));
  for (const method of METHOD_NAMES) {
    for (const measureLoss of [false, true]) {
      const s = model.createSession({ nCtx: 256, nThreads: 1, kvType: 'f32' });
      try {
        const { stats } = await s.compress(prefix, {
          method,
          budget: method === 'full' ? undefined : 0.5,
          window: 8,
          measureLoss,
        });
        const parsed = EngineCompressionStats.safeParse(stats);
        assert.ok(parsed.success, `${method}: ${parsed.success ? '' : JSON.stringify(parsed.error.issues[0])}`);
        // what the contract carries: the same with the retention map as an array
        const json = JSON.parse(JSON.stringify({ ...stats, tokenRetention: Array.from(stats.tokenRetention) }));
        assert.ok(CompressionStats.safeParse(json).success, `${method}: as JSON`);
        assert.equal(stats.compressed, method !== 'full');
        assert.equal(stats.reason === null, method !== 'full', `${method}: reason null exactly when compressed`);
        const measured = stats.layers.some((l) => l.attnL1 !== null);
        assert.equal(measured, measureLoss, `${method}: attnL1 measured exactly when asked`);
      } finally {
        s.dispose();
      }
    }
  }
});

test('the strict schemas refuse a missing or an unknown field (so the parse above can fail)', {
  skip: missing(stories),
}, async () => {
  const s = model.createSession({ nCtx: 256, nThreads: 1, kvType: 'f32' });
  const { stats } = await s.compress(
    Array.from({ length: 64 }, (_, i) => 1 + i),
    { method: 'ada-snapkv', budget: 0.5, window: 8 },
  );
  s.dispose();
  const { msCompress: _dropped, ...short } = stats;
  assert.equal(EngineCompressionStats.safeParse(short).success, false, 'a missing field');
  assert.equal(
    EngineCompressionStats.safeParse({ ...stats, ms_compress: stats.msCompress }).success,
    false,
    'an unknown field',
  );
  const layers = stats.layers.map((l) => ({
    ...l,
    heads: l.heads.map((h) => ({ ...h, retained_mass: h.retainedMass })),
  }));
  assert.equal(EngineCompressionStats.safeParse({ ...stats, layers }).success, false, 'an unknown field of a head');
});

test("the budget rule of the estimate equals the engine's over a grid of prefixes, windows and budgets", () => {
  let compared = 0;
  for (const window of [1, 4, 32]) {
    const lengths = [
      1,
      2,
      window - 1,
      window,
      window + 1,
      window + 2,
      2 * window,
      3 * window + 1,
      100,
      257,
      1000,
    ].filter((L) => L >= 1);
    const budgets = [
      0.01,
      0.05,
      0.1,
      0.2,
      0.25,
      0.5,
      0.75,
      0.99,
      1,
      2,
      3,
      window,
      window + 1,
      window + 2,
      50,
      99,
      100,
      101,
      512,
      5000,
    ];
    for (const method of METHOD_NAMES) {
      for (const L of lengths) {
        for (const budget of budgets) {
          const c = { method, budget, window };
          let engine;
          try {
            engine = addon.kv.resolveBudget(c, L);
          } catch (e) {
            // tokens per head within the window: refused before any prefix is seen (validate, BUDGET_TOO_SMALL)
            assert.equal((e as EngineError).code, 'BUDGET_TOO_SMALL', `${method} ${budget} w=${window}`);
            assert.ok(budget > 1 && budget <= window && method !== 'full');
            continue;
          }
          assert.deepEqual(resolveBudget(c, L), engine, `${method}, budget ${budget}, window ${window}, L ${L}`);
          compared++;
        }
      }
    }
  }
  assert.ok(compared > 1000, `${compared} cases`);
});

test('a document one token longer than the window: the estimate keeps what the engine keeps', () => {
  for (const window of [8, 32]) {
    const L = window + 1;
    for (const budget of [0.05, 0.2, 0.9]) {
      const c = { method: 'ada-snapkv' as const, budget, window };
      const engine = addon.kv.resolveBudget(c, L);
      assert.deepEqual(
        keptPrefixTokens(L, c),
        { kept: engine.B, compressed: engine.compress, clamped: engine.clamped },
        `w=${window}, budget ${budget}`,
      );
    }
  }
});

test('the chunk a chunked read takes: the estimate’s rule is the engine’s', () => {
  let compared = 0;
  for (const B of [1, 33, 200, 511, 512, 513, 1000, 2048, 2049, 6400, 100_000])
    for (const nCtx of [64, 128, 512, 2047, 4096, 8192, 131072]) {
      assert.equal(defaultChunk(B, nCtx), addon.kv.defaultChunk(B, nCtx), `B ${B}, nCtx ${nCtx}`);
      compared++;
    }
  assert.ok(compared > 70);
});

// The places where a list of all the methods could hide: the app's and the engine's sources.
const SOURCE_DIRS = ['electron', 'renderer/src', 'renderer/bench', 'native/src', 'native/tools', 'native/cuda'];
const TABLES = new Set(['electron/shared/kv/methods.ts', 'native/src/kv/method.cc']);

function sourceFiles(dir: string, out: string[] = []): string[] {
  let entries;
  try {
    entries = readdirSync(join(repoRoot, dir), { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory()) sourceFiles(p, out);
    else if (/\.(ts|tsx|mts|mjs|cc|h|cu|cuh)$/.test(e.name) && !/\.test\.tsx?$/.test(e.name)) out.push(p);
  }
  return out;
}

test('adding a method touches one table: no other source file lists the methods', () => {
  const files = SOURCE_DIRS.flatMap((d) => sourceFiles(d));
  assert.ok(files.length > 50, `${files.length} source files`);
  const offenders: string[] = [];
  for (const f of files) {
    if (TABLES.has(f)) continue;
    const text = readFileSync(join(repoRoot, f), 'utf8');
    // A list of all the methods names the pyramid ones, which nothing else names (code asks a method's
    // schedule, not its name).
    if (text.includes('pyramidkv')) offenders.push(f);
  }
  assert.deepEqual(offenders, [], 'derive these from electron/shared/kv/methods.ts (or kv::method_table() in C++)');
});

test('beta, the pyramid steepness: the command line reads --beta, the contract and the engine refuse < 1, and it shapes the pyramid', {
  skip: missing(stories),
}, async () => {
  assert.equal(compressOptions({ method: 'pyramidkv', budget: '0.5', beta: '3' }).beta, 3);
  assert.equal(compressOptions({ method: 'pyramidkv', budget: '0.5' }).beta, DEFAULT_BETA);
  assert.throws(() => compressOptions({ method: 'pyramidkv', budget: '0.5', beta: '0' }), UsageError);
  const settings = { method: 'pyramidkv', budget: 0.5, alpha: 0.2, window: 8, kernel: 7 } as const;
  assert.equal(CompressionSettings.safeParse({ ...settings, beta: 2 }).success, true);
  assert.equal(CompressionSettings.safeParse({ ...settings, beta: 0 }).success, false);
  assert.equal(CompressionSettings.safeParse({ ...settings, beta: 1.5 }).success, false);

  const prefix = Array.from({ length: 200 }, (_, i) => 1 + ((i * 53) % 500));
  const layerBudgets = async (beta: number) => {
    const s = model.createSession({ nCtx: 256, nThreads: 1, kvType: 'f32' });
    try {
      return (await s.compress(prefix, { method: 'pyramidkv', budget: 0.5, window: 8, beta })).stats.layers.map(
        (l) => l.budget,
      );
    } finally {
      s.dispose();
    }
  };
  assert.notDeepEqual(await layerBudgets(1), await layerBudgets(20), 'beta reaches the schedule');
  const s = model.createSession({ nCtx: 256, nThreads: 1 });
  await assert.rejects(
    async () => s.compress(prefix, { method: 'pyramidkv', budget: 0.5, beta: 0 }),
    (e: EngineError) => e.code === 'INVALID_ARGUMENT',
  );
  s.dispose();
});
