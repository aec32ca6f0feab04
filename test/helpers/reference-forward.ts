// A slow, obviously correct float64 forward pass for GGUF models of the llama, qwen2, qwen3, qwen3moe, phi3
// and gemma3 architectures: the oracle the engine's logits are checked against. One token at a time with a plain
// KV cache, like llama2.c; every weight is dequantized to float64 once (quant-ref.ts) and every
// operation is done in float64.
//
// Conventions are llama.cpp's:
//   - a weight W in ggml order [n_in, n_out] is n_out rows of n_in values; y = W x is y[o] = sum_i W[o][i] x[i]
//   - RoPE: llama rotates adjacent pairs (2i, 2i+1) ("normal"); qwen2/qwen3 rotate (i, i + rope_dim/2)
//     ("neox"). Pair i turns by pos * base^(-2i/rope_dim), divided by rope_freqs[i] when the file has
//     a rope_freqs.weight tensor (Llama 3.1 rope scaling).
//   - GQA: query head h reads KV head floor(h / (n_head / n_head_kv)).
//   - phi3: every layer slides where the file gives attention.sliding_window (a query sees the n_swa newest
//     positions); attn_qkv.weight is the Q, K and V rows one after the other, ffn_up.weight the gate's rows then the
//     up projection's; LongRoPE divides pair i's angle by rope_factors_long[i] when the context passes
//     rope.scaling.original_context_length, else by rope_factors_short[i], and multiplies the rotated pair's
//     cos and sin by rope.scaling.attn_factor (ggml's mscale).
//   - gemma3 (llama.cpp's reading of it): the embeddings times sqrt(n_embd); of every 6 layers the first 5
//     slide (a query sees the attention.sliding_window newest positions; rope base 10000, no rope scaling),
//     the 6th is global (the file's base, and linear scaling where the file has it); per-head q/k norms;
//     RMSNorms of both blocks' outputs before the residual adds; gelu(gate) · up with GELU's tanh form;
//     attention scaled by 1/sqrt(head_dim), 1/sqrt(n_embd/n_head) for the 27B model (62 layers).
//   - qwen3moe: per token the router's softmax over the experts, its expert_used_count largest (ties: the lower
//     expert) renormalised to sum to 1; the block's output is the weighted sum of those SwiGLU experts'.
import { readGguf, metaNumber, metaString, type GgufFile } from './gguf-reader.ts';
import { dequantize } from './quant-ref.ts';

export const ARCHS = ['llama', 'qwen2', 'qwen3', 'qwen3moe', 'phi3', 'gemma3'] as const;
export type Arch = (typeof ARCHS)[number];

export interface HyperParams {
  arch: Arch;
  nVocab: number;
  nCtx: number;
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  /** Per-head dimension of queries and keys ({arch}.attention.key_length, else n_embd / n_head). */
  headDim: number;
  nFf: number;
  eps: number;
  ropeBase: number;
  /** Number of leading dimensions of each head that RoPE rotates. */
  ropeDim: number;
  ropeStyle: 'normal' | 'neox';
  /** rope.scaling.attn_factor: the rotated pair's cos and sin are multiplied by it (LongRoPE); else 1. */
  ropeMscale: number;
  /** rope.scaling.original_context_length (LongRoPE's switch from short to long factors); else nCtx. */
  nCtxOrig: number;
  /** Linear rope scaling: positions times 1 / rope.scaling.factor (gemma3: its global layers); else 1. */
  ropeFreqScale: number;
  /** attention.sliding_window where layers slide (gemma3's sliding layers, phi3's every layer), else 0. */
  nSwa: number;
  /** qwen3moe: experts per layer, per token, and an expert's width; 0 for dense models. */
  nExpert: number;
  nExpertUsed: number;
  nFfExp: number;
  /** True when there is no output.weight and token_embd.weight is the output projection. */
  tiedEmbeddings: boolean;
}

/** A model ready for the reference forward: hyperparameters and every tensor as float64. */
export interface ReferenceModel {
  hp: HyperParams;
  tensors: Map<string, Float64Array>;
}

