// Random-weight GGUF models for tests: complete files of the llama, qwen2, qwen3, qwen3moe, phi3 and gemma3
// architectures, laid
// out the way llama.cpp's convert_hf_to_gguf.py lays out real ones (tensor names, ggml dim order,
// metadata keys and types), with a small synthetic SentencePiece-style vocabulary. Deterministic for a
// seed. The 2-D weight matrices are stored in the requested type with quant-ref.ts's quantizers; norms,
// biases and rope_freqs are F32, as in real files.
//
// Weight scales keep activations O(1): matrices ~ normal(0, 1/sqrt(fan_in)), norm weights ~ 1 ± 0.1.
import { writeFileSync } from 'node:fs';
import { arr, buildGguf, f32, f32Bytes, u32, ValueType, type MetaValue, type TensorSpec } from './gguf-writer.ts';
import { MIX_FILE_TYPE, mixTensorType, type LlamaMix } from './quant-mix.ts';
import { GGML_TYPE, GGML_TYPE_INFO, quantize, type GgmlTypeName } from './quant-ref.ts';

export type Arch = 'llama' | 'qwen2' | 'qwen3' | 'qwen3moe' | 'phi3' | 'gemma3';

export interface RandomModelOptions {
  arch?: Arch;
  /** Type of the 2-D weight matrices (token_embd, attn_*, ffn_*, output). Default F32. */
  type?: GgmlTypeName;
  /** llama.cpp's mix of types for one of its file types (quant-mix.ts); replaces `type` when set. */
  mix?: LlamaMix | null;
  seed?: number;
  nEmbd?: number;
  nHead?: number;
  nHeadKv?: number;
  /** Per-head dimension; default nEmbd / nHead. Written as {arch}.attention.key_length/value_length. */
  headDim?: number;
  nFf?: number;
  nLayer?: number;
  nCtx?: number;
  /** Vocabulary size, at least 3 + 256 + 30 (specials, byte tokens, single characters). */
  nVocab?: number;
  ropeBase?: number;
  eps?: number;
  /** 'llama3': Llama 3.1's rope_scaling, stored as the rope_freqs.weight tensor (llama only). 'longrope':
   * Phi-3's, stored as rope_factors_long/short.weight and the keys rope.scaling.attn_factor and
   * rope.scaling.original_context_length = nCtx / 4 (phi3 only). 'linear': rope.scaling.type linear with
   * factor 8, as Gemma 3 4B and larger (gemma3 only: its global layers). */
  ropeScaling?: 'none' | 'llama3' | 'longrope' | 'linear';
  /** Leading dims of each head that rotate (rope.dimension_count); default headDim. Phi-4-mini rotates 3/4. */
  ropeDim?: number;
  /** qwen3moe: experts per layer (default 8), experts per token (default 2), an expert's width (default 256). */
  nExpert?: number;
  nExpertUsed?: number;
  nFfExp?: number;
  /** phi3, gemma3: attention.sliding_window; default nCtx (a window that hides nothing). */
  slidingWindow?: number;
  /** No output.weight: the output projection reuses token_embd.weight. */
  tiedEmbeddings?: boolean;
  name?: string;
}

/** Every option resolved to its value. */
export type RandomModelConfig = Required<RandomModelOptions>;

/** Llama 3.1's rope_scaling block from its config.json. */
export const LLAMA3_ROPE_SCALING = {
  factor: 8,
  lowFreqFactor: 1,
  highFreqFactor: 4,
  originalMaxPositionEmbeddings: 8192,
};

