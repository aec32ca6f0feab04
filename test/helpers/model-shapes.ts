// Model shapes the memory-estimate tests share.
import type { ModelShape } from '../../electron/models/estimate.ts';

// Llama-3.2-1B (its config.json): 16 layers, 32 heads, 8 KV heads, head 64, hidden 2048, FFN 8192,
// vocabulary 128256, context 131072; the Q4_K_M file's tensor data ~ 0.75 GiB
export const llama1b: ModelShape = {
  layers: 16,
  heads: 32,
  kvHeads: 8,
  headSize: 64,
  valueHeadSize: 64,
  embeddingLength: 2048,
  feedForwardLength: 8192,
  vocabSize: 128256,
  contextLength: 131072,
  weightBytes: 807_000_000,
};
