// The models services (electron/models): the GGUF header reader on real and generated files and on
// hostile headers; discovery over fake LM Studio / Ollama / Hugging Face trees; downloads against a
// local HTTP server (progress, resume with Range, servers that ignore Range or change the file,
// checksums, abort, offline); catalog entries; the memory estimate's arithmetic and messages.
// Nothing here touches the internet: every server listens on 127.0.0.1 and DNS is faked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { ApiError, CatalogEntry } from '../electron/api/contract.ts';
import { CATALOG, catalogEntry } from '../electron/models/catalog.ts';
import {
  discoverModels,
  describeModelFile,
  knownRoots,
  modelId,
  splitName,
  type DiscoveredModel,
} from '../electron/models/discovery.ts';
import { downloadModel, parseHuggingFaceUrl, type DownloadProgress } from '../electron/models/download.ts';
import {
  estimateMemory,
  estimateForFile,
  formatBytes,
  keptPrefixTokens,
  kvBytesPerToken,
  largestFittingContext,
  shapeFromSummary,
  type ModelShape,
} from '../electron/models/estimate.ts';
import {
  fileTypeName,
  LLAMA_FILE_TYPES,
  inspectGguf,
  parseGgufHeader,
  readGgufHeader,
  summarizeGguf,
  type GgufHeader,
} from '../electron/models/gguf-header.ts';
import { withKey } from './helpers/gguf-mutator.ts';
import { readGguf } from './helpers/gguf-reader.ts';
import {
  arr,
  buildGguf,
  ByteWriter,
  f32Bytes,
  TensorType,
  u32,
  u64,
  ValueType,
  type GgufSpec,
  type MetaValue,
} from './helpers/gguf-writer.ts';
import { buildRandomModel, writeRandomModel } from './helpers/random-model.ts';
import { llama1b } from './helpers/model-shapes.ts';
import { missing, sharedModel } from './helpers/shared.ts';

const dir = mkdtempSync(join(tmpdir(), 'folio-models-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
let fileNo = 0;

function tmpFile(bytes: Uint8Array, name = `f${fileNo++}.gguf`): string {
  const p = join(dir, name);
  mkdirSync(dirname(p), { recursive: true });
  writeFileSync(p, bytes);
  return p;
}

async function rejectsWith(p: Promise<unknown>, code: string, message?: RegExp): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ApiError, `expected an ApiError, got ${String(e)}`);
    assert.equal(e.code, code, `expected ${code}, got ${e.code}: ${e.message}`);
    if (message) assert.match(e.message, message);
    return e;
  }
  throw new Error(`expected ${code}, but it succeeded`);
}

// ---------------------------------------------------------------------------------------------------
// GGUF header

test('header: the shared real models read like the reference reader reads them', async (t) => {
  for (const name of ['stories260K.gguf', 'llama-2-tiny-random.gguf', 'needle-llama.gguf']) {
    const path = sharedModel(name);
    await t.test(name, { skip: missing(path) }, async () => {
      const ref = readGguf(path);
      const h = await readGgufHeader(path, { keepArrayElements: Infinity });
      assert.equal(h.version, ref.version);
      assert.equal(h.dataOffset, ref.dataStart);
      assert.equal(h.alignment, ref.alignment);
      assert.deepEqual([...h.metadata.keys()], [...ref.metadata.keys()]);
      // the reference reader decodes with TextDecoder, which drops a leading byte-order mark: token
      // 30143 of the Llama-2 vocabulary is U+FEFF itself, and we keep it
      const noBom = (v: unknown): unknown =>
        typeof v === 'string' ? v.replace(/^\uFEFF/, '') : Array.isArray(v) ? v.map(noBom) : v;
      for (const [k, v] of ref.metadata) assert.deepEqual(noBom(h.metadata.get(k)), v, k);
      assert.deepEqual(
        h.tensors.map((x) => [x.name, x.dims, x.type, x.offset, x.nBytes]),
        ref.tensors.map((x) => [x.name, x.dims, x.type, x.offset, x.nBytes]),
      );
      const s = summarizeGguf(h);
      assert.equal(
        s.parameters,
        ref.tensors.reduce((a, x) => a + x.nElements, 0),
      );
      assert.equal(s.architecture, 'llama');
      assert.equal(s.supported, true);
    });
  }
  await t.test('stories260K summary', { skip: missing(sharedModel('stories260K.gguf')) }, async () => {
    const s = await inspectGguf(sharedModel('stories260K.gguf'));
    // shared/models/README.md: 5 layers, n_embd 64, 8 heads, 4 KV heads, head 8, vocab 512, context 512, all F32
    assert.deepEqual(
      [s.layers, s.embeddingLength, s.heads, s.kvHeads, s.headSize, s.vocabSize, s.contextLength],
      [5, 64, 8, 4, 8, 512, 512],
    );
    assert.equal(s.quantization, 'F32');
    assert.equal(s.tensorTypes[0].type, 'F32');
    assert.equal(s.fileBytes, statSync(sharedModel('stories260K.gguf')).size);
  });
  await t.test(
    'llama-2-tiny-random: F16 matrices',
    { skip: missing(sharedModel('llama-2-tiny-random.gguf')) },
    async () => {
      const s = await inspectGguf(sharedModel('llama-2-tiny-random.gguf'));
      assert.equal(s.quantization, 'F16');
      assert.equal(s.vocabSize, 32000);
      assert.deepEqual([s.layers, s.heads, s.kvHeads, s.contextLength], [1, 2, 2, 4096]);
    },
  );
});

test('header: generated models of every architecture and file type', async () => {
  const cases: [Parameters<typeof buildRandomModel>[0], string][] = [
    [{ arch: 'llama', type: 'F32' }, 'F32'],
    [{ arch: 'llama', type: 'F16' }, 'F16'],
    [{ arch: 'qwen2', type: 'Q8_0' }, 'Q8_0'],
    [{ arch: 'qwen3', type: 'Q4_0' }, 'Q4_0'],
    [{ arch: 'llama', type: 'Q4_K' }, 'Q4_K_S'], // random-model.ts writes file_type 14 for Q4_K matrices
    [{ arch: 'llama', type: 'Q6_K' }, 'Q6_K'],
    [{ arch: 'qwen2', type: 'BF16' }, 'BF16'],
  ];
  for (const [opts, quant] of cases) {
    const { bytes, config } = buildRandomModel({ ...opts, nLayer: 2, nHeadKv: 2 });
    const path = tmpFile(bytes);
    const s = await inspectGguf(path);
    const ref = readGguf(path);
    assert.equal(s.quantization, quant, JSON.stringify(opts));
    assert.equal(s.architecture, config.arch);
    assert.equal(s.supported, true);
    assert.equal(s.layers, config.nLayer);
    assert.equal(s.heads, config.nHead);
    assert.equal(s.kvHeads, config.nHeadKv);
    assert.equal(s.headSize, config.headDim);
    assert.equal(s.vocabSize, config.nVocab);
    assert.equal(s.contextLength, config.nCtx);
    assert.equal(s.embeddingLength, config.nEmbd);
    assert.equal(
      s.parameters,
      ref.tensors.reduce((a, x) => a + x.nElements, 0),
    );
    assert.equal(
      s.tensorBytes,
      ref.tensors.reduce((a, x) => a + x.nBytes, 0),
    );
  }
});

test('header: llama.cpp file type names', () => {
  // llama.cpp include/llama.h enum llama_ftype
  assert.deepEqual([15, 7, 1, 0, 2, 17, 18, 14, 12, 30, 32, 1024].map(fileTypeName), [
    'Q4_K_M',
    'Q8_0',
    'F16',
    'F32',
    'Q4_0',
    'Q5_K_M',
    'Q6_K',
    'Q4_K_S',
    'Q3_K_M',
    'IQ4_XS',
    'BF16',
    null,
  ]);
  // The model list shows these names: the hubs' names, never the enum's (ALL_F32, MOSTLY_Q4_0).
  for (const name of Object.values(LLAMA_FILE_TYPES)) assert.doesNotMatch(name, /^(ALL|MOSTLY)_/);
});

