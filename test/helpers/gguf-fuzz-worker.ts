// The child process of the GGUF fuzzer (gguf-fuzz-run.ts starts it): makes mutants FROM..TO of run SEED over
// the corpus, writes each to DIR/mutant.gguf, probes it (gguf-probe.ts) and prints one JSON summary line at the
// end. Before each mutant it writes the mutant's index to DIR/current, so that when this process dies or
// stalls the parent knows which mutant did it (the file is still on disk).
//   node --import tsx test/helpers/gguf-fuzz-worker.ts SEED FROM TO DIR PER_FILE_MS
import { closeSync, copyFileSync, existsSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

import { loadAddon } from '../../electron/engine/binding.ts';
import { arr, u32, ValueType } from './gguf-writer.ts';
import { layoutOf, makeMutant, rewriteMetadata, type GgufLayout } from './gguf-mutator.ts';
import { probeGguf } from './gguf-probe.ts';
import { buildRandomModel } from './random-model.ts';
import { sharedModel } from './shared.ts';

export interface FuzzSummary {
  from: number;
  to: number;
  seconds: number;
  /** Outcome classes ("load:GGUF_TYPE", "header:ok", ...) and how many mutants fell in each. */
  classes: Record<string, number>;
  failures: { index: number; ops: string[]; failures: string[]; kept: string }[];
  peakRssBytes: number;
  slowestMs: number;
}

/** A small random model whose tokenizer is swapped for a tiny byte-level BPE one (merges, pre-tokenizer). */
function bpeModel(): Uint8Array {
  const { bytes } = buildRandomModel({
    arch: 'qwen2',
    type: 'F32',
    seed: 7,
    nEmbd: 64,
    nHead: 4,
    nHeadKv: 2,
    nFf: 64,
    nLayer: 1,
  });
  return rewriteMetadata(bytes, (meta) => [
    ...meta.filter(([k]) => !k.startsWith('tokenizer.')),
    ['tokenizer.ggml.model', 'gpt2'],
    ['tokenizer.ggml.pre', 'qwen2'],
    ['tokenizer.ggml.tokens', ['a', 'b', 'ab', '\u0120', '\u0120ab', '<|endoftext|>', '<|im_end|>']],
    ['tokenizer.ggml.token_type', arr(ValueType.INT32, [1, 1, 1, 1, 1, 3, 3])],
    ['tokenizer.ggml.merges', ['a b', '\u0120 ab']],
    ['tokenizer.ggml.eos_token_id', u32(6)],
    ['tokenizer.ggml.padding_token_id', u32(5)],
    ['tokenizer.ggml.add_bos_token', false],
    ['tokenizer.chat_template', '{% for m in messages %}{{ m.content }}{% endfor %}'],
  ]);
}

/** The files mutants are made from: two generated models (SentencePiece and BPE tokenizers) and, when the
 *  shared models are there, the real stories260K.gguf. Deterministic, so an index names the same mutant. */
export function fuzzCorpus(): { name: string; layout: GgufLayout }[] {
  const out = [
    {
      name: 'random-llama-q8_0',
      layout: layoutOf(
        buildRandomModel({ arch: 'llama', type: 'Q8_0', seed: 3, nEmbd: 64, nHead: 4, nHeadKv: 2, nFf: 64, nLayer: 1 })
          .bytes,
      ),
    },
    { name: 'random-qwen2-bpe', layout: layoutOf(bpeModel()) },
  ];
  const stories = sharedModel('stories260K.gguf');
  if (existsSync(stories)) out.push({ name: 'stories260K', layout: layoutOf(new Uint8Array(readFileSync(stories))) });
  return out;
}

async function main() {
  const [seed, from, to] = process.argv.slice(2, 5).map(Number);
  const dir = process.argv[5];
  const perFileMs = Number(process.argv[6]);
  const addon = loadAddon();
  const bases = fuzzCorpus().map((c) => c.layout);
  const mutantPath = join(dir, 'mutant.gguf');
  const current = openSync(join(dir, 'current'), 'w');
  const s: FuzzSummary = { from, to, seconds: 0, classes: {}, failures: [], peakRssBytes: 0, slowestMs: 0 };
  const count = (k: string) => {
    s.classes[k] = (s.classes[k] ?? 0) + 1;
  };
  const t0 = performance.now();
  for (let i = from; i < to; i++) {
    writeSync(current, `${i}`.padEnd(20), 0);
    const m = makeMutant(bases, seed, i);
    writeFileSync(mutantPath, m.bytes);
    const start = performance.now();
    const r = await probeGguf(addon, mutantPath, m.bytes);
    const ms = performance.now() - start;
    s.slowestMs = Math.max(s.slowestMs, ms);
    if (ms > perFileMs) r.failures.push(`took ${ms.toFixed(0)} ms (the bound is ${perFileMs} ms)`);
    count(`read:${r.read}`);
    count(`load:${r.load}`);
    count(`vocab:${r.vocab}`);
    count(`header:${r.header}`);
    if (r.typeError) count('header:wrong-typed key');
    if (r.failures.length) {
      const kept = join(dir, `failure-${i}.gguf`);
      copyFileSync(mutantPath, kept);
      s.failures.push({ index: i, ops: m.ops, failures: r.failures, kept });
    }
    if ((i & 255) === 0) s.peakRssBytes = Math.max(s.peakRssBytes, process.memoryUsage.rss());
  }
  closeSync(current);
  s.seconds = (performance.now() - t0) / 1000;
  s.peakRssBytes = Math.max(s.peakRssBytes, process.resourceUsage().maxRSS * 1024);
  process.stdout.write(JSON.stringify(s) + '\n');
}

if (process.argv[1]?.endsWith('gguf-fuzz-worker.ts')) await main();