/** The hyperparameters of a llama/qwen2/qwen3 GGUF file, with llama.cpp's defaults for absent keys. */
export function readHyperParams(file: GgufFile): HyperParams {
  const name = metaString(file, 'general.architecture');
  const arch = ARCHS.find((a) => a === name);
  if (!arch) throw new Error(`unsupported architecture ${name}`);
  const key = (k: string) => `${arch}.${k}`;
  const scaling = file.metadata.get(key('rope.scaling.type'));
  if (
    scaling !== undefined &&
    scaling !== 'none' &&
    !(scaling === 'longrope' && arch === 'phi3') &&
    !(scaling === 'linear' && arch === 'gemma3')
  )
    throw new Error(`rope scaling type ${String(scaling)} is not supported`);

  const tokenEmbd = file.tensorsByName.get('token_embd.weight');
  if (!tokenEmbd) throw new Error('missing tensor token_embd.weight');
  const nEmbd = metaNumber(file, key('embedding_length'));
  const nHead = metaNumber(file, key('attention.head_count'));
  const headDim = metaNumber(file, key('attention.key_length'), nEmbd / nHead);
  const valueDim = metaNumber(file, key('attention.value_length'), headDim);
  if (valueDim !== headDim) throw new Error('key_length != value_length is not supported');
  return {
    arch,
    nVocab: tokenEmbd.dims[1],
    nCtx: metaNumber(file, key('context_length')),
    nEmbd,
    nLayer: metaNumber(file, key('block_count')),
    nHead,
    nHeadKv: metaNumber(file, key('attention.head_count_kv'), nHead),
    headDim,
    nFf: metaNumber(file, key('feed_forward_length')),
    eps: metaNumber(file, key('attention.layer_norm_rms_epsilon')),
    ropeBase: metaNumber(file, key('rope.freq_base'), 10000),
    ropeDim: metaNumber(file, key('rope.dimension_count'), headDim),
    ropeStyle: arch === 'llama' ? 'normal' : 'neox',
    ropeMscale: metaNumber(file, key('rope.scaling.attn_factor'), 1),
    nCtxOrig: metaNumber(file, key('rope.scaling.original_context_length'), metaNumber(file, key('context_length'))),
    ropeFreqScale: scaling === 'linear' ? 1 / metaNumber(file, key('rope.scaling.factor')) : 1,
    nSwa:
      arch === 'gemma3' || arch === 'phi3'
        ? metaNumber(
            file,
            key('attention.sliding_window'),
            // Phi-3-mini/medium-4k files from before the key was written: llama.cpp's 2047
            arch === 'phi3' &&
              [32, 40].includes(metaNumber(file, key('block_count'))) &&
              metaNumber(file, key('context_length')) === 4096
              ? 2047
              : 0,
          )
        : 0,
    nExpert: metaNumber(file, key('expert_count'), 0),
    nExpertUsed: metaNumber(file, key('expert_used_count'), 0),
    nFfExp: metaNumber(file, key('expert_feed_forward_length'), 0),
    tiedEmbeddings: !file.tensorsByName.has('output.weight'),
  };
}

/** Reads a model (a path or a parsed file) and dequantizes all its tensors. */
export function loadReferenceModel(model: string | GgufFile): ReferenceModel {
  const file = typeof model === 'string' ? readGguf(model) : model;
  const tensors = new Map<string, Float64Array>();
  for (const t of file.tensors) tensors.set(t.name, dequantize(t.type, t.data, t.nElements));
  return { hp: readHyperParams(file), tensors };
}

// ---------------------------------------------------------------------------------------------------
// building blocks

/** out[o] = sum_i W[o * nIn + i] * x[i]: W is nOut rows of nIn values (ggml dims [nIn, nOut]). */
function matvec(W: Float64Array, x: Float64Array, nIn: number, nOut: number): Float64Array {
  if (W.length !== nIn * nOut || x.length !== nIn)
    throw new Error(`matvec: shape mismatch ${W.length} vs ${nIn}x${nOut}`);
  const out = new Float64Array(nOut);
  for (let o = 0; o < nOut; o++) {
    let sum = 0;
    const row = o * nIn;
    for (let i = 0; i < nIn; i++) sum += W[row + i] * x[i];
    out[o] = sum;
  }
  return out;
}