/** A small model file with hand-picked metadata (tensor data zero-filled). */
function modelWith(
  meta: [string, MetaValue][],
  tensors: { name: string; dims: number[]; type: number }[] = [],
): Uint8Array {
  const size = (type: number, n: number) =>
    type === TensorType.Q8_0 ? (n / 32) * 34 : type === TensorType.F16 ? n * 2 : n * 4;
  return buildGguf({
    metadata: meta,
    tensors: tensors.map((t) => ({
      ...t,
      data: new Uint8Array(
        size(
          t.type,
          t.dims.reduce((a, b) => a * b, 1),
        ),
      ),
    })),
  });
}

test('header: file type from the metadata, else the dominant tensor type; support decisions', async () => {
  const tensors = [
    { name: 'token_embd.weight', dims: [64, 100], type: TensorType.Q8_0 },
    { name: 'blk.0.attn_q.weight', dims: [64, 64], type: TensorType.Q8_0 },
    { name: 'blk.0.attn_norm.weight', dims: [64], type: TensorType.F32 },
    { name: 'output.weight', dims: [64, 100], type: TensorType.F16 },
  ];
  const base: [string, MetaValue][] = [
    ['general.architecture', 'llama'],
    ['llama.block_count', u32(1)],
  ];
  let s = await inspectGguf(tmpFile(modelWith([...base, ['general.file_type', u32(15)]], tensors)));
  assert.equal(s.quantization, 'Q4_K_M');
  s = await inspectGguf(tmpFile(modelWith([...base, ['general.file_type', u32(17)]], tensors)));
  assert.equal(s.quantization, 'Q5_K_M');
  s = await inspectGguf(tmpFile(modelWith(base, tensors)));
  assert.equal(s.quantization, 'Q8_0', 'no file_type: the type holding most bytes of the matrices');
  assert.equal(s.fileType, null);
  assert.equal(s.parameters, 64 * 100 * 2 + 64 * 64 + 64);

  s = await inspectGguf(tmpFile(modelWith([['general.architecture', 'gemma2']], tensors)));
  assert.equal(s.supported, false);
  assert.match(s.unsupportedReason!, /gemma2/);
  s = await inspectGguf(
    tmpFile(
      modelWith(
        [
          ['general.architecture', 'qwen3'],
          ['split.count', { type: ValueType.UINT16, value: 3 }],
        ],
        tensors,
      ),
    ),
  );
  assert.equal(s.supported, false);
  assert.match(s.unsupportedReason!, /split/);
  s = await inspectGguf(tmpFile(modelWith([['general.name', 'no arch']], tensors)));
  assert.equal(s.supported, false);
  assert.equal(s.name, 'no arch');
});

const everyType: GgufSpec = {
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
    [
      't.arr.big',
      arr(
        ValueType.STRING,
        Array.from({ length: 3000 }, (_, i) => `token${i}`),
      ),
    ],
  ],
  tensors: [
    { name: 'a', dims: [4, 2], type: TensorType.F32, data: f32Bytes([1, 2, 3, 4, 5, 6, 7, 8]) },
    { name: 'b', dims: [32], type: TensorType.Q8_0, data: new Uint8Array(34) },
    { name: 'c', dims: [3], type: TensorType.F32, data: f32Bytes([9, 9, 9]) },
  ],
};
const everyTypeBytes = buildGguf(everyType);

function checkEveryType(h: GgufHeader) {
  const m = h.metadata;
  assert.equal(m.get('t.u8'), 200);
  assert.equal(m.get('t.i8'), -100);
  assert.equal(m.get('t.u16'), 60000);
  assert.equal(m.get('t.i16'), -30000);
  assert.equal(m.get('t.u32'), 4000000000);
  assert.equal(m.get('t.i32'), -2000000000);
  assert.equal(m.get('t.f32'), 1.5);
  assert.equal(m.get('t.bool'), true);
  assert.equal(m.get('t.str'), 'héllo ✓');
  assert.equal(m.get('t.u64'), 2n ** 40n);
  assert.equal(m.get('t.i64'), -(2n ** 40n));
  assert.equal(m.get('t.f64'), Math.PI);
  assert.deepEqual(m.get('t.arr.str'), ['a', 'bb', '']);
  assert.deepEqual(m.get('t.arr.i32'), [1, -2, 3]);
  assert.deepEqual(m.get('t.arr.f32'), [0.5, 0.25]);
  assert.deepEqual(m.get('t.arr.bool'), [true, false]);
  assert.deepEqual(m.get('t.arr.nested'), [[1, 2], ['x']]);
  assert.deepEqual(m.get('t.arr.empty'), []);
  // long arrays are walked, not kept
  assert.deepEqual(m.get('t.arr.big'), { kind: 'array', elementType: ValueType.STRING, length: 3000 });
  assert.deepEqual(h.types.get('t.arr.nested'), { type: ValueType.ARRAY, elementType: ValueType.ARRAY });
  assert.deepEqual(
    h.tensors.map((x) => [x.name, x.dims, x.type, x.offset, x.nBytes]),
    [
      ['a', [4, 2], 0, 0, 32],
      ['b', [32], 8, 32, 34],
      ['c', [3], 0, 96, 12],
    ],
  );
  assert.equal(h.dataOffset, readGguf(h.path).dataStart);
}

test('header: every value type, versions 2 and 3, any chunk size', async () => {
  const p3 = tmpFile(everyTypeBytes);
  checkEveryType(await readGgufHeader(p3));
  // tiny chunks put every value across a chunk boundary somewhere
  for (const chunkBytes of [1, 3, 7, 64]) checkEveryType(await readGgufHeader(p3, { chunkBytes }));
  const p2 = tmpFile(buildGguf({ ...everyType, version: 2 }));
  const h2 = await readGgufHeader(p2);
  assert.equal(h2.version, 2);
  checkEveryType(h2);
  const p64 = tmpFile(
    buildGguf({
      ...everyType,
      alignment: 64,
      metadata: [...(everyType.metadata as [string, MetaValue][]), ['general.alignment', u32(64)]],
    }),
  );
  const h64 = await readGgufHeader(p64);
  assert.equal(h64.alignment, 64);
  assert.deepEqual(
    h64.tensors.map((x) => x.offset),
    [0, 64, 128],
  );
});

/** A file with a hand-made header. */
function header(build: (w: ByteWriter) => void): Uint8Array {
  const w = new ByteWriter();
  build(w);
  return w.result();
}
const magic = (w: ByteWriter, version = 3) => {
  w.bytes(Buffer.from('GGUF'));
  w.u32(version);
};

test('header: a file cut anywhere gives an error, never a crash', async () => {
  const small = buildGguf({
    ...everyType,
    metadata: (everyType.metadata as [string, MetaValue][]).filter(([k]) => k !== 't.arr.big'),
  });
  const expectCut = (e: unknown, n: number) => {
    assert.ok(e instanceof ApiError, String(e));
    const ok =
      n < 4
        ? e.code === 'GGUF_BAD_MAGIC'
        : ['GGUF_TRUNCATED', 'GGUF_BAD_LENGTH', 'GGUF_BAD_COUNT', 'GGUF_TENSOR_OUT_OF_FILE'].includes(e.code);
    assert.ok(ok, `cut at ${n}: ${e.code}: ${e.message}`);
    assert.ok(e.message.length > 20);
  };
  // every cut of a small header, and cuts through a long string array, in memory
  const h = await parseGgufHeader(small);
  for (let n = 0; n < h.dataOffset + 108; n++) {
    // the last tensor ends at 108; after it, only padding
    await parseGgufHeader(small.subarray(0, n)).then(
      () => assert.fail(`a cut at ${n} was accepted`),
      (e) => expectCut(e, n),
    );
  }
  for (let n = 0; n < everyTypeBytes.length; n += 97) {
    await parseGgufHeader(everyTypeBytes.subarray(0, n), 'cut', { chunkBytes: 4096 }).then(
      () => assert.fail(`a cut at ${n} was accepted`),
      (e) => expectCut(e, n),
    );
  }
  // and a few cut files on disk
  const p = join(dir, 'cut.gguf');
  for (const n of [0, 3, 11, 30, 200, h.dataOffset - 1, h.dataOffset + 40]) {
    writeFileSync(p, small.subarray(0, n));
    await readGgufHeader(p).then(
      () => assert.fail(`a file cut at ${n} was accepted`),
      (e) => expectCut(e, n),
    );
  }
  // a cut inside the tensor data names the tensor (a: bytes 0-31, b: 32-65, c: 96-107 of the data)
  for (const [cut, name] of [
    [10, 'a'],
    [40, 'b'],
    [100, 'c'],
  ] as const) {
    await assert.rejects(parseGgufHeader(small.subarray(0, h.dataOffset + cut)), new RegExp(`tensor '${name}'`));
  }
});