export function resolveOptions(o: RandomModelOptions = {}): RandomModelConfig {
  const arch = o.arch ?? 'llama';
  const nEmbd = o.nEmbd ?? 256;
  const nHead = o.nHead ?? 4;
  const isQwen = arch === 'qwen2' || arch === 'qwen3' || arch === 'qwen3moe' || arch === 'gemma3';
  return {
    arch,
    type: o.type ?? 'F32',
    mix: o.mix ?? null,
    seed: o.seed ?? 1,
    nEmbd,
    nHead,
    nHeadKv: o.nHeadKv ?? 2,
    headDim: o.headDim ?? nEmbd / nHead,
    nFf: o.nFf ?? 512,
    nLayer: o.nLayer ?? (arch === 'gemma3' ? 6 : 2), // gemma3: five sliding layers, then a global one
    nCtx: o.nCtx ?? 256,
    nVocab: o.nVocab ?? 320,
    ropeBase: o.ropeBase ?? (isQwen ? 1000000 : 10000),
    eps: o.eps ?? (isQwen ? 1e-6 : 1e-5),
    ropeScaling: o.ropeScaling ?? 'none',
    ropeDim: o.ropeDim ?? o.headDim ?? nEmbd / nHead,
    nExpert: o.nExpert ?? 8,
    nExpertUsed: o.nExpertUsed ?? 2,
    nFfExp: o.nFfExp ?? 256,
    slidingWindow: o.slidingWindow ?? o.nCtx ?? 256,
    tiedEmbeddings: o.tiedEmbeddings ?? false,
    name: o.name ?? `random-${arch}`,
  };
}

// ---------------------------------------------------------------------------------------------------
// Deterministic random numbers: mulberry32 for uniforms, Box-Muller for normals.

export class Rng {
  private state: number;
  private spare: number | null = null;
  constructor(seed: number) {
    this.state = (seed ^ 0x9e3779b9) >>> 0;
  }
  /** Uniform in [0, 1). */
  uniform(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** Standard normal. */
  normal(): number {
    if (this.spare !== null) {
      const s = this.spare;
      this.spare = null;
      return s;
    }
    const u1 = 1 - this.uniform(); // (0, 1]
    const u2 = this.uniform();
    const r = Math.sqrt(-2 * Math.log(u1));
    this.spare = r * Math.sin(2 * Math.PI * u2);
    return r * Math.cos(2 * Math.PI * u2);
  }
  normals(n: number, mean: number, std: number): Float64Array {
    const out = new Float64Array(n);
    for (let i = 0; i < n; i++) out[i] = mean + std * this.normal();
    return out;
  }
}

// ---------------------------------------------------------------------------------------------------
// Vocabulary: <unk> <s> </s>, the 256 byte tokens, single characters, then merged pieces. Every merged
// piece is the concatenation of two earlier tokens, so a SentencePiece-BPE tokenizer can reach it.

export const TOKEN_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

const SPACE = '\u2581'; // ▁, SentencePiece's word-boundary marker
const CHARS = [SPACE, ...'abcdefghijklmnopqrstuvwxyz', '.', ',', '!'];
const MERGES = [
  '▁t',
  'he',
  '▁a',
  'in',
  '▁th',
  '▁the',
  'er',
  'an',
  'nd',
  '▁s',
  '▁w',
  '▁an',
  '▁and',
  'on',
  're',
  'ed',
  '▁h',
  'is',
  '▁wa',
  '▁was',
  'it',
  'at',
  'en',
  'll',
  '▁b',
  '▁o',
  'ou',
  '▁i',
  '▁l',
  '▁to',
  '▁he',
];

export interface Vocab {
  tokens: string[];
  scores: number[];
  types: number[];
}

export function syntheticVocab(nVocab: number): Vocab {
  const tokens: string[] = ['<unk>', '<s>', '</s>'];
  const types: number[] = [TOKEN_TYPE.UNKNOWN, TOKEN_TYPE.CONTROL, TOKEN_TYPE.CONTROL];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(TOKEN_TYPE.BYTE);
  }
  const minimum = tokens.length + CHARS.length;
  if (nVocab < minimum) throw new Error(`nVocab must be at least ${minimum}`);

