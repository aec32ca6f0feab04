// The GGUF reader: every metadata type round-trips, and a corpus of broken files (truncated at every
// header byte, hostile counts and lengths, bad types and offsets) each ends in the expected error code
// with a message that names the problem, never a crash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadAddon, type EngineError } from '../electron/engine/binding.ts';
import {
  arr,
  buildGguf,
  ByteWriter,
  f32Bytes,
  TensorType,
  u64,
  ValueType,
  type GgufSpec,
} from './helpers/gguf-writer.ts';

const addon = loadAddon();
const dir = mkdtempSync(join(tmpdir(), 'folio-gguf-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
let fileNo = 0;

function write(bytes: Uint8Array): string {
  const p = join(dir, `f${fileNo++}.gguf`);
  writeFileSync(p, bytes);
  return p;
}

function readError(bytes: Uint8Array): EngineError {
  try {
    addon.readGguf(write(bytes));
  } catch (e) {
    return e as EngineError;
  }
  throw new Error('the broken file was accepted');
}

function expectError(bytes: Uint8Array, code: string, message?: RegExp) {
  const e = readError(bytes);
  assert.equal(e.code, code, `expected ${code}, got ${e.code}: ${e.message}`);
  if (message) assert.match(e.message, message);
}

// A valid file with every metadata value type and three tensors.
const spec: GgufSpec = {
  metadata: [
    ['general.architecture', 'llama'],
    ['t.u8', { type: ValueType.UINT8, value: 200 }],
    ['t.i8', { type: ValueType.INT8, value: -100 }],
    ['t.u16', { type: ValueType.UINT16, value: 60000 }],
    ['t.i16', { type: ValueType.INT16, value: -30000 }],
    ['t.u32', { type: ValueType.UINT32, value: 4000000000 }],
    ['t.i32', { type: ValueType.INT32, value: -2000000000 }],
    ['t.f32', { type: ValueType.FLOAT32, value: 1.5 }],
    ['t.bool', true],
    ['t.str', 'héllo ✓'],
    ['t.u64', u64(2n ** 40n)],
    ['t.i64', { type: ValueType.INT64, value: -(2n ** 40n) }],
    ['t.f64', { type: ValueType.FLOAT64, value: Math.PI }],
    ['t.arr.str', ['a', 'bb', '']],
    ['t.arr.i32', [1, -2, 3]],
    ['t.arr.f32', arr(ValueType.FLOAT32, [0.5, 0.25])],
    ['t.arr.bool', arr(ValueType.BOOL, [true, false])],
    ['t.arr.nested', arr(ValueType.ARRAY, [arr(ValueType.UINT8, [1, 2]), arr(ValueType.STRING, ['x'])])],
    ['t.arr.empty', arr(ValueType.UINT64, [])],
  ],
  tensors: [
    { name: 'a', dims: [4, 2], type: TensorType.F32, data: f32Bytes([1, 2, 3, 4, 5, 6, 7, 8]) },
    { name: 'b', dims: [32], type: TensorType.Q8_0, data: new Uint8Array(34) },
    { name: 'c', dims: [3], type: TensorType.F32, data: f32Bytes([9, 9, 9]) },
  ],
};
const good = buildGguf(spec);

test('reads every metadata value type and the tensor table', () => {
  const h = addon.readGguf(write(good), { arrays: 'full' });
  assert.equal(h.version, 3);
  assert.equal(h.alignment, 32);
  const m = h.metadata;
  assert.equal(m['t.u8'], 200);
  assert.equal(m['t.i8'], -100);
  assert.equal(m['t.u16'], 60000);
  assert.equal(m['t.i16'], -30000);
  assert.equal(m['t.u32'], 4000000000);
  assert.equal(m['t.i32'], -2000000000);
  assert.equal(m['t.f32'], 1.5);
  assert.equal(m['t.bool'], true);
  assert.equal(m['t.str'], 'héllo ✓');
  assert.equal(m['t.u64'], 2 ** 40);
  assert.equal(m['t.i64'], -(2 ** 40));
  assert.equal(m['t.f64'], Math.PI);
  assert.deepEqual(m['t.arr.str'], ['a', 'bb', '']);
  assert.deepEqual(m['t.arr.i32'], [1, -2, 3]);
  assert.deepEqual(m['t.arr.f32'], [0.5, 0.25]);
  assert.deepEqual(m['t.arr.bool'], [true, false]);
  assert.deepEqual(m['t.arr.nested'], [[1, 2], ['x']]);
  assert.deepEqual(m['t.arr.empty'], []);
  assert.equal(h.metadataTypes['t.i64'], 'int64');
  assert.deepEqual(
    h.tensors.map((t) => [t.name, t.dims, t.type, t.offset, t.bytes]),
    [
      ['a', [4, 2], 'F32', 0, 32],
      ['b', [32], 'Q8_0', 32, 34],
      ['c', [3], 'F32', 96, 12],
    ],
  );
  assert.equal(h.dataOffset % 32, 0);
  const summary = addon.readGguf(write(good));
  assert.deepEqual(summary.metadata['t.arr.str'], { arrayOf: 'string', length: 3 });
});

test('reads version 2 files and a custom alignment', () => {
  const h = addon.readGguf(
    write(
      buildGguf({
        ...spec,
        version: 2,
        alignment: 64,
        metadata: [
          ...(spec.metadata as [string, never][]),
          ['general.alignment', { type: ValueType.UINT32, value: 64 }],
        ],
      }),
    ),
  );
  assert.equal(h.version, 2);
  assert.equal(h.alignment, 64);
  assert.equal(h.dataOffset % 64, 0);
  assert.deepEqual(
    h.tensors.map((t) => t.offset),
    [0, 64, 128],
  );
});

test('a truncation at every byte of the header gives a clear error', () => {
  const h = addon.readGguf(write(good));
  for (let n = 0; n < h.dataOffset; n++) {
    const e = readError(good.subarray(0, n));
    const want = n < 4 ? 'GGUF_BAD_MAGIC' : 'GGUF_TRUNCATED';
    // A cut inside a length-prefixed string or a counted array can also show up as a length or count
    // that no longer fits the file.
    const ok =
      e.code === want || (n >= 4 && ['GGUF_BAD_LENGTH', 'GGUF_BAD_COUNT', 'GGUF_TENSOR_OUT_OF_FILE'].includes(e.code));
    assert.ok(ok, `cut at ${n}: ${e.code}: ${e.message}`);
    assert.ok(e.message.length > 20, e.message);
  }
});

test('a truncation inside the tensor data names the tensor', () => {
  const h = addon.readGguf(write(good));
  // a: bytes [0, 32), b: [32, 66), c: [96, 108) of the data section
  for (const [cut, name] of [
    [10, 'a'],
    [40, 'b'],
    [100, 'c'],
  ] as const) {
    expectError(good.subarray(0, h.dataOffset + cut), 'GGUF_TENSOR_OUT_OF_FILE', new RegExp(`tensor '${name}'`));
  }
});

/** A file with a hand-made header: fields are appended in order by `build`. */
function header(build: (w: ByteWriter) => void): Uint8Array {
  const w = new ByteWriter();
  build(w);
  return w.result();
}
const magic = (w: ByteWriter, version = 3) => {
  w.bytes(Buffer.from('GGUF'));
  w.u32(version);
};

test('wrong magic and unsupported versions', () => {
  expectError(Buffer.from('GGML\x03\x00\x00\x00'), 'GGUF_BAD_MAGIC', /not a GGUF file/);
  expectError(Buffer.from('<html>hello</html>'), 'GGUF_BAD_MAGIC', /starts with '<htm'/);
  expectError(new Uint8Array(0), 'GGUF_BAD_MAGIC');
  expectError(
    header((w) => {
      magic(w, 1);
      w.u64(0);
      w.u64(0);
    }),
    'GGUF_VERSION',
    /version 1/,
  );
  expectError(
    header((w) => {
      magic(w, 4);
      w.u64(0);
      w.u64(0);
    }),
    'GGUF_VERSION',
    /version 4/,
  );
  expectError(
    header((w) => {
      magic(w, 0x03000000);
      w.u64(0);
      w.u64(0);
    }),
    'GGUF_VERSION',
    /big-endian/,
  );
});

test('counts and lengths larger than the file', () => {
  expectError(
    header((w) => {
      magic(w);
      w.u64(0);
      w.u64(2n ** 63n);
    }),
    'GGUF_BAD_COUNT',
    /metadata entries/,
  );
  expectError(
    header((w) => {
      magic(w);
      w.u64(2n ** 60n);
      w.u64(0);
    }),
    'GGUF_BAD_COUNT',
    /tensors/,
  );
  // a key whose length runs past the end
  expectError(
    header((w) => {
      magic(w);
      w.u64(0);
      w.u64(1);
      w.u64(2n ** 62n);
      w.bytes(new Uint8Array(16));
    }),
    'GGUF_BAD_LENGTH',
    /length/,
  );
  // a string value whose length runs past the end
  expectError(
    header((w) => {
      magic(w);
      w.u64(0);
      w.u64(1);
      w.str('k');
      w.u32(ValueType.STRING);
      w.u64(1000);
      w.bytes(new Uint8Array(16));
    }),
    'GGUF_BAD_LENGTH',
    /metadata value 'k'/,
  );
  // an array claiming 2^40 strings
  expectError(
    header((w) => {
      magic(w);
      w.u64(0);
      w.u64(1);
      w.str('k');
      w.u32(ValueType.ARRAY);
      w.u32(ValueType.STRING);
      w.u64(2n ** 40n);
      w.bytes(new Uint8Array(64));
    }),
    'GGUF_BAD_COUNT',
    /elements/,
  );
  // an array claiming 2^62 uint64s (its byte size would overflow)
  expectError(
    header((w) => {
      magic(w);
      w.u64(0);
      w.u64(1);
      w.str('k');
      w.u32(ValueType.ARRAY);
      w.u32(ValueType.UINT64);
      w.u64(2n ** 62n);
      w.bytes(new Uint8Array(64));
    }),
    'GGUF_BAD_COUNT',
  );
});

test('unknown value types, bad bools, deep nesting, duplicates', () => {
  expectError(
    header((w) => {
      magic(w);
      w.u64(0);
      w.u64(1);
      w.str('k');
      w.u32(13);
      w.u32(0);
    }),
    'GGUF_BAD_VALUE_TYPE',
    /'k'.*13/,
  );
  expectError(
    header((w) => {
      magic(w);
      w.u64(0);
      w.u64(1);
      w.str('k');
      w.u32(ValueType.ARRAY);
      w.u32(99);
      w.u64(0);
    }),
    'GGUF_BAD_VALUE_TYPE',
    /element type 99/,
  );
  expectError(
    header((w) => {
      magic(w);
      w.u64(0);
      w.u64(1);
      w.str('k');
      w.u32(ValueType.BOOL);
      w.u8(7);
      w.bytes(new Uint8Array(8));
    }),
    'GGUF_BAD_VALUE',
    /bool/,
  );
  expectError(
    header((w) => {
      magic(w);
      w.u64(0);
      w.u64(1);
      w.str('k');
      w.u32(ValueType.ARRAY);
      for (let i = 0; i < 20; i++) {
        w.u32(ValueType.ARRAY);
        w.u64(1);
      }
      w.u32(ValueType.UINT8);
      w.u64(0);
    }),
    'GGUF_BAD_VALUE',
    /nests arrays/,
  );
  expectError(
    buildGguf({
      metadata: [
        ['a', 1],
        ['a', 2],
      ],
    }),
    'GGUF_DUPLICATE',
    /'a'/,
  );
  expectError(
    buildGguf({ metadata: [], tensors: [spec.tensors![0], spec.tensors![0]] }),
    'GGUF_DUPLICATE',
    /tensor name 'a'/,
  );
});

test('bad alignment values', () => {
  expectError(
    buildGguf({ metadata: [['general.alignment', { type: ValueType.UINT32, value: 48 }]] }),
    'GGUF_ALIGNMENT',
    /power of two/,
  );
  expectError(buildGguf({ metadata: [['general.alignment', { type: ValueType.UINT32, value: 0 }]] }), 'GGUF_ALIGNMENT');
  expectError(buildGguf({ metadata: [['general.alignment', 'x']] }), 'GGUF_ALIGNMENT', /uint32/);
});

/** One tensor record after an empty metadata section, followed by `tail` bytes. */
function tensorFile(
  name: string,
  dims: (number | bigint)[],
  type: number,
  offset: number | bigint,
  tail = 64,
): Uint8Array {
  return header((w) => {
    magic(w);
    w.u64(1);
    w.u64(0);
    w.str(name);
    w.u32(dims.length);
    for (const d of dims) w.u64(d);
    w.u32(type);
    w.u64(offset);
    w.padTo(32);
    w.bytes(new Uint8Array(tail));
  });
}

test('hostile tensor records', () => {
  expectError(tensorFile('t', [4], 99, 0), 'GGUF_BAD_TENSOR_TYPE', /'t'.*unknown tensor type 99/);
  expectError(tensorFile('t', [4], 4, 0), 'GGUF_BAD_TENSOR_TYPE'); // 4 was Q4_2, removed from ggml
  // 40 is Folio's own Q4_K_R8, a layout made at load time: no file may claim it
  expectError(tensorFile('t', [256], 40, 0), 'GGUF_BAD_TENSOR_TYPE', /unknown tensor type 40/);
  expectError(tensorFile('t', [], 0, 0), 'GGUF_BAD_TENSOR', /0 dimensions/);
  expectError(tensorFile('t', [1, 1, 1, 1, 1], 0, 0), 'GGUF_BAD_TENSOR', /5 dimensions/);
  expectError(tensorFile('t', [2n ** 62n, 2n ** 62n], 0, 0), 'GGUF_BAD_TENSOR', /overflows/);
  expectError(tensorFile('t', [2n ** 63n], 0, 0), 'GGUF_BAD_TENSOR', /too large/);
  expectError(tensorFile('t', [2n ** 62n], 0, 0), 'GGUF_BAD_TENSOR', /byte size.*overflows/);
  expectError(tensorFile('t', [33], TensorType.Q8_0, 0), 'GGUF_BAD_TENSOR', /not a multiple of the Q8_0 block size 32/);
  expectError(tensorFile('t', [4], 0, 16), 'GGUF_ALIGNMENT', /offset 16/);
  expectError(tensorFile('t', [4], 0, 2n ** 63n), 'GGUF_TENSOR_OUT_OF_FILE', /offset 9223372036854775808/);
  expectError(tensorFile('t', [4], 0, 2n ** 40n), 'GGUF_TENSOR_OUT_OF_FILE', /'t'/);
  expectError(tensorFile('t', [1000], 0, 0), 'GGUF_TENSOR_OUT_OF_FILE', /4000 bytes/);
  expectError(tensorFile('t', [4], 0, 0, 0).subarray(0, 50), 'GGUF_TRUNCATED');
  // a dimension of zero is a legal empty tensor
  assert.equal(addon.readGguf(write(tensorFile('t', [0, 4], 0, 0))).tensors[0].bytes, 0);
});

test('a missing file and a directory give FILE_OPEN', () => {
  assert.throws(
    () => addon.readGguf(join(dir, 'nope.gguf')),
    (e: EngineError) => e.code === 'FILE_OPEN' && /nope\.gguf/.test(e.message),
  );
  assert.throws(
    () => addon.readGguf(dir),
    (e: EngineError) => e.code === 'FILE_OPEN' && /not a regular file/.test(e.message),
  );
});

test('random corruption of a valid file never crashes', () => {
  let seed = 12345;
  const rnd = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  const h = addon.readGguf(write(good));
  for (let i = 0; i < 300; i++) {
    const bad = good.slice();
    const flips = 1 + Math.floor(rnd() * 4);
    for (let k = 0; k < flips; k++) bad[Math.floor(rnd() * h.dataOffset)] = Math.floor(rnd() * 256);
    try {
      addon.readGguf(write(bad));
    } catch (e) {
      assert.match((e as EngineError).code, /^GGUF_/);
    }
  }
});
