// Folio's block layouts against ggml itself: test/data/ggml-quant/*.bin hold blocks that ggml's own
// quantizers wrote for a few fixed rows, ggml's dequantization of them and ggml's dot products with a
// quantized activation row (native/tools/oracle/ggml-quant-oracle.c says how, and the file layout).
// Decoding must equal ggml's floats bit for bit on every ISA; so must the independent TS reference
// (quant-ref.ts), rounded to float32. Dot products agree with ggml's within float rounding: the integer
// sums per block are exact, only the float scaling and accumulation of 2..16 block terms differ.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { loadAddon, type OpsBinding } from '../electron/engine/binding.ts';
import { dequantize as refDequantize, GGML_TYPE_INFO } from './helpers/quant-ref.ts';
import { repoRoot } from './helpers/shared.ts';

const ops: OpsBinding = loadAddon().ops;
const isas = ops.isas();
const ACT_BYTES: Record<number, [block: number, bytes: number]> = { 8: [32, 34], 15: [256, 292] };

interface OracleFile {
  type: number;
  n: number;
  rows: number;
  actType: number;
  w: Uint8Array[];
  deq: Float32Array[];
  act: Uint8Array;
  dot: Float32Array;
}

function readOracle(name: string): OracleFile {
  const b = readFileSync(join(repoRoot, 'test/data/ggml-quant', `${name}.bin`));
  const bytes = new Uint8Array(b.buffer, b.byteOffset, b.length);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  assert.equal(Buffer.from(bytes.subarray(0, 8)).toString('latin1'), 'FGGMLQ01');
  const [type, n, rows, actType] = [8, 12, 16, 20].map((o) => v.getUint32(o, true));
  const { blockSize, typeSize } = GGML_TYPE_INFO[type];
  const rb = (n / blockSize) * typeSize;
  let at = 24;
  const take = (len: number) => {
    const out = bytes.slice(at, at + len);
    at += len;
    return out;
  };
  const floats = (count: number) => new Float32Array(take(4 * count).buffer);
  const w = Array.from({ length: rows }, () => take(rb));
  const deq = Array.from({ length: rows }, () => floats(n));
  const [ab, abytes] = ACT_BYTES[actType];
  const act = take((n / ab) * abytes);
  const dot = floats(rows);
  assert.equal(at, bytes.length, `${name}.bin: trailing bytes`);
  return { type, n, rows, actType, w, deq, act, dot };
}

const bits = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);

describe('quant: the layouts are ggml’s (test/data/ggml-quant)', () => {
  for (const name of ['q2_k', 'q3_k', 'iq4_nl', 'iq4_xs']) {
    test(name.toUpperCase(), () => {
      const f = readOracle(name);
      assert.equal(ops.vecDotType(f.type), f.actType);
      const xd = ops.dequantize(f.actType, f.act, f.n, 'scalar');
      for (let r = 0; r < f.rows; r++) {
        for (const isa of isas) {
          assert.deepEqual(bits(ops.dequantize(f.type, f.w[r], f.n, isa)), bits(f.deq[r]), `${name} row ${r} ${isa}`);
        }
        assert.deepEqual(bits(Float32Array.from(refDequantize(f.type, f.w[r], f.n))), bits(f.deq[r]), `quant-ref ${r}`);
        let mag = 0;
        for (let i = 0; i < f.n; i++) mag += Math.abs(f.deq[r][i] * xd[i]);
        for (const isa of isas) {
          const got = ops.vecDot(f.type, f.w[r], f.act, f.n, isa);
          assert.ok(Math.abs(got - f.dot[r]) <= 2e-6 * mag, `${name} row ${r} ${isa}: ${got} vs ggml ${f.dot[r]}`);
        }
      }
    });
  }
});