test('header: hostile counts, lengths and types are rejected without allocating', async () => {
  const cases: [string, Uint8Array, string][] = [
    ['not GGUF', Buffer.from('PK\x03\x04 a zip file, not a model'), 'GGUF_BAD_MAGIC'],
    [
      'version 1',
      header((w) => {
        magic(w, 1);
        w.u64(0);
        w.u64(0);
      }),
      'GGUF_VERSION',
    ],
    [
      'version 7',
      header((w) => {
        magic(w, 7);
        w.u64(0);
        w.u64(0);
      }),
      'GGUF_VERSION',
    ],
    [
      'big-endian',
      header((w) => {
        magic(w, 0x03000000);
        w.u64(0);
        w.u64(0);
      }),
      'GGUF_VERSION',
    ],
    [
      '2^60 tensors',
      header((w) => {
        magic(w);
        w.u64(2n ** 60n);
        w.u64(0);
      }),
      'GGUF_BAD_COUNT',
    ],
    [
      '2^63 metadata entries',
      header((w) => {
        magic(w);
        w.u64(0);
        w.u64(2n ** 63n);
      }),
      'GGUF_BAD_COUNT',
    ],
    [
      'a 2^62-byte key',
      header((w) => {
        magic(w);
        w.u64(0);
        w.u64(1);
        w.u64(2n ** 62n);
        w.bytes(new Uint8Array(64));
      }),
      'GGUF_BAD_LENGTH',
    ],
    [
      'a 2^40-byte string value',
      header((w) => {
        magic(w);
        w.u64(0);
        w.u64(1);
        w.str('k');
        w.u32(ValueType.STRING);
        w.u64(2n ** 40n);
        w.bytes(new Uint8Array(64));
      }),
      'GGUF_BAD_LENGTH',
    ],
    [
      'an array of 2^50 u32',
      header((w) => {
        magic(w);
        w.u64(0);
        w.u64(1);
        w.str('k');
        w.u32(ValueType.ARRAY);
        w.u32(ValueType.UINT32);
        w.u64(2n ** 50n);
        w.bytes(new Uint8Array(64));
      }),
      'GGUF_BAD_COUNT',
    ],
    [
      'an array of 2^40 strings',
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
    ],
    [
      'value type 99',
      header((w) => {
        magic(w);
        w.u64(0);
        w.u64(1);
        w.str('k');
        w.u32(99);
        w.u32(0);
      }),
      'GGUF_BAD_VALUE_TYPE',
    ],
    [
      'array element type 42',
      header((w) => {
        magic(w);
        w.u64(0);
        w.u64(1);
        w.str('k');
        w.u32(ValueType.ARRAY);
        w.u32(42);
        w.u64(0);
      }),
      'GGUF_BAD_VALUE_TYPE',
    ],
    [
      'bool 2',
      header((w) => {
        magic(w);
        w.u64(0);
        w.u64(1);
        w.str('k');
        w.u32(ValueType.BOOL);
        w.u8(2);
      }),
      'GGUF_BAD_VALUE',
    ],
    [
      'arrays nested 9 deep',
      header((w) => {
        magic(w);
        w.u64(0);
        w.u64(1);
        w.str('k');
        w.u32(ValueType.ARRAY);
        for (let i = 0; i < 9; i++) {
          w.u32(ValueType.ARRAY);
          w.u64(1);
        }
        w.u32(ValueType.UINT8);
        w.u64(0);
      }),
      'GGUF_BAD_VALUE',
    ],
    [
      'duplicate key',
      header((w) => {
        magic(w);
        w.u64(0);
        w.u64(2);
        for (let i = 0; i < 2; i++) {
          w.str('k');
          w.u32(ValueType.UINT8);
          w.u8(1);
        }
      }),
      'GGUF_DUPLICATE',
    ],
    [
      'alignment 48',
      header((w) => {
        magic(w);
        w.u64(0);
        w.u64(1);
        w.str('general.alignment');
        w.u32(ValueType.UINT32);
        w.u32(48);
      }),
      'GGUF_ALIGNMENT',
    ],
    [
      '5 dimensions',
      header((w) => {
        magic(w);
        w.u64(1);
        w.u64(0);
        w.str('t');
        w.u32(5);
        for (let i = 0; i < 5; i++) w.u64(1);
        w.u32(0);
        w.u64(0);
        w.bytes(new Uint8Array(64));
      }),
      'GGUF_BAD_TENSOR',
    ],
    [
      'dims overflow',
      header((w) => {
        magic(w);
        w.u64(1);
        w.u64(0);
        w.str('t');
        w.u32(2);
        w.u64(2n ** 40n);
        w.u64(2n ** 40n);
        w.u32(0);
        w.u64(0);
        w.bytes(new Uint8Array(64));
      }),
      'GGUF_BAD_TENSOR',
    ],
    [
      'tensor type 77',
      header((w) => {
        magic(w);
        w.u64(1);
        w.u64(0);
        w.str('t');
        w.u32(1);
        w.u64(4);
        w.u32(77);
        w.u64(0);
        w.bytes(new Uint8Array(64));
      }),
      'GGUF_BAD_TENSOR_TYPE',
    ],
    [
      'Q8_0 row of 33',
      header((w) => {
        magic(w);
        w.u64(1);
        w.u64(0);
        w.str('t');
        w.u32(1);
        w.u64(33);
        w.u32(8);
        w.u64(0);
        w.bytes(new Uint8Array(64));
      }),
      'GGUF_BAD_TENSOR',
    ],
    [
      'offset not aligned',
      header((w) => {
        magic(w);
        w.u64(1);
        w.u64(0);
        w.str('t');
        w.u32(1);
        w.u64(4);
        w.u32(0);
        w.u64(3);
        w.bytes(new Uint8Array(64));
      }),
      'GGUF_ALIGNMENT',
    ],
    [
      'tensor past the end',
      header((w) => {
        magic(w);
        w.u64(1);
        w.u64(0);
        w.str('t');
        w.u32(1);
        w.u64(1 << 20);
        w.u32(0);
        w.u64(0);
        w.padTo(32);
        w.bytes(new Uint8Array(64));
      }),
      'GGUF_TENSOR_OUT_OF_FILE',
    ],
  ];
  for (const [what, bytes, code] of cases) {
    const started = Date.now();
    await rejectsWith(readGgufHeader(tmpFile(bytes)), code);
    // a few file operations; generous for a busy machine
    assert.ok(Date.now() - started < 2000, `${what} took ${Date.now() - started} ms`);
  }
});

test('header: a huge sparse file with a hostile array stops at the header limit', async () => {
  // 2^26 empty strings claimed in a 1 GiB sparse file: the count fits the file, so the reader walks
  // them until the header passes maxHeaderBytes
  const p = tmpFile(
    header((w) => {
      magic(w);
      w.u64(0);
      w.u64(1);
      w.str('k');
      w.u32(ValueType.ARRAY);
      w.u32(ValueType.STRING);
      w.u64(2n ** 26n);
    }),
  );
  truncateSync(p, 1 << 30);
  const started = Date.now();
  await rejectsWith(readGgufHeader(p, { maxHeaderBytes: 4 << 20 }), 'GGUF_TOO_LARGE');
  assert.ok(Date.now() - started < 10_000, `took ${Date.now() - started} ms`);
  await rejectsWith(readGgufHeader(join(dir, 'nope.gguf')), 'FILE_NOT_FOUND');
  await rejectsWith(readGgufHeader(dir), 'FILE_UNREADABLE');
});

// ---------------------------------------------------------------------------------------------------
// Discovery

function model(path: string, opts: Parameters<typeof writeRandomModel>[1] = {}): string {
  mkdirSync(dirname(path), { recursive: true });
  writeRandomModel(path, { type: 'Q8_0', nLayer: 1, ...opts });
  return path;
}

function put(path: string, bytes: Uint8Array | string): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, bytes);
  return path;
}

function sha256(b: Uint8Array): string {
  return createHash('sha256').update(b).digest('hex');
}