  // merged pieces: the hand-picked ones, then more concatenations of existing pieces, in a fixed order
  const pieces = [...CHARS];
  const seen = new Set(pieces);
  const merges: string[] = [];
  const addMerge = (p: string) => {
    if (seen.has(p)) return;
    seen.add(p);
    merges.push(p);
    pieces.push(p);
  };
  for (const m of MERGES) addMerge(m);
  for (let i = CHARS.length; merges.length < nVocab - minimum; i++) {
    for (const c of CHARS.slice(1, 27)) if (merges.length < nVocab - minimum) addMerge(pieces[i] + c);
  }
  merges.length = nVocab - minimum;

  // scores: merges first by rank (0, -1, -2, ...), then the single characters below all of them
  const scores = tokens.map(() => 0);
  merges.forEach((p, i) => {
    tokens.push(p);
    types.push(TOKEN_TYPE.NORMAL);
    scores.push(-i);
  });
  CHARS.forEach((c, i) => {
    tokens.push(c);
    types.push(TOKEN_TYPE.NORMAL);
    scores.push(-merges.length - i);
  });
  return { tokens, scores, types };
}

// ---------------------------------------------------------------------------------------------------
// Llama 3 rope frequency factors, as convert_hf_to_gguf.py computes them for rope_type "llama3".
//
// For each rotated pair i (0 <= i < headDim/2) the base frequency is freq_i = 1 / base^(2i / headDim)
// (the converter computes it in float32 with torch) and its wavelength 2*pi / freq_i. Short wavelengths
// (< original_ctx / high_freq_factor) are kept (factor 1), long ones (> original_ctx / low_freq_factor)
// slowed down by `factor`, and in between the factor blends smoothly:
//   smooth = (original_ctx / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
//   factor_i = 1 / ((1 - smooth) / factor + smooth)
// llama.cpp divides the rotation angle of pair i by factor_i.