/** x / sqrt(mean(x^2) + eps) * weight */
function rmsnorm(x: Float64Array, weight: Float64Array, eps: number): Float64Array {
  let ss = 0;
  for (const v of x) ss += v * v;
  const scale = 1 / Math.sqrt(ss / x.length + eps);
  return x.map((v, i) => v * scale * weight[i]);
}

/** In place: x[i] += y[i] */
function addInPlace(x: Float64Array, y: Float64Array) {
  for (let i = 0; i < x.length; i++) x[i] += y[i];
}

/** Rotates one head vector (headDim values starting at `at` in v) in place for position pos. */
function rope(
  v: Float64Array,
  at: number,
  pos: number,
  hp: HyperParams,
  freqFactors: Float64Array | undefined,
  base = hp.ropeBase,
  freqScale = hp.ropeFreqScale,
) {
  const half = hp.ropeDim / 2;
  for (let i = 0; i < half; i++) {
    let theta = freqScale * pos * base ** ((-2 * i) / hp.ropeDim);
    if (freqFactors) theta /= freqFactors[i];
    const cos = Math.cos(theta) * hp.ropeMscale,
      sin = Math.sin(theta) * hp.ropeMscale;
    // the two components of pair i
    const a = hp.ropeStyle === 'normal' ? at + 2 * i : at + i;
    const b = hp.ropeStyle === 'normal' ? at + 2 * i + 1 : at + i + half;
    const x0 = v[a],
      x1 = v[b];
    v[a] = x0 * cos - x1 * sin;
    v[b] = x0 * sin + x1 * cos;
  }
}

const silu = (x: number) => x / (1 + Math.exp(-x));
/** GELU's tanh form (gelu_pytorch_tanh, ggml's gelu). */
const geluTanh = (x: number) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));

// ---------------------------------------------------------------------------------------------------

/**
 * Runs the model over `tokens` from position 0 and returns the logits after every position:
 * result[p] is the n_vocab logits predicting the token after tokens[0..p]. `nCtx`, the context the
 * engine runs with (default the model's), picks LongRoPE's factors.
 */