test('discovery: LM Studio, Ollama and Hugging Face stores, user folders and files', async () => {
  const home = join(dir, 'home');
  const env = { HF_HOME: join(home, 'hf') };
  const o = { home, env, systemWide: false };

  // LM Studio: publisher/repo/file, plus things that are not models
  const lms = join(home, '.lmstudio', 'models');
  model(join(lms, 'lmstudio-community', 'Qwen-GGUF', 'Qwen-Q8_0.gguf'), { arch: 'qwen2' });
  put(join(lms, 'lmstudio-community', 'Qwen-GGUF', 'README.md'), '# not a model');
  put(join(lms, 'x', 'y', 'fake.gguf'), 'this is text, not GGUF');
  const truncated = buildRandomModel({ nLayer: 1 }).bytes;
  put(join(lms, 'x', 'y', 'half.gguf'), truncated.subarray(0, truncated.length >> 1));
  const split = buildGguf({
    metadata: [
      ['general.architecture', 'llama'],
      ['split.count', { type: ValueType.UINT16, value: 2 }],
    ],
    tensors: [{ name: 'a', dims: [8], type: TensorType.F32, data: new Uint8Array(32) }],
  });
  put(join(lms, 'big', 'Big-00001-of-00002.gguf'), split);
  put(join(lms, 'big', 'Big-00002-of-00002.gguf'), split);
  put(join(lms, 'big', 'Orphan-00002-of-00003.gguf'), split);
  put(join(lms, 'vision', 'mmproj-f16.gguf'), modelWith([['general.architecture', 'clip']]));
  // the older LM Studio folder, and the folder LM Studio's settings point to
  model(join(home, '.cache', 'lm-studio', 'models', 'old', 'repo', 'Old.gguf'));
  const custom = join(dir, 'lmstudio-custom');
  model(join(custom, 'pub', 'repo', 'Custom.gguf'));
  put(join(home, '.lmstudio', 'settings.json'), JSON.stringify({ downloadsFolder: custom, other: 1 }));

  // Ollama: two tags of one blob, a user namespace, a missing blob, a broken manifest
  const ollama = join(home, '.ollama', 'models');
  const blobBytes = buildRandomModel({ type: 'Q8_0', nLayer: 1, seed: 7 }).bytes;
  const digest = sha256(blobBytes);
  put(join(ollama, 'blobs', `sha256-${digest}`), blobBytes);
  const manifest = (d: string) =>
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
      config: {
        mediaType: 'application/vnd.docker.container.image.v1+json',
        digest: `sha256:${'1'.repeat(64)}`,
        size: 10,
      },
      layers: [
        { mediaType: 'application/vnd.ollama.image.template', digest: `sha256:${'2'.repeat(64)}`, size: 5 },
        { mediaType: 'application/vnd.ollama.image.model', digest: `sha256:${d}`, size: 100 },
      ],
    });
  const lib = join(ollama, 'manifests', 'registry.ollama.ai', 'library');
  put(join(lib, 'tiny', 'latest'), manifest(digest));
  put(join(lib, 'tiny', '1b'), manifest(digest));
  put(join(ollama, 'manifests', 'registry.ollama.ai', 'someone', 'thing', 'q8'), manifest(digest));
  put(join(lib, 'gone', 'latest'), manifest('3'.repeat(64)));
  put(join(lib, 'broken', 'latest'), '{ not json');
  const otherBlob = buildRandomModel({ type: 'Q8_0', nLayer: 1, seed: 8, arch: 'qwen3' }).bytes;
  put(join(ollama, 'blobs', `sha256-${sha256(otherBlob)}`), otherBlob);
  put(join(ollama, 'manifests', 'hf.co', 'org', 'repo', 'Q8_0'), manifest(sha256(otherBlob)));

  // Hugging Face cache: snapshots link into blobs; two revisions share the blob
  const repo = join(home, 'hf', 'hub', 'models--Qwen--Qwen2.5-0.5B-Instruct-GGUF');
  const hfBytes = buildRandomModel({ type: 'Q8_0', nLayer: 1, seed: 9, arch: 'qwen2' }).bytes;
  put(join(repo, 'blobs', sha256(hfBytes)), hfBytes);
  for (const rev of ['aaaaaaa111', 'bbbbbbb222']) {
    mkdirSync(join(repo, 'snapshots', rev), { recursive: true });
    symlinkSync(
      join('..', '..', 'blobs', sha256(hfBytes)),
      join(repo, 'snapshots', rev, 'qwen2.5-0.5b-instruct-q8_0.gguf'),
    );
  }
  put(join(repo, 'refs', 'main'), 'bbbbbbb222');
  const repo2 = join(home, 'hf', 'hub', 'models--org--two-files');
  model(join(repo2, 'snapshots', 'r1', 'a-Q8_0.gguf'), { seed: 10 });
  model(join(repo2, 'snapshots', 'r1', 'sub', 'b-F32.gguf'), { seed: 11, type: 'F32' });
  mkdirSync(join(repo2, 'snapshots', 'r1'), { recursive: true });
  symlinkSync(join('..', '..', 'blobs', 'missing'), join(repo2, 'snapshots', 'r1', 'broken.gguf'));

  // a user folder with a symlink loop and a deep file, a user file, a user file that is not GGUF
  const userFolder = join(dir, 'user-models');
  model(join(userFolder, 'Mine.gguf'), { seed: 12 });
  symlinkSync(userFolder, join(userFolder, 'loop'));
  model(join(userFolder, 'a', 'b', 'c', 'd', 'e', 'Deep.gguf'), { seed: 13 });
  const single = model(join(dir, 'single', 'Single.gguf'), { seed: 14, arch: 'qwen3' });
  const notGguf = put(join(dir, 'single', 'notes.gguf'), 'hello');

  const started = Date.now();
  const r = await discoverModels({ ...o, folders: [userFolder], files: [single, notGguf], maxDepth: 4 });
  assert.ok(Date.now() - started < 10_000);
  const byName = new Map(r.models.map((m) => [m.name, m]));
  const names = [...byName.keys()].sort();
  assert.deepEqual(
    names,
    [
      'Big',
      'Custom',
      'Mine',
      'Old',
      'Qwen-Q8_0',
      'Qwen/Qwen2.5-0.5B-Instruct-GGUF',
      'Single',
      'half',
      'hf.co/org/repo:Q8_0',
      'org/two-files/a-Q8_0',
      'org/two-files/sub/b-F32',
      'tiny:1b',
    ].sort(),
  );

  const qwen = byName.get('Qwen-Q8_0')!;
  assert.equal(qwen.source, 'lmstudio');
  assert.equal(qwen.architecture, 'qwen2');
  assert.equal(qwen.quantization, 'Q8_0');
  assert.equal(qwen.supported, true);
  assert.equal(qwen.error, null);
  assert.equal(qwen.id, modelId(realpathSync(qwen.path)));
  assert.ok(qwen.parameters! > 0 && qwen.layers === 1 && qwen.kvHeads === 2 && qwen.contextLength === 256);
  assert.equal(qwen.headSize, 64);
  assert.equal(qwen.vocabSize, 320);
  assert.equal(byName.get('Old')!.source, 'lmstudio');
  assert.equal(byName.get('Custom')!.source, 'lmstudio');

  const half = byName.get('half')!;
  assert.equal(half.supported, false);
  assert.match(half.error!, /truncated|outside the file|remain/);
  assert.equal(half.architecture, null);

  const big = byName.get('Big')!;
  assert.equal(big.supported, false);
  assert.match(big.unsupportedReason!, /split into 2 files/);
  assert.equal(big.parts.length, 2);
  assert.equal(big.fileBytes, split.length * 2);
  assert.equal(big.parameters, 16, 'both parts count');

  const tiny = byName.get('tiny:1b')!;
  assert.equal(tiny.source, 'ollama');
  assert.equal(tiny.path, join(ollama, 'blobs', `sha256-${digest}`));
  assert.deepEqual(tiny.aliases.sort(), ['someone/thing:q8', 'tiny:latest']);
  assert.equal(byName.get('hf.co/org/repo:Q8_0')!.architecture, 'qwen3');

  const hf = byName.get('Qwen/Qwen2.5-0.5B-Instruct-GGUF')!;
  assert.equal(hf.source, 'huggingface');
  assert.match(hf.path, /snapshots.bbbbbbb222/, 'the revision refs/main names comes first');
  assert.equal(hf.realPath, realpathSync(join(repo, 'blobs', sha256(hfBytes))));
  assert.equal(byName.get('org/two-files/sub/b-F32')!.quantization, 'F32');

  assert.equal(byName.get('Mine')!.source, 'folder');
  assert.equal(byName.get('Single')!.source, 'added');
  assert.equal(byName.get('Single')!.architecture, 'qwen3');
  assert.ok(!byName.has('Deep'), 'deeper than maxDepth');

  const reasons = r.skipped.map((s) => `${s.path.slice(dir.length)} :: ${s.reason}`).join('\n');
  for (const [file, why] of [
    ['fake.gguf', /not a GGUF file/],
    ['Orphan-00002-of-00003.gguf', /first part is missing/],
    ['mmproj-f16.gguf', /projector/],
    ['3'.repeat(64), /blob of gone:latest is missing/],
    [join('broken', 'latest'), /cannot read the Ollama manifest/],
    ['broken.gguf', /broken link/],
    ['notes.gguf', /not a GGUF file/],
  ] as const) {
    const s = r.skipped.find((x) => x.path.endsWith(file));
    assert.ok(s, `${file} should be skipped; skipped:\n${reasons}`);
    assert.match(s.reason, why);
  }
  assert.ok(!r.skipped.some((s) => s.path.endsWith('README.md')), 'files that are not *.gguf are ignored silently');
  assert.ok(r.roots.some((x) => x.path === custom && x.exists));

  // a second scan gives the same ids; the deep file appears with a deeper search
  const again = await discoverModels({ ...o, folders: [userFolder], files: [single], maxDepth: 8 });
  const ids = (m: DiscoveredModel[]) => new Map(m.map((x) => [x.name, x.id]));
  for (const [name, id] of ids(r.models))
    if (ids(again.models).has(name)) assert.equal(ids(again.models).get(name), id, name);
  assert.ok(again.models.some((m) => m.name === 'Deep'));
});

