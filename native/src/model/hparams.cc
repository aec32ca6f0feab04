#include "model/hparams.h"

#include <cmath>

#include "core/error.h"

namespace folio {

const char* arch_name(Arch arch) {
  switch (arch) {
    case Arch::Llama: return "llama";
    case Arch::Qwen2: return "qwen2";
    case Arch::Qwen3: return "qwen3";
    case Arch::Qwen3Moe: return "qwen3moe";
    case Arch::Phi3: return "phi3";
    case Arch::Gemma3: return "gemma3";
  }
  return "?";
}

static bool arch_from_name(std::string_view name, Arch& arch) {
  for (Arch a : kArchitectures)
    if (name == arch_name(a)) {
      arch = a;
      return true;
    }
  return false;
}

std::string supported_architecture(const gguf::File& f) {
  const gguf::Value* v = f.find("general.architecture");
  Arch arch;
  return v && v->type == gguf::ValueType::STRING && arch_from_name(v->str, arch) ? std::string(v->str) : std::string();
}

static int32_t positive(const gguf::File& f, const std::string& key, int64_t v, int64_t max) {
  if (v <= 0 || v > max)
    fail("MODEL_BAD_HPARAMS", strfmt("%s: %s = %lld is out of range (1 to %lld)", f.path().c_str(), key.c_str(),
                                     (long long)v, (long long)max));
  return int32_t(v);
}

HParams read_hparams(const gguf::File& f) {
  HParams hp;
  hp.arch_name = f.get_string("general.architecture");
  if (!arch_from_name(hp.arch_name, hp.arch)) {
    std::string known;
    for (Arch a : kArchitectures) known += std::string(known.empty() ? "" : ", ") + arch_name(a);
    fail("UNSUPPORTED_ARCH", "unsupported model architecture '" + hp.arch_name + "': Folio runs " + known);
  }
  hp.name = f.get_string_or("general.name", "");
  const std::string a = hp.arch_name + ".";
  auto req = [&](const char* k, int64_t max) { return positive(f, a + k, f.get_int(a + k), max); };
  auto opt = [&](const char* k, int64_t def, int64_t max) { return positive(f, a + k, f.get_int_or(a + k, def), max); };

  hp.n_ctx_train = req("context_length", int64_t(1) << 31);
  hp.n_embd = req("embedding_length", 1 << 20);
  hp.n_layer = req("block_count", 4096);
  if (hp.arch == Arch::Qwen3Moe) {
    hp.n_expert = req("expert_count", 1 << 12);
    hp.n_expert_used = req("expert_used_count", 1 << 12);
    if (hp.n_expert_used > hp.n_expert)
      fail("MODEL_BAD_HPARAMS", strfmt("%s: %d experts used of %d", f.path().c_str(), hp.n_expert_used, hp.n_expert));
    hp.n_ff = opt("feed_forward_length", 1, 1 << 22);  // the dense width, unused: every block is experts
    hp.n_ff_exp = opt("expert_feed_forward_length", hp.n_ff / hp.n_expert_used, 1 << 22);  // llama.cpp's default
  } else {
    hp.n_ff = req("feed_forward_length", 1 << 22);
  }
  // head_count may be an array (per-layer counts) in some files; Folio needs it uniform, and get_int says
  // so (an integer expected, an array found).
  hp.n_head = req("attention.head_count", 1 << 16);
  hp.n_head_kv = opt("attention.head_count_kv", hp.n_head, 1 << 16);
  if (hp.n_head % hp.n_head_kv != 0)
    fail("MODEL_BAD_HPARAMS",
         strfmt("%s: %d query heads are not a multiple of %d KV heads", f.path().c_str(), hp.n_head, hp.n_head_kv));
  const int64_t default_head_dim = hp.n_embd % hp.n_head == 0 ? hp.n_embd / hp.n_head : 0;
  hp.head_dim =
      positive(f, a + "attention.key_length", f.get_int_or(a + "attention.key_length", default_head_dim), 1 << 10);
  hp.head_dim_v =
      positive(f, a + "attention.value_length", f.get_int_or(a + "attention.value_length", hp.head_dim), 1 << 10);
  hp.rope_dim = opt("rope.dimension_count", hp.head_dim, hp.head_dim);
  if (hp.rope_dim % 2 != 0)
    fail("MODEL_BAD_HPARAMS", strfmt("%s: rope.dimension_count %d is odd", f.path().c_str(), hp.rope_dim));
  hp.rms_eps = float(f.get_float_or(a + "attention.layer_norm_rms_epsilon", 1e-5));
  hp.rope_base = float(f.get_float_or(a + "rope.freq_base", 10000.0));
  if (!(hp.rms_eps > 0) || !(hp.rope_base > 1) || !std::isfinite(hp.rope_base))
    fail("MODEL_BAD_HPARAMS", f.path() + ": invalid RMS epsilon or rope.freq_base");

  const std::string scaling = f.get_string_or(a + "rope.scaling.type", "none");
  if (scaling == "linear") {
    double factor = f.get_float_or(a + "rope.scaling.factor", 1.0);
    if (!(factor >= 1.0) || !std::isfinite(factor))
      fail("MODEL_BAD_HPARAMS", f.path() + ": invalid rope.scaling.factor");
    hp.rope_freq_scale = float(1.0 / factor);
  } else if (scaling == "longrope" && hp.arch == Arch::Phi3) {
    // the factors are tensors (model/weights.h), the rest are the keys read below
  } else if (scaling != "none" && scaling != "") {
    // Llama 3's scheme needs no key: the converter stores it as the rope_freqs.weight tensor.
    fail("UNSUPPORTED_ROPE_SCALING", f.path() + ": rope scaling type '" + scaling + "' is not supported");
  }

  // LongRoPE (Phi-3 128k, Phi-4-mini): the converter stores the per-pair factors as the rope_factors_long
  // and rope_factors_short tensors, the context they switch at and the cos/sin scale as keys.
  hp.rope_attn_factor = float(f.get_float_or(a + "rope.scaling.attn_factor", 1.0));
  if (!(hp.rope_attn_factor > 0) || !std::isfinite(hp.rope_attn_factor))
    fail("MODEL_BAD_HPARAMS", f.path() + ": invalid rope.scaling.attn_factor");
  hp.n_ctx_orig = opt("rope.scaling.original_context_length", hp.n_ctx_train, int64_t(1) << 31);
  if (f.find(a + "attention.sliding_window")) {
    const int64_t w = f.get_int(a + "attention.sliding_window");
    if (w < 0 || w > (int64_t(1) << 31) - 1)
      fail("MODEL_BAD_HPARAMS",
           strfmt("%s: attention.sliding_window = %lld is out of range", f.path().c_str(), (long long)w));
    hp.n_swa = int32_t(w);
  } else if (hp.arch == Arch::Phi3 && (hp.n_layer == 32 || hp.n_layer == 40) && hp.n_ctx_train == 4096) {
    hp.n_swa = 2047;  // Phi-3-mini/medium-4k files from before the key was written (llama.cpp's default)
  }
  if (hp.arch == Arch::Gemma3) {
    // Gemma 3 (as llama.cpp reads it): five sliding layers, then a global one; the sliding layers rotate
    // with base 10000 and no scaling; the embeddings are scaled by sqrt(n_embd); the attention's scale is
    // 1/sqrt(head_dim), except for the 27B model (62 layers, query_pre_attn_scalar = n_embd/n_head). No
    // soft-capping: Gemma 3's configs set attn/final_logit_softcapping to null (Gemma 2 had them), llama.cpp's
    // converter writes neither key and its gemma3 graph applies none, so a gemma3 file's keys are not read.
    if (hp.n_swa <= 0) fail("MODEL_BAD_HPARAMS", f.path() + ": a gemma3 model needs attention.sliding_window");
    hp.swa_pattern = 6;
    hp.rope_base_swa = 10000.0f;
    hp.embd_scale = std::sqrt(float(hp.n_embd));
    if (hp.n_layer == 62) hp.q_scale = std::sqrt(float(hp.head_dim) * float(hp.n_head) / float(hp.n_embd));
    hp.has_post_norms = true;
    hp.gelu_ffn = true;
  }

  hp.rope_type = hp.arch == Arch::Llama ? RopeType::Norm : RopeType::Neox;
  hp.has_qkv_bias = hp.arch == Arch::Qwen2;
  hp.has_qk_norm = hp.arch == Arch::Qwen3 || hp.arch == Arch::Qwen3Moe || hp.arch == Arch::Gemma3;
  return hp;
}

}  // namespace folio
