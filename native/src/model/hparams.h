// Hyperparameters of the supported architectures, read from GGUF metadata ({arch}.* keys).
#pragma once
#include <cstdint>
#include <string>

#include "gguf/gguf.h"

namespace folio {

enum class Arch { Llama, Qwen2, Qwen3, Qwen3Moe, Phi3, Gemma3 };
constexpr Arch kArchitectures[] = {Arch::Llama,    Arch::Qwen2, Arch::Qwen3,
                                   Arch::Qwen3Moe, Arch::Phi3,  Arch::Gemma3};  // every Arch, once
enum class RopeType { Norm, Neox };  // Norm rotates adjacent pairs (2i, 2i+1); Neox rotates (i, i + dim/2)

struct HParams {
  Arch arch = Arch::Llama;
  std::string arch_name;  // general.architecture
  std::string name;       // general.name
  int32_t n_vocab = 0;
  int32_t n_ctx_train = 0;
  int32_t n_embd = 0;
  int32_t n_layer = 0;
  int32_t n_head = 0;      // query heads
  int32_t n_head_kv = 0;   // key/value heads (GQA: n_head is a multiple)
  int32_t head_dim = 0;    // per-head width of queries and keys
  int32_t head_dim_v = 0;  // per-head width of values
  int32_t n_ff = 0;
  float rms_eps = 1e-5f;
  float rope_base = 10000.0f;
  float rope_freq_scale = 1.0f;    // linear rope scaling: positions are multiplied by this
  float rope_attn_factor = 1.0f;   // rope.scaling.attn_factor (LongRoPE's mscale): cos and sin are multiplied by it
  int32_t n_ctx_orig = 0;          // rope.scaling.original_context_length: beyond it LongRoPE's long factors apply
  int32_t n_swa = 0;               // attention.sliding_window: a query sees the n_swa newest positions; 0: all
  int32_t swa_pattern = 0;         // gemma3: of every swa_pattern layers the last is global, the others slide
  float rope_base_swa = 10000.0f;  // gemma3: the sliding layers' rope base (and no rope scaling there)
  float embd_scale = 1.0f;         // gemma3: the token embeddings are multiplied by sqrt(n_embd)
  float q_scale = 1.0f;            // attention's scale over 1/sqrt(head_dim) (Gemma 3 27B: 1/sqrt(n_embd/n_head))
  int32_t rope_dim = 0;            // leading dims of each head that are rotated
  RopeType rope_type = RopeType::Norm;
  bool has_qkv_bias = false;    // qwen2
  bool has_qk_norm = false;     // qwen3, qwen3moe, gemma3
  bool has_post_norms = false;  // gemma3: RMSNorm of the attention and feed-forward outputs before each residual
  bool gelu_ffn = false;        // gemma3: gelu(gate) · up instead of silu(gate) · up
  // qwen3moe: the feed-forward block is n_expert SwiGLU experts of width n_ff_exp, of which a softmax router
  // picks n_expert_used per token (their weights renormalised to sum to 1); 0 experts: a dense block.
  int32_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0;

  // A sliding-window layer (gemma3's local layers): its own rope base, no rope scaling.
  bool is_swa_layer(int l) const { return swa_pattern > 0 && (l + 1) % swa_pattern != 0; }
  // The sliding window of layer l's attention (backend/sliding-window.h), 0 for none: gemma3's sliding
  // layers, and phi3's every layer (ik_llama.cpp's build_phi3 masks all with the window where n_swa > 0).
  int32_t layer_window(int l) const {
    if (arch == Arch::Gemma3) return is_swa_layer(l) ? n_swa : 0;
    return arch == Arch::Phi3 ? n_swa : 0;
  }

  int32_t n_gqa() const { return n_head / n_head_kv; }
  int64_t q_width() const { return int64_t(n_head) * head_dim; }
  int64_t k_width() const { return int64_t(n_head_kv) * head_dim; }
  int64_t v_width() const { return int64_t(n_head_kv) * head_dim_v; }
};

// Throws Error UNSUPPORTED_ARCH (naming the architecture) or MODEL_BAD_HPARAMS (a value out of its range
// that the file did not hold, such as a head width derived from others, or two values that disagree). The
// keys the file holds were checked against their ranges before (gguf::check_metadata).
HParams read_hparams(const gguf::File& file);

const char* arch_name(Arch arch);

// general.architecture when it is a string naming an architecture Folio runs, else empty: the architecture
// whose "{arch}." keys gguf::check_metadata checks.
std::string supported_architecture(const gguf::File& file);

}  // namespace folio