test('discovery: roots come from the environment; missing places are fine', async () => {
  const home = join(dir, 'home2');
  const roots = knownRoots({ home, env: { OLLAMA_MODELS: '/srv/ollama', HF_HUB_CACHE: '/srv/hf' }, platform: 'win32' });
  assert.deepEqual(
    roots.map((r) => [r.source, r.path]),
    [
      ['lmstudio', join(home, '.lmstudio', 'models')],
      ['lmstudio', join(home, '.cache', 'lm-studio', 'models')],
      ['ollama', '/srv/ollama'],
      ['huggingface', '/srv/hf'],
    ],
  );
  const xdg = knownRoots({ home, env: { XDG_CACHE_HOME: '/x' }, platform: 'linux', systemWide: false });
  assert.deepEqual(xdg.map((r) => r.path).slice(2), [
    join(home, '.ollama', 'models'),
    join('/x', 'huggingface', 'hub'),
  ]);

  const ollama = join(dir, 'ollama-env');
  const bytes = buildRandomModel({ nLayer: 1, type: 'Q8_0' }).bytes;
  put(join(ollama, 'blobs', `sha256-${sha256(bytes)}`), bytes);
  put(
    join(ollama, 'manifests', 'registry.ollama.ai', 'library', 'm', 'latest'),
    JSON.stringify({
      layers: [{ mediaType: 'application/vnd.ollama.image.model', digest: `sha256:${sha256(bytes)}` }],
    }),
  );
  const r = await discoverModels({ home, env: { OLLAMA_MODELS: ollama }, systemWide: false });
  assert.deepEqual(
    r.models.map((m) => [m.name, m.source]),
    [['m:latest', 'ollama']],
  );
  assert.deepEqual(r.skipped, []);

  const empty = await discoverModels({ home: join(dir, 'nobody'), env: {}, systemWide: false });
  assert.deepEqual(empty.models, []);
  assert.ok(empty.roots.every((x) => !x.exists));
});

test('discovery: describing one added file', async () => {
  const p = model(join(dir, 'add', 'One.gguf'));
  const m = await describeModelFile(p);
  assert.equal(m.name, 'One');
  assert.equal(m.source, 'added');
  assert.equal(m.supported, true);
  await rejectsWith(describeModelFile(put(join(dir, 'add', 'x.gguf'), 'nope')), 'GGUF_BAD_MAGIC');
  await rejectsWith(describeModelFile(join(dir, 'add', 'missing.gguf')), 'FILE_NOT_FOUND');
  await rejectsWith(describeModelFile(join(dir, 'add', 'M-00002-of-00004.gguf')), 'MODEL_SPLIT_PART');
  assert.deepEqual(splitName('Qwen-00001-of-00003.gguf'), { stem: 'Qwen', index: 1, count: 3 });
  assert.equal(splitName('Qwen.gguf'), null);
});

test('discovery: a file with a wrong-typed key is listed as broken, naming the key, before any load', async () => {
  // issue 14 item 6: such a file was listed as supported, and loading it aborted the engine
  const { bytes } = buildRandomModel({ seed: 2, nEmbd: 64, nHead: 4, nFf: 64, nLayer: 1 });
  for (const [key, value, found] of [
    ['tokenizer.chat_template', u32(3), 'a string but is uint32'],
    ['general.file_type', 'Q4_K_M', 'an integer but is string'],
  ] as const) {
    const m = await describeModelFile(tmpFile(withKey(bytes, key, value), join('typed', `${key}.gguf`)));
    assert.equal(m.supported, false, `${key}: listed as supported`);
    assert.ok(m.unsupportedReason!.includes(`broken: metadata key '${key}' should be ${found}`), m.unsupportedReason!);
  }
});

// ---------------------------------------------------------------------------------------------------
// Downloads

const payload = randomBytes(3 * 1024 * 1024 + 12345);
const payloadSha = sha256(payload);

interface Seen {
  path: string;
  headers: IncomingMessage['headers'];
}

async function startServer(
  handle: (req: IncomingMessage, res: ServerResponse, seen: Seen[]) => void,
): Promise<{ base: string; port: number; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', headers: req.headers });
    handle(req, res, seen);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { base: `http://127.0.0.1:${port}`, port, seen, server };
}

