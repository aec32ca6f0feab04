// The random-weight models the reference engine (ik_llama.cpp) has been run on: one list for the tests
// (test/model-oracle.test.ts) and for the script that writes the dumps (native/tools/oracle/make-dumps.sh),
// so that both build byte-identical files (random-model.ts is deterministic for its options).
import type { RandomModelOptions } from './random-model.ts';

export interface OracleCase {
  /** The dump is test/data/oracle/<name>.json. */
  name: string;
  model: RandomModelOptions;
  /** The context both engines run with (LongRoPE picks its factors by it). */
  nCtx: number;
  /** Prompt positions whose whole logit rows the dump keeps (-1: the last). */
  positions: number[];
  nGreedy: number;
  /** The prompt; default ORACLE_PROMPT. */
  prompt?: number[];
}

/** BOS, then a fixed mixture of ids across the synthetic vocabulary (model-random.test.ts's prompt). */
export const ORACLE_PROMPT = [1, ...Array.from({ length: 40 }, (_, i) => 3 + ((i * 37 + 11) % 300))];

/** 80 tokens, for models whose sliding window (16, 23) is far shorter: most keys have left a query's window. */
export const ORACLE_LONG_PROMPT = [1, ...Array.from({ length: 79 }, (_, i) => 3 + ((i * 41 + 5) % 300))];

export const promptOf = (c: OracleCase): number[] => c.prompt ?? ORACLE_PROMPT;

// general.name: llama.cpp gives a vocabulary the special tokens of Phi-3's when the model's name says phi3,
// and stops on this synthetic one, which has none of them; the name is all the reference reads of it.
const ORACLE_MODEL_NAME = 'folio oracle case';

export const ORACLE_CASES: OracleCase[] = [
  {
    name: 'phi3-F32',
    model: { arch: 'phi3', type: 'F32', seed: 21, name: ORACLE_MODEL_NAME },
    nCtx: 256,
    positions: [0, 20, -1],
    nGreedy: 16,
  },
  {
    name: 'phi3-longrope-F32',
    model: { arch: 'phi3', type: 'F32', ropeScaling: 'longrope', seed: 22, name: ORACLE_MODEL_NAME },
    nCtx: 256,
    positions: [0, 20, -1],
    nGreedy: 16,
  },
  {
    name: 'qwen3moe-F32',
    model: { arch: 'qwen3moe', type: 'F32', seed: 24, name: ORACLE_MODEL_NAME },
    nCtx: 256,
    positions: [0, 20, -1],
    nGreedy: 16,
  },
  {
    name: 'gemma3-F32',
    model: {
      arch: 'gemma3',
      type: 'F32',
      ropeScaling: 'linear',
      tiedEmbeddings: true,
      seed: 23,
      name: ORACLE_MODEL_NAME,
    },
    nCtx: 256,
    positions: [0, 20, -1],
    nGreedy: 16,
  },
  // Past the sliding window: the prompt and the greedy tokens run five times past it (the rows kept: the
  // last position inside the first window, the first past it, one far past).
  ...(
    [
      ['gemma3', 16, 25],
      ['phi3', 23, 26],
    ] as const
  ).map(([arch, window, seed]) => ({
    name: `${arch}-swa${window}-F32`,
    model: { arch, type: 'F32' as const, slidingWindow: window, seed, name: ORACLE_MODEL_NAME },
    nCtx: 256,
    positions: [0, window - 1, window, 50, -1],
    nGreedy: 16,
    prompt: ORACLE_LONG_PROMPT,
  })),
  // The quantized mixes people download (quant-mix.ts), on the llama architecture: the matrices in Q2_K /
  // Q3_K, Q4_K, Q5_K, Q6_K / IQ4_XS; both engines quantize the activations, each its own way
  // (docs/benchmarks-log.md, "Q3_K and Q2_K repacked at load"), so these are held to looser bounds.
  ...(['Q2_K', 'Q3_K_M', 'IQ4_XS'] as const).map((mix, i) => ({
    name: `llama-${mix}`,
    model: { arch: 'llama' as const, mix, seed: 31 + i, name: ORACLE_MODEL_NAME },
    nCtx: 256,
    positions: [0, 20, -1],
    nGreedy: 16,
  })),
];
