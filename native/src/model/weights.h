// The model's tensors, used in place from the memory-mapped GGUF file, and the CPU kernels' repacked copies.
#pragma once
#include <cstdint>
#include <vector>

#include "core/large-buffer.h"
#include "core/thread-pool.h"
#include "gguf/gguf.h"
#include "model/hparams.h"
#include "quant/quant.h"
#include "quant/types.h"
#include "quant/weight.h"

namespace folio {

struct LayerWeights {
  Weight attn_norm;       // [n_embd]
  Weight wq, wk, wv;      // [n_embd] -> [n_head·head_dim], [n_kv·head_dim], [n_kv·head_dim_v]; phi3: row
                          // ranges of the one fused attn_qkv matrix
  Weight bq, bk, bv;      // qwen2 biases, F32
  Weight q_norm, k_norm;  // qwen3, gemma3 per-head RMSNorm weights [head_dim]
  Weight wo;              // [n_head·head_dim_v] -> [n_embd]
  Weight ffn_norm;        // [n_embd]
  Weight w_gate, w_up;    // [n_embd] -> [n_ff]; phi3: the two halves of the fused ffn_up matrix
  Weight w_down;          // [n_ff] -> [n_embd]
  Weight attn_post_norm, ffn_post_norm;  // gemma3: RMSNorm weights [n_embd] of the blocks' outputs
  // qwen3moe: the router [n_embd] -> [n_expert], and the experts' matrices stacked, n_expert of each:
  // gate and up [n_embd] -> [n_ff_exp], down [n_ff_exp] -> [n_embd] (expert_rows picks one). They stay in
  // the mapped file on the CPU, so that an expert's pages are read only when a token is routed to it.
  Weight ffn_gate_inp;
  Weight gate_exps, up_exps, down_exps;
};

struct ModelWeights {
  Weight tok_embd;               // [n_vocab rows of n_embd]
  Weight output_norm;            // [n_embd]
  Weight output;                 // [n_embd] -> [n_vocab]; token_embd when the file ties them
  Weight rope_freqs;             // [rope_dim/2] frequency divisors (Llama 3.1 rope scaling), F32, optional
  Weight rope_long, rope_short;  // [rope_dim/2] LongRoPE's divisors beyond / within n_ctx_orig (phi3), optional
  std::vector<LayerWeights> layers;
  size_t total_bytes = 0;                               // bytes of all tensors the model uses
  std::vector<std::pair<TensorType, int>> type_counts;  // how many tensors of each type
};

// Finds and checks every tensor against the hyperparameters; sets hp.n_vocab. Throws MODEL_MISSING_TENSOR,
// MODEL_BAD_TENSOR (wrong shape) or UNSUPPORTED_TYPE, each naming the tensor.
ModelWeights bind_weights(const gguf::File& file, HParams& hp);

// Expert e's matrix of a stack of experts' matrices with `rows` rows each.
Weight expert_rows(const Weight& stacked, int e, int64_t rows);

// The rope frequency divisors a context of n_ctx positions uses: rope_freqs where the file has them, else
// LongRoPE's long factors when n_ctx passes the original context (llama.cpp's rule), else its short ones;
// an empty Weight when there are none.
const Weight& rope_factors(const ModelWeights& w, const HParams& hp, int32_t n_ctx);

// The weights as the CPU kernels of `isa` want them: the matrices are copied into buffers appended to
// `storage` (the threads of `pool` share the work), repacked where quant::cpu_layout says so, in huge
// pages where the OS gives them, and the file's pages of each released from the process's memory once
// copied; without huge pages only the repacked ones are copied. Everything else still points into the
// file: token_embd stays as it is for the embedding lookup, also where the output matrix shares it (which
// then gets a copy of its own). The copies take at most copy_limit bytes: past it, only the repacked
// matrices are copied, and none when those alone would pass it.
ModelWeights repack_for_cpu(const ModelWeights& mw, const gguf::File& file, quant::Isa isa, ThreadPool& pool,
                            std::vector<LargeBuffer>& storage, uint64_t copy_limit);

}  // namespace folio
