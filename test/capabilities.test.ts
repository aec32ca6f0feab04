// What model files Folio opens is decided by the engine (its architectures and the tensor types it has
// kernels for) and read without it by the app's header summary (electron/models/gguf-tables.ts): the two
// lists must not drift, in either direction, and a file outside them must say why per file.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { loadAddon } from '../electron/engine/binding.ts';
import { summarizeGguf, type GgufHeader } from '../electron/models/gguf-header.ts';
import { SUPPORTED_ARCHITECTURES, SUPPORTED_TENSOR_TYPES } from '../electron/models/gguf-tables.ts';

test("the app's lists of architectures and tensor types equal the engine's", () => {
  const caps = loadAddon().capabilities();
  assert.deepEqual([...caps.architectures].sort(), [...SUPPORTED_ARCHITECTURES].sort());
  assert.deepEqual([...caps.tensorTypes].sort(), [...SUPPORTED_TENSOR_TYPES].sort());
});

/** A header with the given architecture and tensors of the given ggml type ids (no file behind it). */
function header(arch: string, tensorTypeIds: number[]): GgufHeader {
  return {
    path: 'model.gguf',
    version: 3,
    fileBytes: 1 << 20,
    metadata: new Map([['general.architecture', arch]]),
    types: new Map([['general.architecture', { type: 8 }]]),
    tensors: tensorTypeIds.map((type, i) => ({
      name: `blk.${i}.ffn_up.weight`,
      type,
      dims: [256, 4],
      offset: 0,
      nElements: 1024,
      nBytes: 1024,
    })),
    alignment: 32,
    dataOffset: 4096,
  };
}

test('a file whose weights use a type the engine cannot read says which, per type', () => {
  const s = summarizeGguf(header('llama', [12, 16, 16, 14])); // Q4_K, IQ2_XXS twice, Q6_K
  assert.equal(s.supported, false);
  assert.match(s.unsupportedReason ?? '', /cannot read yet: IQ2_XXS \(2 tensors\)\. It reads F32, F16/);
  assert.match(s.unsupportedReason ?? '', /another quantization/);
  const ok = summarizeGguf(header('llama', [12, 14, 0]));
  assert.equal(ok.supported, true, ok.unsupportedReason ?? '');
  const arch = summarizeGguf(header('mamba', [0]));
  assert.match(arch.unsupportedReason ?? '', /does not run the 'mamba' architecture/);
});