async function stop(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

interface ServeOptions {
  body?: Buffer;
  etag?: string;
  ignoreRange?: boolean;
  /** Send this many body bytes of a full (non-range) response, then cut the connection. */
  dropAfter?: number;
  /** Send a full response in slow 64 KiB pieces. */
  slow?: boolean;
  headers?: Record<string, string>;
}

function serve(req: IncomingMessage, res: ServerResponse, o: ServeOptions = {}): void {
  const body = o.body ?? payload;
  const headers: Record<string, string> = { 'content-type': 'application/octet-stream', ...(o.headers ?? {}) };
  if (o.etag) headers.etag = o.etag;
  const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
  if (m && !o.ignoreRange) {
    const start = Number(m[1]);
    if (start >= body.length) {
      res.writeHead(416, { ...headers, 'content-range': `bytes */${body.length}` });
      res.end();
      return;
    }
    res.writeHead(206, {
      ...headers,
      'content-range': `bytes ${start}-${body.length - 1}/${body.length}`,
      'content-length': String(body.length - start),
    });
    res.end(body.subarray(start));
    return;
  }
  res.writeHead(200, { ...headers, 'content-length': String(body.length) });
  if (o.dropAfter !== undefined) {
    res.write(body.subarray(0, o.dropAfter), () => setTimeout(() => res.socket?.destroy(), 20));
    return;
  }
  if (o.slow) {
    let at = 0;
    const tick = () => {
      if (res.destroyed) return;
      const next = Math.min(body.length, at + 65536);
      res.write(body.subarray(at, next));
      at = next;
      if (at < body.length) setTimeout(tick, 15);
      else res.end();
    };
    tick();
    return;
  }
  res.end(body);
}

const fakeDns: LookupFunction = (_host, options, callback) => {
  const cb = callback as (err: NodeJS.ErrnoException | null, address: unknown, family?: number) => void;
  if ((options as { all?: boolean }).all) cb(null, [{ address: '127.0.0.1', family: 4 }]);
  else cb(null, '127.0.0.1', 4);
};

test('download: a full download with progress, then EXISTS', async () => {
  const { base, server, seen } = await startServer((req, res) => serve(req, res, { etag: '"v1"' }));
  try {
    const dest = join(dir, 'dl-full');
    const progress: DownloadProgress[] = [];
    const r = await downloadModel({
      url: `${base}/m/model.gguf`,
      destDir: dest,
      allowedHosts: ['127.0.0.1'],
      onProgress: (p) => progress.push(p),
      progressIntervalMs: 0,
    });
    assert.equal(r.path, join(dest, 'model.gguf'));
    assert.equal(r.bytes, payload.length);
    assert.equal(r.sha256, payloadSha);
    assert.equal(r.verifiedWith, null);
    assert.equal(r.resumedFrom, 0);
    assert.ok(readFileSync(r.path).equals(payload));
    assert.ok(!existsSync(`${r.path}.part`) && !existsSync(`${r.path}.part.json`));
    assert.ok(progress.length >= 2);
    const last = progress[progress.length - 1];
    assert.equal(last.bytes, payload.length);
    assert.equal(last.total, payload.length);
    assert.ok(progress.every((p, i) => i === 0 || p.bytes >= progress[i - 1].bytes));
    assert.ok(progress.every((p) => p.bytesPerSecond >= 0));
    assert.equal(seen[0].headers.range, undefined);
    await rejectsWith(
      downloadModel({ url: `${base}/m/model.gguf`, destDir: dest, allowedHosts: ['127.0.0.1'] }),
      'EXISTS',
    );
    await rejectsWith(downloadModel({ url: `${base}/m/model.gguf`, destDir: dest }), 'BAD_URL', /huggingface\.co/);
    await rejectsWith(
      downloadModel({ url: `${base}/m/readme.md`, destDir: dest, allowedHosts: ['127.0.0.1'] }),
      'BAD_URL',
    );
  } finally {
    await stop(server);
  }
});

test('download: a dropped connection, then a resume with Range that ends with the right SHA-256', async () => {
  let first = true;
  const { base, server, seen } = await startServer((req, res) => {
    const drop = first && !req.headers.range;
    first = false;
    serve(req, res, { etag: '"abc"', dropAfter: drop ? payload.length >> 1 : undefined });
  });
  try {
    const dest = join(dir, 'dl-resume');
    const url = `${base}/m/model.gguf`;
    await rejectsWith(
      downloadModel({ url, destDir: dest, allowedHosts: ['127.0.0.1'], retries: 0, sha256: payloadSha }),
      'INTERRUPTED',
    );
    const part = join(dest, 'model.gguf.part');
    const partSize = statSync(part).size;
    assert.ok(partSize > 0 && partSize < payload.length, `part has ${partSize} bytes`);
    assert.ok(!existsSync(join(dest, 'model.gguf')), 'a partial file never looks complete');

    const progress: DownloadProgress[] = [];
    const r = await downloadModel({
      url,
      destDir: dest,
      allowedHosts: ['127.0.0.1'],
      sha256: payloadSha,
      onProgress: (p) => progress.push(p),
    });
    assert.equal(seen[1].headers.range, `bytes=${partSize}-`);
    assert.equal(seen[1].headers['if-range'], '"abc"');
    assert.equal(r.resumedFrom, partSize);
    assert.equal(r.sha256, payloadSha);
    assert.equal(r.verifiedWith, 'expected');
    assert.ok(readFileSync(r.path).equals(payload));
    assert.equal(progress[0].resumedFrom, partSize);
  } finally {
    await stop(server);
  }
});

test('download: retries on its own after an interruption', async () => {
  const { base, server, seen } = await startServer((req, res) =>
    serve(req, res, { dropAfter: req.headers.range ? undefined : 100_000 }),
  );
  try {
    const r = await downloadModel({
      url: `${base}/model.gguf`,
      destDir: join(dir, 'dl-retry'),
      allowedHosts: ['127.0.0.1'],
      retries: 3,
      retryDelayMs: 5,
    });
    assert.equal(r.sha256, payloadSha);
    assert.equal(seen.length, 2, 'one cut, one resume');
    assert.match(String(seen[1].headers.range), /^bytes=\d+-$/);
    assert.ok(r.resumedFrom > 0);
  } finally {
    await stop(server);
  }
});

test('download: a server that ignores Range restarts the file cleanly', async () => {
  const { base, server, seen } = await startServer((req, res) => serve(req, res, { ignoreRange: true }));
  try {
    const dest = join(dir, 'dl-norange');
    const url = `${base}/model.gguf`;
    // a .part from an earlier attempt (its bytes are garbage: the server's 200 must replace them)
    put(join(dest, 'model.gguf.part'), randomBytes(50_000));
    put(
      join(dest, 'model.gguf.part.json'),
      JSON.stringify({ url, etag: null, linkedEtag: null, total: payload.length }),
    );
    const r = await downloadModel({ url, destDir: dest, allowedHosts: ['127.0.0.1'] });
    assert.equal(seen[0].headers.range, 'bytes=50000-');
    assert.equal(r.resumedFrom, 0);
    assert.equal(r.sha256, payloadSha);
    assert.ok(readFileSync(r.path).equals(payload));
  } finally {
    await stop(server);
  }
});

test('download: a file that changed between attempts is downloaded again from zero', async () => {
  const v2 = randomBytes(payload.length - 1000);
  let calls = 0;
  const { base, server, seen } = await startServer((req, res) => {
    calls++;
    // the first response is cut short; afterwards the server has a new version (and ignores If-Range)
    if (calls === 1) serve(req, res, { etag: '"v1"', dropAfter: 200_000 });
    else serve(req, res, { etag: '"v2"', body: v2 });
  });
  try {
    const dest = join(dir, 'dl-changed');
    const url = `${base}/model.gguf`;
    await rejectsWith(downloadModel({ url, destDir: dest, allowedHosts: ['127.0.0.1'], retries: 0 }), 'INTERRUPTED');
    // What arrived before the cut (up to 200,000 bytes: the end can be lost with the connection).
    const kept = statSync(join(dest, 'model.gguf.part')).size;
    assert.ok(kept > 0 && kept <= 200_000, `kept ${kept}`);
    const r = await downloadModel({ url, destDir: dest, allowedHosts: ['127.0.0.1'] });
    assert.equal(r.restarts, 1);
    assert.equal(seen[1].headers.range, `bytes=${kept}-`);
    assert.equal(seen[2].headers.range, undefined);
    assert.equal(r.sha256, sha256(v2));
    assert.equal(r.bytes, v2.length);
  } finally {
    await stop(server);
  }
});

test('download: checksums from the caller and from X-Linked-Etag behind a redirect', async () => {
  const corrupted = Buffer.from(payload);
  corrupted[12345] ^= 0xff;
  const { base, port, server, seen } = await startServer((req, res) => {
    const p = req.url ?? '';
    if (p.startsWith('/Org/Repo/resolve/main/')) {
      // huggingface.co answers a file in Git LFS with a redirect to its CDN and the file's SHA-256
      const file = p.split('/').pop();
      res.writeHead(302, {
        location: `http://cdn.test:${port}/cdn/${file}`,
        'x-linked-etag': `"${payloadSha}"`,
        'x-linked-size': String(payload.length),
        etag: '"0123"',
      });
      res.end();
    } else if (p === '/cdn/good.gguf') serve(req, res);
    else if (p === '/cdn/bad.gguf') serve(req, res, { body: corrupted });
    else serve(req, res);
  });
  try {
    const dest = join(dir, 'dl-sha');
    const common = { destDir: dest, allowedHosts: ['127.0.0.1'], lookup: fakeDns };
    const r = await downloadModel({
      ...common,
      url: `${base}/Org/Repo/resolve/main/good.gguf`,
      headers: { authorization: 'Bearer secret' },
    });
    assert.equal(r.verifiedWith, 'server');
    assert.equal(r.sha256, payloadSha);
    const cdn = seen.find((s) => s.path === '/cdn/good.gguf')!;
    assert.equal(cdn.headers.host, `cdn.test:${port}`);
    assert.equal(cdn.headers.authorization, undefined, 'credentials are not sent to another host');
    assert.equal(seen[0].headers.authorization, 'Bearer secret');

    const e = await rejectsWith(
      downloadModel({ ...common, url: `${base}/Org/Repo/resolve/main/bad.gguf` }),
      'CHECKSUM_MISMATCH',
      /damaged/,
    );
    assert.deepEqual(e.details, { expected: payloadSha, actual: sha256(corrupted) });
    assert.deepEqual(
      [
        existsSync(join(dest, 'bad.gguf')),
        existsSync(join(dest, 'bad.gguf.part')),
        existsSync(join(dest, 'bad.gguf.part.json')),
      ],
      [false, false, false],
    );

    await rejectsWith(
      downloadModel({ ...common, url: `${base}/plain/other.gguf`, sha256: '0'.repeat(64) }),
      'CHECKSUM_MISMATCH',
    );
    assert.ok(!existsSync(join(dest, 'other.gguf')) && !existsSync(join(dest, 'other.gguf.part')));
    // the catalog's digest disagrees with what the server reports: stop before downloading
    await rejectsWith(
      downloadModel({ ...common, url: `${base}/Org/Repo/resolve/main/third.gguf`, sha256: '1'.repeat(64) }),
      'CHECKSUM_MISMATCH',
      /changed upstream/,
    );
  } finally {
    await stop(server);
  }
});

test('download: abort keeps the .part, and a later call resumes it', async () => {
  const { base, server, seen } = await startServer((req, res) => serve(req, res, { slow: !req.headers.range }));
  try {
    const dest = join(dir, 'dl-abort');
    const url = `${base}/model.gguf`;
    const ac = new AbortController();
    const p = downloadModel({
      url,
      destDir: dest,
      allowedHosts: ['127.0.0.1'],
      signal: ac.signal,
      progressIntervalMs: 0,
      onProgress: (x) => {
        if (x.bytes > 300_000) ac.abort();
      },
    });
    await rejectsWith(p, 'ABORTED');
    const partSize = statSync(join(dest, 'model.gguf.part')).size;
    assert.ok(partSize > 0 && partSize < payload.length);
    const r = await downloadModel({ url, destDir: dest, allowedHosts: ['127.0.0.1'] });
    assert.equal(seen[seen.length - 1].headers.range, `bytes=${partSize}-`);
    assert.equal(r.sha256, payloadSha);
    const pre = new AbortController();
    pre.abort();
    await rejectsWith(
      downloadModel({ url: `${base}/x.gguf`, destDir: dest, allowedHosts: ['127.0.0.1'], signal: pre.signal }),
      'ABORTED',
    );
  } finally {
    await stop(server);
  }
});

test('download: offline (no DNS, connection refused) and HTTP errors', async () => {
  // a port nobody listens on
  const { port, server } = await startServer(() => undefined);
  await stop(server);
  const dest = join(dir, 'dl-offline');
  const started = Date.now();
  const e = await rejectsWith(
    downloadModel({ url: `http://127.0.0.1:${port}/model.gguf`, destDir: dest, allowedHosts: ['127.0.0.1'] }),
    'OFFLINE',
    /offline/,
  );
  assert.equal((e.details as { code: string }).code, 'ECONNREFUSED');
  const noDns: LookupFunction = (host, _o, cb) =>
    (cb as (e: NodeJS.ErrnoException) => void)(
      Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }),
    );
  await rejectsWith(
    downloadModel({ url: 'https://huggingface.co/Qwen/Q-GGUF/resolve/main/q.gguf', destDir: dest, lookup: noDns }),
    'OFFLINE',
    /cannot resolve huggingface\.co/,
  );
  assert.ok(Date.now() - started < 5000);
  assert.ok(!existsSync(join(dest, 'q.gguf.part')));

  const http = await startServer((_req, res) => {
    res.writeHead(404, 'Not Found');
    res.end('no');
  });
  try {
    const err = await rejectsWith(
      downloadModel({ url: `${http.base}/missing.gguf`, destDir: dest, allowedHosts: ['127.0.0.1'] }),
      'HTTP_ERROR',
      /HTTP 404/,
    );
    assert.deepEqual(err.details, { status: 404 });
  } finally {
    await stop(http.server);
  }
});

