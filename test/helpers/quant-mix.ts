// llama.cpp's quantization mixes: which tensor type its quantizer (llama_tensor_get_type in
// src/llama-quant.cpp; read in ik_llama.cpp's src/llama-quantize.cpp) gives each 2-D weight of a dense
// model for a file type, without an importance matrix. native/tools/make-random-model.cc (mix_type)
// states the same rule for the benchmark models.
import type { GgmlTypeName } from './quant-ref.ts';

export type LlamaMix = 'Q2_K' | 'Q3_K_S' | 'Q3_K_M' | 'Q3_K_L' | 'Q4_K_M' | 'IQ4_XS';

/** general.file_type (LLAMA_FTYPE_MOSTLY_*) of each mix. */
export const MIX_FILE_TYPE: Record<LlamaMix, number> = {
  Q2_K: 10,
  Q3_K_S: 11,
  Q3_K_M: 12,
  Q3_K_L: 13,
  Q4_K_M: 15,
  IQ4_XS: 30,
};

const BASE: Record<LlamaMix, GgmlTypeName> = {
  Q2_K: 'Q2_K',
  Q3_K_S: 'Q3_K',
  Q3_K_M: 'Q3_K',
  Q3_K_L: 'Q3_K',
  Q4_K_M: 'Q4_K',
  IQ4_XS: 'IQ4_XS',
};

/** llama.cpp's "use more bits" layers: the first and last eighth, and every third one between. */
const moreBitsLayer = (i: number, n: number) =>
  i < Math.floor(n / 8) || i >= Math.floor((7 * n) / 8) || (i - Math.floor(n / 8)) % 3 === 2;

/**
 * The type of 2-D tensor `name` (e.g. blk.3.attn_v.weight) in a model of nLayer layers with
 * gqa = n_head / n_head_kv; `tied`: token_embd is also the output projection. The rule:
 * - the output projection (output.weight, or token_embd.weight when tied): Q6_K;
 * - attn_v: Q2_K -> Q4_K when gqa >= 4, else Q3_K; Q3_K_M -> Q5_K in the first two layers, Q4_K after;
 *   Q3_K_L -> Q5_K; IQ4_XS -> Q5_K when gqa >= 4; Q4_K_M -> Q6_K in the use-more-bits layers;
 * - attn_output: Q2_K -> Q3_K; Q3_K_M -> Q4_K; Q3_K_L -> Q5_K;
 * - ffn_down: Q2_K -> Q3_K; Q3_K_M -> Q5_K in the first nLayer/16 layers, Q4_K after; Q3_K_L -> Q5_K;
 *   IQ4_XS -> Q5_K in the first nLayer/8 layers; Q4_K_M -> Q6_K in the use-more-bits layers;
 * - everything else keeps the mix's base type.
 */
export function mixTensorType(
  mix: LlamaMix,
  name: string,
  m: { nLayer: number; gqa: number; tied: boolean },
): GgmlTypeName {
  const base = BASE[mix];
  if (name === 'output.weight' || (m.tied && name === 'token_embd.weight')) return 'Q6_K';
  const layer = Number(/^blk\.(\d+)\./.exec(name)?.[1] ?? -1);
  if (name.endsWith('attn_v.weight')) {
    if (mix === 'Q2_K') return m.gqa >= 4 ? 'Q4_K' : 'Q3_K';
    if (mix === 'Q3_K_M') return layer < 2 ? 'Q5_K' : 'Q4_K';
    if (mix === 'Q3_K_L') return 'Q5_K';
    if (mix === 'IQ4_XS' && m.gqa >= 4) return 'Q5_K';
    if (mix === 'Q4_K_M' && moreBitsLayer(layer, m.nLayer)) return 'Q6_K';
  } else if (name.endsWith('attn_output.weight')) {
    if (mix === 'Q2_K') return 'Q3_K';
    if (mix === 'Q3_K_M') return 'Q4_K';
    if (mix === 'Q3_K_L') return 'Q5_K';
  } else if (name.endsWith('ffn_down.weight')) {
    if (mix === 'Q2_K') return 'Q3_K';
    if (mix === 'Q3_K_M') return layer < Math.floor(m.nLayer / 16) ? 'Q5_K' : 'Q4_K';
    if (mix === 'Q3_K_L') return 'Q5_K';
    if (mix === 'IQ4_XS' && layer < Math.floor(m.nLayer / 8)) return 'Q5_K';
    if (mix === 'Q4_K_M' && moreBitsLayer(layer, m.nLayer)) return 'Q6_K';
  }
  return base;
}
