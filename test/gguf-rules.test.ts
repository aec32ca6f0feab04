// Issue 14 item 6: a metadata key of the wrong type. The engine type-checks every key it reads when a model is
// loaded (native/src/gguf/metadata-rules.cc) and the models page applies the same table and rule
// (electron/models/gguf-metadata-rules.ts): the tables agree, and every wrong-typed file is refused by both,
// naming the same key with the same message. Before, a wrong-typed tokenizer.chat_template or general.file_type
// loaded and then made info() throw a C++ exception outside any guard, which aborted the process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadAddon, type EngineError } from '../electron/engine/binding.ts';
import { inspectGguf } from '../electron/models/gguf-header.ts';
import {
  formatG,
  METADATA_RULES,
  type MetadataKind,
  type MetadataRule,
} from '../electron/models/gguf-metadata-rules.ts';
import { withKey } from './helpers/gguf-mutator.ts';
import { arr, f32, u32, u64, ValueType, type MetaValue } from './helpers/gguf-writer.ts';
import { buildRandomModel } from './helpers/random-model.ts';
import { repoRoot } from './helpers/shared.ts';

const addon = loadAddon();
const dir = mkdtempSync(join(tmpdir(), 'folio-gguf-rules-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
let fileNo = 0;
const base = buildRandomModel({
  arch: 'llama',
  type: 'Q8_0',
  seed: 5,
  nEmbd: 64,
  nHead: 4,
  nHeadKv: 2,
  nFf: 64,
  nLayer: 1,
}).bytes;

function write(bytes: Uint8Array): string {
  const p = join(dir, `f${fileNo++}.gguf`);
  writeFileSync(p, bytes);
  return p;
}

// Values of every other kind, for each kind a key may have to hold.
const WRONG: Record<MetadataKind, [string, MetaValue][]> = {
  string: [
    ['uint32', u32(7)],
    ['an array of string', ['x']],
    ['bool', true],
  ],
  integer: [
    ['string', '512'],
    ['float32', f32(512)],
    ['bool', true],
    ['an array of uint32', arr(ValueType.UINT32, [1, 2])],
    ['uint64 18446744073709551615, beyond the int64 range', u64(2n ** 64n - 1n)],
  ],
  number: [
    ['string', '1e-5'],
    ['bool', false],
    ['an array of float32', arr(ValueType.FLOAT32, [1])],
  ],
  bool: [
    ['uint8', { type: ValueType.UINT8, value: 1 }],
    ['string', 'true'],
  ],
  'string array': [
    ['an array of int32', arr(ValueType.INT32, [1, 2])],
    ['string', 'a b'],
  ],
  'integer array': [
    ['an array of float32', arr(ValueType.FLOAT32, [1.5])],
    ['an array of string', ['1']],
    ['uint32', u32(1)],
  ],
  'number array': [
    ['an array of string', ['0.5']],
    ['an array of bool', arr(ValueType.BOOL, [true])],
    ['float32', f32(0.5)],
  ],
};
const EXPECTED: Record<MetadataKind, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  bool: 'a bool',
  'string array': 'an array of strings',
  'integer array': 'an array of integers',
  'number array': 'an array of numbers',
};
const keyOf = (r: MetadataRule) => r.key.replace('{arch}.', 'llama.');

test("the TypeScript table is the engine's table, ranges and their wording included", () => {
  const native = (addon as unknown as { ggufMetadataRules(): MetadataRule[] }).ggufMetadataRules();
  assert.deepEqual(native, METADATA_RULES);
  assert.ok(native.filter((r) => r.range).length >= 19, 'every hyperparameter has a range');
});

test('formatG writes numbers as printf("%g") does', () => {
  const cases: [number, string][] = [
    [1e-5, '1e-05'],
    [0.0001, '0.0001'],
    [123456, '123456'],
    [1234567, '1.23457e+06'],
    [10000, '10000'],
    [0.5, '0.5'],
    [1e300, '1e+300'],
    [-2.5e-7, '-2.5e-07'],
    [Infinity, 'inf'],
    [-Infinity, '-inf'],
    [NaN, 'nan'],
    [0, '0'],
    [Math.fround(1e-5), '1e-05'],
  ];
  for (const [v, want] of cases) assert.equal(formatG(v), want, String(v));
});

test('hyperparameters out of range (+Inf epsilon, 0 layers, NaN rope base): the engine and the models page refuse them alike, naming the key', async () => {
  const files: [string, MetaValue, string][] = [
    [
      'llama.attention.layer_norm_rms_epsilon',
      f32(Infinity),
      'inf is out of range: it must be a finite number above 0 and at most 1',
    ],
    [
      'llama.attention.layer_norm_rms_epsilon',
      f32(0),
      '0 is out of range: it must be a finite number above 0 and at most 1',
    ],
    [
      'llama.attention.layer_norm_rms_epsilon',
      f32(NaN),
      'nan is out of range: it must be a finite number above 0 and at most 1',
    ],
    ['llama.rope.freq_base', f32(-Infinity), '-inf is out of range: it must be a finite number above 1'],
    [
      'llama.rope.freq_base',
      { type: ValueType.FLOAT64, value: 1 },
      '1 is out of range: it must be a finite number above 1',
    ],
    ['llama.block_count', u32(0), '0 is out of range: it must be an integer from 1 to 4096'],
    ['llama.context_length', u64(2n ** 31n), '2147483648 is out of range: it must be an integer from 1 to 2147483647'],
    [
      'llama.attention.head_count_kv',
      { type: ValueType.INT32, value: -2 },
      '-2 is out of range: it must be an integer from 1 to 65536',
    ],
    ['llama.rope.scaling.factor', f32(0.5), '0.5 is out of range: it must be a finite number at least 1'],
  ];
  for (const [key, value, said] of files) {
    const path = write(withKey(base, key, value));
    const message = `metadata key '${key}' = ${said}`;
    await assert.rejects(addon.loadModel(path), (e: EngineError) => {
      assert.equal(e.code, 'GGUF_VALUE', `${key}: ${e.code} ${e.message}`);
      assert.equal(e.message, `${path}: ${message}`);
      return true;
    });
    const s = await inspectGguf(path);
    assert.equal(s.supported, false, `${key}: the models page lists it as supported`);
    assert.ok(s.unsupportedReason!.includes(message), `${key}: ${s.unsupportedReason}`);
  }
  // The ends of a range are in it.
  for (const [key, value] of [
    ['llama.attention.layer_norm_rms_epsilon', f32(1)],
    ['llama.block_count', u32(1)],
  ] as const) {
    const path = write(withKey(base, key, value));
    (await addon.loadModel(path)).dispose();
    assert.equal((await inspectGguf(path)).supported, true, key);
  }
});

test('wrong-typed tokenizer.chat_template and general.file_type: a JS error naming the key, never an abort', () => {
  const files = [
    ['tokenizer.chat_template', u32(7), 'a string but is uint32'],
    ['general.file_type', 'Q4_K_M', 'an integer but is string'],
    ['general.file_type', u64(2n ** 63n), 'an integer but is uint64 9223372036854775808, beyond the int64 range'],
    ['llama.context_length', '4096', 'an integer but is string'],
    ['tokenizer.ggml.tokens', arr(ValueType.INT32, [1, 2, 3]), 'an array of strings but is an array of int32'],
    ['tokenizer.ggml.scores', arr(ValueType.STRING, ['x']), 'an array of numbers but is an array of string'],
  ] as const;
  const paths = files.map(([key, value]) => write(withKey(base, key, value as MetaValue)));
  // In a child process: an abort there is a failed assertion here, not the end of the test run.
  const r = spawnSync(process.execPath, ['--import', 'tsx', join('test', 'helpers', 'gguf-probe.ts'), ...paths], {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.equal(r.status, 0, `the probe process ended with ${r.signal ?? r.status}:\n${r.stderr.slice(-2000)}`);
  const results = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  files.forEach(([key, , want], i) => {
    const p = results[i];
    assert.equal(p.load, 'GGUF_TYPE', `${key}: ${p.load} ${p.loadMessage}`);
    assert.equal(p.loadMessage, `${paths[i]}: metadata key '${key}' should be ${want}`);
    assert.equal(p.typeError, `metadata key '${key}' should be ${want}`);
    assert.deepEqual(p.failures, []);
  });
});

test('every key of the table, with every wrong kind of value: the engine and the models page refuse it alike', async () => {
  const good = await inspectGguf(write(base));
  assert.equal(good.supported, true, good.unsupportedReason ?? '');
  (await addon.loadModel(write(base))).dispose();
  for (const rule of METADATA_RULES) {
    const key = keyOf(rule);
    for (const [found, value] of WRONG[rule.kind]) {
      const path = write(withKey(base, key, value));
      const message = `metadata key '${key}' should be ${EXPECTED[rule.kind]} but is ${found}`;
      await assert.rejects(addon.loadModel(path), (e: EngineError) => {
        assert.equal(e.code, 'GGUF_TYPE', `${key} as ${found}: ${e.code} ${e.message}`);
        assert.equal(e.message, `${path}: ${message}`);
        return true;
      });
      const s = await inspectGguf(path);
      assert.equal(s.supported, false, `${key} as ${found}: the models page lists it as supported`);
      assert.ok(s.unsupportedReason!.includes(message), `${key} as ${found}: ${s.unsupportedReason}`);
    }
  }
});

test('a key or a tensor name over 65,535 bytes: the engine and the models page refuse it alike', async () => {
  const path = write(withKey(base, `general.${'x'.repeat(70_000)}`, u32(1)));
  await assert.rejects(addon.loadModel(path), (e: EngineError) => {
    assert.equal(e.code, 'GGUF_BAD_LENGTH', e.message);
    assert.match(e.message, /is 70008 bytes long, more than the 65535 allowed/);
    return true;
  });
  await assert.rejects(inspectGguf(path), (e: { code: string; message: string }) => {
    assert.equal(e.code, 'GGUF_BAD_LENGTH');
    assert.match(e.message, /is 70008 bytes long, more than the 65535 allowed/);
    return true;
  });
});

test('an architecture Folio does not run is refused for that, whatever its own keys hold', async () => {
  const bytes = withKey(withKey(base, 'general.architecture', 'gemma2'), 'gemma2.context_length', 'long');
  const path = write(bytes);
  await assert.rejects(
    addon.loadModel(path),
    (e: EngineError) => e.code === 'UNSUPPORTED_ARCH' && /'gemma2'/.test(e.message),
  );
  const s = await inspectGguf(path);
  assert.match(s.unsupportedReason!, /does not run the 'gemma2' architecture/);
});