test('download: Hugging Face URLs', () => {
  const f = parseHuggingFaceUrl(
    'https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf?download=true',
  );
  assert.deepEqual(f, {
    org: 'Qwen',
    repo: 'Qwen2.5-0.5B-Instruct-GGUF',
    revision: 'main',
    file: 'qwen2.5-0.5b-instruct-q4_k_m.gguf',
    url: 'https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf',
  });
  assert.equal(
    parseHuggingFaceUrl('https://huggingface.co/bartowski/L-GGUF/blob/abc123/sub/L-Q4_K_M.gguf').url,
    'https://huggingface.co/bartowski/L-GGUF/resolve/abc123/sub/L-Q4_K_M.gguf',
  );
  assert.equal(
    parseHuggingFaceUrl('https://huggingface.co/bartowski/L-GGUF', 'L-Q8_0.gguf').url,
    'https://huggingface.co/bartowski/L-GGUF/resolve/main/L-Q8_0.gguf',
  );
  assert.equal(parseHuggingFaceUrl('https://hf.co/a/b/tree/dev', 'x.gguf').revision, 'dev');
  assert.throws(() => parseHuggingFaceUrl('https://huggingface.co/a/b'), /say which \.gguf file/);
  assert.throws(() => parseHuggingFaceUrl('https://example.com/a/b/resolve/main/x.gguf'), /not a Hugging Face URL/);
  assert.throws(() => parseHuggingFaceUrl('https://huggingface.co/a/b/resolve/main/config.json'), /not a \.gguf/);
  assert.throws(() => parseHuggingFaceUrl('https://huggingface.co/a/b', '../x.gguf'), /bad file path/);
});

test('catalog: valid entries with Hugging Face URLs, sizes and digests', () => {
  assert.equal(CATALOG.length, 5);
  for (const e of CATALOG) {
    assert.deepEqual(CatalogEntry.parse(e), e);
    const ref = parseHuggingFaceUrl(e.url);
    assert.equal(ref.url, e.url);
    assert.match(ref.file, /q4_k_m\.gguf$/i);
    assert.ok(e.fileBytes > 400e6 && e.fileBytes < 2.2e9, e.id);
  }
  assert.equal(catalogEntry('llama-3.2-1b-instruct-q4_k_m').fileBytes, 807_694_464);
  assert.throws(() => catalogEntry('nope'), /no model 'nope'/);
});

// ---------------------------------------------------------------------------------------------------
// Memory estimate

const GiB = 1024 ** 3;
const plenty = { free: () => 64 * GiB, total: () => 128 * GiB };