export function referenceForward(
  model: string | GgufFile | ReferenceModel,
  tokens: number[],
  nCtx?: number,
): Float64Array[] {
  const m = typeof model === 'object' && 'hp' in model ? model : loadReferenceModel(model);
  const { hp } = m;
  const { nEmbd, nHead, nHeadKv, headDim, nFf, nVocab, eps } = hp;
  const qDim = nHead * headDim; //          all query heads side by side
  const kvDim = nHeadKv * headDim; //       all key (or value) heads side by side
  const group = nHead / nHeadKv; //         query heads per KV head
  const W = (name: string) => {
    const t = m.tensors.get(name);
    if (!t) throw new Error(`missing tensor ${name}`);
    return t;
  };
  const maybe = (name: string) => m.tensors.get(name);

  const tokenEmbd = W('token_embd.weight'); //                           [n_vocab][n_embd]
  const output = hp.tiedEmbeddings ? tokenEmbd : W('output.weight'); //   [n_vocab][n_embd]
  const longRope = (nCtx ?? hp.nCtx) > hp.nCtxOrig ? 'rope_factors_long.weight' : 'rope_factors_short.weight';
  const freqFactors = maybe('rope_freqs.weight') ?? maybe(longRope); //  [rope_dim/2] or none
  if (tokens.length > hp.nCtx) throw new Error(`${tokens.length} tokens exceed the context of ${hp.nCtx}`);
  const gemma = hp.arch === 'gemma3';
  /** qwen3moe's block: Σ over the routed experts of weight · Wdown(silu(Wgate xf) · Wup xf). */
  const moeFfn = (p: string, xf: Float64Array): Float64Array => {
    const { nExpert, nExpertUsed, nFfExp } = hp;
    const logits = matvec(W(p + 'ffn_gate_inp.weight'), xf, nEmbd, nExpert); // [n_expert]
    const max = Math.max(...logits);
    const probs = logits.map((l) => Math.exp(l - max)); // the softmax's denominator cancels below
    const picked = Array.from({ length: nExpert }, (_, e) => e)
      .sort((a, b) => probs[b] - probs[a] || a - b)
      .slice(0, nExpertUsed);
    const total = picked.reduce((s, e) => s + probs[e], 0);
    const out = new Float64Array(nEmbd);
    const [gateAll, upAll, downAll] = ['gate', 'up', 'down'].map((n) => W(p + `ffn_${n}_exps.weight`));
    for (const e of picked) {
      const slice = (t: Float64Array, size: number) => t.subarray(e * size, (e + 1) * size); // expert e's matrix
      const gate = matvec(slice(gateAll, nFfExp * nEmbd), xf, nEmbd, nFfExp); //   [n_ff_exp]
      const up = matvec(slice(upAll, nFfExp * nEmbd), xf, nEmbd, nFfExp); //       [n_ff_exp]
      const hidden = gate.map((g, i) => silu(g) * up[i]);
      const y = matvec(slice(downAll, nEmbd * nFfExp), hidden, nFfExp, nEmbd); //  [n_embd]
      for (let i = 0; i < nEmbd; i++) out[i] += (probs[e] / total) * y[i];
    }
    return out;
  };
  const sliding = (l: number) => gemma && (l + 1) % 6 !== 0; // gemma3's local layers: their own rotation
  // Layers whose attention slides: gemma3's local ones, every layer of phi3 (a key at position t is seen by a
  // query at pos iff pos − t < n_swa, ik_llama.cpp's mask)
  const windowed = (l: number) => hp.nSwa > 0 && (gemma ? sliding(l) : hp.arch === 'phi3');
  // 1/sqrt of the attention's scalar: head_dim, or n_embd/n_head for Gemma 3 27B
  const attnScale = 1 / Math.sqrt(gemma && hp.nLayer === 62 ? nEmbd / nHead : headDim);

  // KV cache: per layer, one key and one value vector of kvDim per position
  const keyCache: Float64Array[][] = Array.from({ length: hp.nLayer }, () => []); //   [layer][pos][kv_dim]
  const valueCache: Float64Array[][] = Array.from({ length: hp.nLayer }, () => []); // [layer][pos][kv_dim]
  const allLogits: Float64Array[] = [];

  for (let pos = 0; pos < tokens.length; pos++) {
    const token = tokens[pos];
    if (!(token >= 0 && token < nVocab)) throw new Error(`token ${token} out of range`);
    const x = tokenEmbd.slice(token * nEmbd, (token + 1) * nEmbd); //    [n_embd] residual stream
    if (gemma) for (let i = 0; i < nEmbd; i++) x[i] *= Math.sqrt(nEmbd);

    for (let l = 0; l < hp.nLayer; l++) {
      const p = `blk.${l}.`;

      // ---- attention ----
      const xb = rmsnorm(x, W(p + 'attn_norm.weight'), eps); //          [n_embd]
      const qkv = maybe(p + 'attn_qkv.weight'); // phi3: one matrix, the Q rows, then K's, then V's
      const qkvOut = qkv ? matvec(qkv, xb, nEmbd, qDim + 2 * kvDim) : undefined;
      const q = qkvOut ? qkvOut.slice(0, qDim) : matvec(W(p + 'attn_q.weight'), xb, nEmbd, qDim); //   [n_head * head_dim]
      const k = qkvOut ? qkvOut.slice(qDim, qDim + kvDim) : matvec(W(p + 'attn_k.weight'), xb, nEmbd, kvDim); // [n_kv * head_dim]
      const v = qkvOut ? qkvOut.slice(qDim + kvDim) : matvec(W(p + 'attn_v.weight'), xb, nEmbd, kvDim); // [n_kv * head_dim]
      const qBias = maybe(p + 'attn_q.bias'); // qwen2
      if (qBias) {
        addInPlace(q, qBias);
        addInPlace(k, W(p + 'attn_k.bias'));
        addInPlace(v, W(p + 'attn_v.bias'));
      }
      const qNorm = maybe(p + 'attn_q_norm.weight'); // qwen3: RMSNorm of each head, before RoPE
      if (qNorm) {
        const kNorm = W(p + 'attn_k_norm.weight'); //                    [head_dim]
        for (let h = 0; h < nHead; h++)
          q.set(rmsnorm(q.subarray(h * headDim, (h + 1) * headDim), qNorm, eps), h * headDim);
        for (let h = 0; h < nHeadKv; h++)
          k.set(rmsnorm(k.subarray(h * headDim, (h + 1) * headDim), kNorm, eps), h * headDim);
      }
      const base = sliding(l) ? 10000 : hp.ropeBase;
      const freqScale = sliding(l) ? 1 : hp.ropeFreqScale;
      for (let h = 0; h < nHead; h++) rope(q, h * headDim, pos, hp, freqFactors, base, freqScale);
      for (let h = 0; h < nHeadKv; h++) rope(k, h * headDim, pos, hp, freqFactors, base, freqScale);
      const first = windowed(l) ? Math.max(0, pos - hp.nSwa + 1) : 0; // the oldest position a query sees
      keyCache[l].push(k);
      valueCache[l].push(v);

      const attnOut = new Float64Array(qDim); //                          [n_head * head_dim]
      for (let h = 0; h < nHead; h++) {
        const kvh = Math.floor(h / group); // the KV head this query head reads
        const qh = q.subarray(h * headDim, (h + 1) * headDim); //         [head_dim]
        // scores over positions first..pos (causal; a sliding layer's window)
        const scores = new Float64Array(pos + 1).fill(-Infinity); //     [pos + 1]
        for (let t = first; t <= pos; t++) {
          const kt = keyCache[l][t].subarray(kvh * headDim, (kvh + 1) * headDim);
          let dot = 0;
          for (let i = 0; i < headDim; i++) dot += qh[i] * kt[i];
          scores[t] = dot * attnScale;
        }
        // softmax
        const max = Math.max(...scores);
        let sum = 0;
        for (let t = 0; t <= pos; t++) {
          scores[t] = Math.exp(scores[t] - max);
          sum += scores[t];
        }
        // weighted sum of values
        const out = attnOut.subarray(h * headDim, (h + 1) * headDim); //  [head_dim]
        for (let t = 0; t <= pos; t++) {
          const vt = valueCache[l][t].subarray(kvh * headDim, (kvh + 1) * headDim);
          const a = scores[t] / sum;
          for (let i = 0; i < headDim; i++) out[i] += a * vt[i];
        }
      }
      const attnProj = matvec(W(p + 'attn_output.weight'), attnOut, qDim, nEmbd); // Wo · attn [n_embd]
      const postAttn = maybe(p + 'post_attention_norm.weight'); // gemma3
      addInPlace(x, postAttn ? rmsnorm(attnProj, postAttn, eps) : attnProj);

      // ---- feed-forward (SwiGLU; gemma3: GEGLU) ----
      const xf = rmsnorm(x, W(p + 'ffn_norm.weight'), eps); //            [n_embd]
      if (hp.nExpert > 0) {
        addInPlace(x, moeFfn(p, xf));
        continue;
      }
      const fused = hp.arch === 'phi3' ? matvec(W(p + 'ffn_up.weight'), xf, nEmbd, 2 * nFf) : undefined; // [2 n_ff]
      const gate = fused ? fused.slice(0, nFf) : matvec(W(p + 'ffn_gate.weight'), xf, nEmbd, nFf); //    [n_ff]
      const up = fused ? fused.slice(nFf) : matvec(W(p + 'ffn_up.weight'), xf, nEmbd, nFf); //          [n_ff]
      const hidden = gate.map((g, i) => (gemma ? geluTanh(g) : silu(g)) * up[i]); // [n_ff]
      const down = matvec(W(p + 'ffn_down.weight'), hidden, nFf, nEmbd); //  Wdown · hidden [n_embd]
      const postFfn = maybe(p + 'post_ffw_norm.weight'); // gemma3
      addInPlace(x, postFfn ? rmsnorm(down, postFfn, eps) : down);
    }

    const final = rmsnorm(x, W('output_norm.weight'), eps); //           [n_embd]
    allLogits.push(matvec(output, final, nEmbd, nVocab)); //              [n_vocab]
  }
  return allLogits;
}