export function llama3RopeFactors(headDim: number, base: number, s = LLAMA3_ROPE_SCALING): Float64Array {
  const lowFreqWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
  const highFreqWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
  const out = new Float64Array(headDim / 2);
  for (let i = 0; i < headDim / 2; i++) {
    const exponent = Math.fround((2 * i) / headDim);
    const freq = Math.fround(1 / Math.fround(base ** exponent));
    const wavelen = (2 * Math.PI) / freq;
    if (wavelen < highFreqWavelen) out[i] = 1;
    else if (wavelen > lowFreqWavelen) out[i] = s.factor;
    else {
      const smooth =
        (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
      out[i] = 1 / ((1 - smooth) / s.factor + smooth);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------

/** llama.cpp's general.file_type (LLAMA_FTYPE_*) for a file whose matrices are all `type`. */
const FILE_TYPE: Record<GgmlTypeName, number> = {
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q8_0: 7,
  Q5_0: 8,
  Q5_1: 9,
  Q4_K: 14,
  Q5_K: 16,
  Q6_K: 18,
  Q2_K: 10,
  Q3_K: 11, // Q3_K_S: Q3_K nearly everywhere
  IQ4_NL: 25,
  IQ4_XS: 30,
  BF16: 32,
};

/** Builds the model file in memory. */
export function buildRandomModel(options: RandomModelOptions = {}): { bytes: Uint8Array; config: RandomModelConfig } {
  const c = resolveOptions(options);
  const { arch, nEmbd, nHead, nHeadKv, headDim, nFf, nLayer, nVocab } = c;
  if (nHead % nHeadKv !== 0) throw new Error('nHead must be a multiple of nHeadKv');
  if (headDim % 2 !== 0) throw new Error('headDim must be even');
  if (c.ropeScaling === 'llama3' && arch !== 'llama')
    throw new Error('llama3 rope scaling is for the llama architecture');
  if (c.ropeScaling === 'longrope' && arch !== 'phi3') throw new Error('longrope is for the phi3 architecture');
  if (c.ropeScaling === 'linear' && arch !== 'gemma3') throw new Error('linear rope scaling is for gemma3 here');
  if (c.ropeDim % 2 !== 0 || c.ropeDim > headDim) throw new Error('ropeDim must be even and at most headDim');
  const rng = new Rng(c.seed);
  const tensors: TensorSpec[] = [];

  /** A 2-D weight matrix W[rows][cols] in ggml order [cols, rows], values ~ normal(0, std). */
  const matrix = (name: string, cols: number, rows: number, std: number) => {
    const type = c.mix ? mixTensorType(c.mix, name, { nLayer, gqa: nHead / nHeadKv, tied: c.tiedEmbeddings }) : c.type;
    const blockSize = GGML_TYPE_INFO[GGML_TYPE[type]].blockSize;
    if (cols % blockSize !== 0) {
      throw new Error(`${name}: rows of ${cols} values are not a whole number of ${type} blocks (${blockSize})`);
    }
    const values = rng.normals(cols * rows, 0, std);
    tensors.push({ name, dims: [cols, rows], type: GGML_TYPE[type], data: quantize(type, values) });
  };
  /** n_expert matrices [cols, rows] stacked as ggml's [cols, rows, n_expert], values ~ normal(0, std). */
  const expertStack = (name: string, cols: number, rows: number, std: number) => {
    if (cols % GGML_TYPE_INFO[GGML_TYPE[c.type]].blockSize !== 0) throw new Error(`${name}: rows not whole blocks`);
    const values = rng.normals(cols * rows * c.nExpert, 0, std);
    tensors.push({ name, dims: [cols, rows, c.nExpert], type: GGML_TYPE[c.type], data: quantize(c.type, values) });
  };
  /** A 1-D F32 tensor, values ~ normal(mean, std). */
  const vector = (name: string, n: number, mean: number, std: number) => {
    tensors.push({ name, dims: [n], type: GGML_TYPE.F32, data: f32Bytes(rng.normals(n, mean, std)) });
  };

  const qDim = nHead * headDim; //    width of all query heads together
  const kvDim = nHeadKv * headDim; // width of all key (or value) heads together

  // token_embd [n_embd, n_vocab]: one row of n_embd per token. When tied it is also the output
  // projection, so its scale sets the logits' spread: std(logit) ~ std * sqrt(n_embd).
  matrix('token_embd.weight', nEmbd, nVocab, (c.tiedEmbeddings ? 2 : 1) / Math.sqrt(nEmbd));
  if (c.ropeScaling === 'llama3') {
    tensors.push({
      name: 'rope_freqs.weight',
      dims: [headDim / 2],
      type: GGML_TYPE.F32,
      data: f32Bytes(llama3RopeFactors(headDim, c.ropeBase)),
    });
  }
  if (c.ropeScaling === 'longrope') {
    // Per-pair divisors as Phi-3-128k's look: 1 for the fast pairs rising to ~40 (long) or ~2.5 (short).
    const pairs = c.ropeDim / 2;
    const ramp = (top: number) => Float64Array.from({ length: pairs }, (_, i) => 1 + (top - 1) * (i / pairs) ** 2);
    tensors.push({ name: 'rope_factors_long.weight', dims: [pairs], type: GGML_TYPE.F32, data: f32Bytes(ramp(40)) });
    tensors.push({ name: 'rope_factors_short.weight', dims: [pairs], type: GGML_TYPE.F32, data: f32Bytes(ramp(2.5)) });
  }
  for (let l = 0; l < nLayer; l++) {
    const p = `blk.${l}.`;
    vector(p + 'attn_norm.weight', nEmbd, 1, 0.1);
    if (arch === 'phi3') {
      matrix(p + 'attn_qkv.weight', nEmbd, qDim + 2 * kvDim, 1 / Math.sqrt(nEmbd)); // [n_embd, Q, K, V rows]
    } else {
      matrix(p + 'attn_q.weight', nEmbd, qDim, 1 / Math.sqrt(nEmbd)); //      [n_embd, n_head*head_dim]
      matrix(p + 'attn_k.weight', nEmbd, kvDim, 1 / Math.sqrt(nEmbd)); //     [n_embd, n_kv*head_dim]
      matrix(p + 'attn_v.weight', nEmbd, kvDim, 1 / Math.sqrt(nEmbd)); //     [n_embd, n_kv*head_dim]
    }
    if (arch === 'qwen2') {
      vector(p + 'attn_q.bias', qDim, 0, 0.5);
      vector(p + 'attn_k.bias', kvDim, 0, 0.5);
      vector(p + 'attn_v.bias', kvDim, 0, 0.5);
    }
    if (arch === 'qwen3' || arch === 'qwen3moe' || arch === 'gemma3') {
      vector(p + 'attn_q_norm.weight', headDim, 1, 0.1);
      vector(p + 'attn_k_norm.weight', headDim, 1, 0.1);
    }
    matrix(p + 'attn_output.weight', qDim, nEmbd, 1 / Math.sqrt(qDim)); //  [n_head*head_dim, n_embd]
    vector(p + 'ffn_norm.weight', nEmbd, 1, 0.1);
    if (arch === 'qwen3moe') {
      // the router, F32 as llama.cpp's quantizer leaves it, and the experts stacked along a third dimension
      const router = rng.normals(nEmbd * c.nExpert, 0, 1 / Math.sqrt(nEmbd)); //   [n_embd, n_expert]
      tensors.push({
        name: p + 'ffn_gate_inp.weight',
        dims: [nEmbd, c.nExpert],
        type: GGML_TYPE.F32,
        data: f32Bytes(router),
      });
      expertStack(p + 'ffn_gate_exps.weight', nEmbd, c.nFfExp, 1 / Math.sqrt(nEmbd)); // [n_embd, n_ff_exp, n_expert]
      expertStack(p + 'ffn_up_exps.weight', nEmbd, c.nFfExp, 1 / Math.sqrt(nEmbd)); //   [n_embd, n_ff_exp, n_expert]
      expertStack(p + 'ffn_down_exps.weight', c.nFfExp, nEmbd, 1 / Math.sqrt(c.nFfExp)); // [n_ff_exp, n_embd, n_expert]
    } else if (arch === 'phi3') {
      matrix(p + 'ffn_up.weight', nEmbd, 2 * nFf, 1 / Math.sqrt(nEmbd)); //  [n_embd, gate rows then up rows]
    } else {
      matrix(p + 'ffn_gate.weight', nEmbd, nFf, 1 / Math.sqrt(nEmbd)); //     [n_embd, n_ff]
      matrix(p + 'ffn_up.weight', nEmbd, nFf, 1 / Math.sqrt(nEmbd)); //       [n_embd, n_ff]
    }
    if (arch !== 'qwen3moe') matrix(p + 'ffn_down.weight', nFf, nEmbd, 1 / Math.sqrt(nFf)); // [n_ff, n_embd]
    if (arch === 'gemma3') {
      // RMSNorms of the attention and feed-forward outputs (the converter has added Gemma's 1 to them)
      vector(p + 'post_attention_norm.weight', nEmbd, 1, 0.1);
      vector(p + 'post_ffw_norm.weight', nEmbd, 1, 0.1);
    }
  }
  vector('output_norm.weight', nEmbd, 1, 0.1);
  if (!c.tiedEmbeddings) matrix('output.weight', nEmbd, nVocab, 2 / Math.sqrt(nEmbd)); // [n_embd, n_vocab]

  // metadata, in the order and with the value types the converter uses
  const vocab = syntheticVocab(nVocab);
  const meta: [string, MetaValue][] = [
    ['general.architecture', arch],
    ['general.type', 'model'],
    ['general.name', c.name],
    [`${arch}.block_count`, u32(nLayer)],
    [`${arch}.context_length`, u32(c.nCtx)],
    ...(c.ropeScaling === 'longrope'
      ? ([[`${arch}.rope.scaling.original_context_length`, u32(c.nCtx / 4)]] as [string, MetaValue][])
      : []),
    [`${arch}.embedding_length`, u32(nEmbd)],
    [`${arch}.feed_forward_length`, u32(nFf)],
    [`${arch}.attention.head_count`, u32(nHead)],
    [`${arch}.attention.head_count_kv`, u32(nHeadKv)],
    [`${arch}.rope.freq_base`, f32(c.ropeBase)],
    [`${arch}.attention.layer_norm_rms_epsilon`, f32(c.eps)],
  ];
  if (arch === 'qwen3' || arch === 'qwen3moe' || arch === 'gemma3' || options.headDim !== undefined) {
    meta.push([`${arch}.attention.key_length`, u32(headDim)], [`${arch}.attention.value_length`, u32(headDim)]);
  }
  meta.push(['general.file_type', u32(c.mix ? MIX_FILE_TYPE[c.mix] : FILE_TYPE[c.type])]);
  if (arch === 'qwen3moe') {
    meta.push(
      [`${arch}.expert_count`, u32(c.nExpert)],
      [`${arch}.expert_used_count`, u32(c.nExpertUsed)],
      [`${arch}.expert_feed_forward_length`, u32(c.nFfExp)],
    );
  }
  if (arch === 'gemma3') {
    // Gemma 3's local layers see 512 or 1024 positions; by default here the context (a window that hides nothing).
    meta.push([`${arch}.attention.sliding_window`, u32(c.slidingWindow)]);
    if (c.ropeScaling === 'linear')
      meta.push([`${arch}.rope.scaling.type`, 'linear'], [`${arch}.rope.scaling.factor`, f32(8)]);
  }
  if (arch === 'phi3') {
    // Phi-3's converter writes the window from config.json (Phi-4-mini's: longer than its context); llama.cpp
    // refuses a phi3 file without it. By default here the context, so that the window never hides a position.
    meta.push([`${arch}.attention.sliding_window`, u32(c.slidingWindow)]);
    if (c.ropeScaling === 'longrope') {
      // convert_hf_to_gguf.py's attn_factor: sqrt(1 + ln(scale) / ln(original context)), scale = 4 here
      meta.push([`${arch}.rope.scaling.attn_factor`, f32(Math.sqrt(1 + Math.log(4) / Math.log(c.nCtx / 4)))]);
    }
  }
  if (arch === 'llama') meta.push(['llama.vocab_size', u32(nVocab)]);
  meta.push(
    [`${arch}.rope.dimension_count`, u32(c.ropeDim)],
    ['tokenizer.ggml.model', 'llama'],
    ['tokenizer.ggml.pre', 'default'],
    ['tokenizer.ggml.tokens', arr(ValueType.STRING, vocab.tokens)],
    ['tokenizer.ggml.scores', arr(ValueType.FLOAT32, vocab.scores)],
    ['tokenizer.ggml.token_type', arr(ValueType.INT32, vocab.types)],
    ['tokenizer.ggml.bos_token_id', u32(1)],
    ['tokenizer.ggml.eos_token_id', u32(2)],
    ['tokenizer.ggml.unknown_token_id', u32(0)],
    ['tokenizer.ggml.add_bos_token', true],
    ['tokenizer.ggml.add_eos_token', false],
  );
  if (c.mix || (c.type !== 'F32' && c.type !== 'F16' && c.type !== 'BF16'))
    meta.push(['general.quantization_version', u32(2)]);
  meta.push(['general.alignment', u32(32)]);

  return { bytes: buildGguf({ version: 3, alignment: 32, metadata: meta, tensors }), config: c };
}

/**
 * A model slow per token (about 50 MB of F32 weights, ~300 tokens/s on two cores): a long generation or a long
 * read is still running seconds after it starts (the engine's crash, cancellation and stopping tests).
 */
export const SLOW_MODEL: RandomModelOptions = {
  nEmbd: 512,
  nHead: 8,
  nHeadKv: 4,
  nFf: 1536,
  nLayer: 4,
  nCtx: 4096,
  nVocab: 320,
  seed: 7,
};

/** Writes a random-weight model file and returns the resolved options it was made with. */
export function writeRandomModel(path: string, options: RandomModelOptions = {}): RandomModelConfig {
  const { bytes, config } = buildRandomModel(options);
  writeFileSync(path, bytes);
  return config;
}