test('estimate: KV cache per token, full and compressed, and the working buffers', () => {
  assert.equal(kvBytesPerToken(llama1b), 32 * 1024, '16 × 8 × (64 + 64) × 2 bytes');
  assert.equal(kvBytesPerToken(llama1b, { k: 'f32', v: 'f32', rotate: false }), 64 * 1024);
  // q8_0: 2 blocks of 34 bytes per 64 numbers; q4_0: 2 of 18 (GGUF's blocks)
  assert.equal(kvBytesPerToken(llama1b, { k: 'q8_0', v: 'q8_0', rotate: true }), 16 * 8 * 2 * 68);
  assert.equal(kvBytesPerToken(llama1b, { k: 'q8_0', v: 'q4_0', rotate: false }), 16 * 8 * (68 + 36));

  const full = estimateMemory(llama1b, { nCtx: 8192, memory: plenty });
  assert.equal(full.kvBytesFull, 8192 * 32768);
  assert.equal(full.kvBytesCompressed, full.kvBytesFull, 'no compression asked');
  const n = 512;
  // one step's activations, and the residual stream of the 6,144-token prefix (8,192 − 2,048 conversation room)
  const activations = 4 * n * (2 * 2048 + 32 * 64 + 8 * 128 + 32 * 64 + 3 * 8192 + 128256) + 4 * 2048 * 6144;
  assert.equal(full.workingBytes, activations);
  assert.equal(full.totalBytes, 807_000_000 + full.kvBytesFull + activations);
  assert.equal(full.fits, true);
  assert.match(
    full.message,
    /^needs \d+\.\d GiB, 64\.0 GiB available: weights 769\.6 MiB \+ KV cache 256\.0 MiB \(8,192 tokens × 32 KiB\)/,
  );

  // ratio 0.2 of a 6,144-token document (8,192 − 2,048 conversation room): 1,229 kept per head
  const c = estimateMemory(llama1b, {
    nCtx: 8192,
    compression: { method: 'ada-snapkv', budget: 0.2, window: 32 },
    memory: plenty,
  });
  assert.equal(c.conversationTokens, 2048);
  assert.equal(c.keptPrefixTokens, 1229);
  assert.equal(c.kvBytesFull, 8192 * 32768);
  assert.equal(c.kvBytesCompressed, (1229 + 2048) * 32768);
  // one layer's whole prefix, 32 free entries per head of every cut layer, the window's scores
  assert.equal(c.workingBytes, activations + 6144 * 8 * 128 * 2 + 32 * 32768 + 4 * 32 * 32 * 6144);
  // the global schedule cuts every layer at the end of the pass: every layer's whole prefix until then
  const g = estimateMemory(llama1b, {
    nCtx: 8192,
    compression: { method: 'ada-snapkv-global', budget: 0.2, window: 32 },
    memory: plenty,
  });
  assert.equal(g.kvBytesReading, 6144 * 32768);
  assert.equal(g.workingBytes, activations + (6144 - 1229) * 32768 + 4 * 32 * 32 * 6144);
  assert.equal(c.totalBytes, 807_000_000 + c.kvBytesCompressed + c.workingBytes);
  assert.match(c.message, /1,229 of the 6,144-token document kept per head; 256\.0 MiB uncompressed/);

  // sliding-window layers keep their window, not the budget: 10 of the 16 layers with a window of 512 (below
  // the budget) and of 2,047 (above it); uncompressed, every layer keeps every entry
  const perLayer = 32768 / 16;
  for (const window of [512, 2047]) {
    const shape = { ...llama1b, slidingLayers: 10, slidingWindow: window };
    const s = estimateMemory(shape, {
      nCtx: 8192,
      compression: { method: 'ada-snapkv', budget: 0.2, window: 32 },
      memory: plenty,
    });
    assert.equal(s.kvBytesCompressed, perLayer * (6 * 1229 + 10 * window) + 2048 * 32768, `window ${window}`);
    assert.equal(s.workingBytes - c.workingBytes, 0, 'the reading peak moves with the kept entries, the work not');
    assert.match(s.message, new RegExp(`${window.toLocaleString('en-US')} in the 10 sliding-window layers`));
    assert.equal(estimateMemory(shape, { nCtx: 8192, memory: plenty }).kvBytesCompressed, 8192 * 32768);
  }

  // a budget in tokens per head, and the edge cases of docs/compression.md
  assert.equal(
    estimateMemory(llama1b, { nCtx: 8192, compression: { method: 'snapkv', budget: 512 }, memory: plenty })
      .kvBytesCompressed,
    (512 + 2048) * 32768,
  );
  assert.deepEqual(keptPrefixTokens(20, { method: 'snapkv', budget: 0.1, window: 32 }), {
    kept: 20,
    compressed: false,
    clamped: false,
  });
  assert.deepEqual(keptPrefixTokens(1000, { method: 'snapkv', budget: 2000 }), {
    kept: 1000,
    compressed: false,
    clamped: false,
  });
  assert.deepEqual(keptPrefixTokens(1000, { method: 'snapkv', budget: 0.01, window: 32 }), {
    kept: 33,
    compressed: true,
    clamped: true,
  });
  assert.deepEqual(keptPrefixTokens(1000, { method: 'full', budget: 0.1 }), {
    kept: 1000,
    compressed: false,
    clamped: false,
  });
});

test('estimate: the message when it does not fit', () => {
  const big: ModelShape = { ...llama1b, weightBytes: Math.round(4.4 * GiB) };
  const e = estimateMemory(big, { nCtx: 16384, memory: { free: () => 3.1 * GiB, total: () => 8 * GiB } });
  assert.equal(e.fits, false);
  assert.equal(e.availableBytes, 3.1 * GiB);
  assert.equal(formatBytes(e.totalBytes), '5.3 GiB');
  assert.equal(
    e.message,
    'needs 5.3 GiB, 3.1 GiB available: weights 4.4 GiB + KV cache 512.0 MiB (16,384 tokens × 32 KiB) ' +
      '+ working buffers 428.5 MiB. Close other programs, or choose a shorter context, a smaller compression budget or a smaller model',
  );
  const tooBig = estimateMemory(
    { ...big, weightBytes: 20 * GiB },
    { nCtx: 4096, memory: { free: () => 3 * GiB, total: () => 8 * GiB } },
  );
  assert.match(tooBig.message, /more than this machine's 8\.0 GiB/);
  // On a GPU the model must fit the GPU's memory, and the message says so.
  const onGpu = estimateMemory(
    { ...big, weightBytes: 20 * GiB },
    { nCtx: 4096, memory: { free: () => 7 * GiB, total: () => 8 * GiB }, memoryName: "the NVIDIA L4's memory" },
  );
  assert.match(onGpu.message, /^needs 20\.\d GiB, 7\.0 GiB of the NVIDIA L4's memory available/);
  assert.match(onGpu.message, /more than all 8\.0 GiB of the NVIDIA L4's memory/);

  // the longest context that fits 2 GiB free: the KV cache gets what the rest leaves
  const mem = { free: () => 2 * GiB, total: () => 8 * GiB };
  const nMax = largestFittingContext(llama1b, { memory: mem })!;
  assert.equal(nMax % 256, 0);
  assert.equal(estimateMemory(llama1b, { nCtx: nMax, memory: mem }).fits, true);
  assert.equal(estimateMemory(llama1b, { nCtx: nMax + 256, memory: mem }).fits, false);
  assert.equal(largestFittingContext(llama1b, { memory: { free: () => 100e6, total: () => 8 * GiB } }), null);
});

test('estimate: from a GGUF file', async () => {
  const p = model(join(dir, 'est', 'Est.gguf'), { nLayer: 2, nHeadKv: 2 });
  const s = await inspectGguf(p);
  const shape = shapeFromSummary(s);
  assert.deepEqual(
    [
      shape.layers,
      shape.heads,
      shape.kvHeads,
      shape.headSize,
      shape.valueHeadSize,
      shape.vocabSize,
      shape.contextLength,
    ],
    [2, 4, 2, 64, 64, 320, 256],
  );
  assert.equal(shape.weightBytes, s.tensorBytes);
  const e = await estimateForFile(p, { memory: plenty });
  assert.equal(e.nCtx, 256);
  assert.equal(e.kvBytesFull, 256 * 2 * 2 * 128 * 2);
  assert.throws(() => shapeFromSummary({ ...s, layers: null }), /layer count/);
});

test("estimate on a GPU: the model must fit the GPU's memory, which the message names", async () => {
  const { openStorage } = await import('../electron/storage/index.ts');
  const { ModelsService } = await import('../electron/services/models-service.ts');
  const { EventBus } = await import('../electron/api/dispatcher.ts');
  const { Tasks } = await import('../electron/services/tasks.ts');
  const dir = mkdtempSync(join(tmpdir(), 'folio-gpu-estimate-'));
  try {
    const file = join(dir, 'tiny.gguf');
    writeRandomModel(file, { arch: 'llama' });
    const storage = openStorage(join(dir, 'data'));
    let gpu: { name: string; freeBytes: number; totalBytes: number } | null = {
      name: 'Test GPU',
      freeBytes: 1e5,
      totalBytes: 2e5,
    };
    const engine = { gpu: () => gpu } as unknown as ConstructorParameters<typeof ModelsService>[1];
    const bus = new EventBus();
    const models = new ModelsService(storage, engine, new Tasks(bus), bus, {
      downloadDir: join(dir, 'downloads'),
      discovery: { knownPlaces: false, systemWide: false },
    });
    const m = await models.add(file);
    const onGpu = await models.estimate({ modelId: m.id, nCtx: 256 });
    assert.equal(onGpu.availableBytes, 1e5);
    assert.equal(onGpu.fits, false);
    assert.match(onGpu.message, /of the Test GPU's memory available/);
    gpu = null; // the CPU: the machine's memory
    const onCpu = await models.estimate({ modelId: m.id, nCtx: 256 });
    assert.notEqual(onCpu.availableBytes, 1e5);
    assert.doesNotMatch(onCpu.message, /GPU/);
    storage.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
