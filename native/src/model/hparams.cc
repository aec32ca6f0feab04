#include "model/hparams.h"

#include <cmath>

#include "core/error.h"
#include "gguf/metadata-rules.h"

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

// An integer hyperparameter, `v` read from the file or defaulted, checked against its key's range in the
// metadata table (gguf/metadata-rules.cc: the one place the ranges are written).
static int32_t in_range(const gguf::File& f, const std::string& arch, const char* table_key, int64_t v) {
  const gguf::KeyRule& r = gguf::metadata_rule(table_key);
  if (!r.accepts(double(v)))
    fail("MODEL_BAD_HPARAMS", strfmt("%s: %s%s = %lld is out of range: it must be %s", f.path().c_str(), arch.c_str(),
                                     table_key + 6, (long long)v, r.range_text().c_str()));
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
  // `k` as the table spells it ("{arch}.context_length"): required, or defaulted to `def`.
  auto req = [&](const char* k) { return in_range(f, hp.arch_name, k, f.get_int(a + (k + 7))); };
  auto opt = [&](const char* k, int64_t def) { return in_range(f, hp.arch_name, k, f.get_int_or(a + (k + 7), def)); };

  hp.n_ctx_train = req("{arch}.context_length");
  hp.n_embd = req("{arch}.embedding_length");
  hp.n_layer = req("{arch}.block_count");
  if (hp.arch == Arch::Qwen3Moe) {
    hp.n_expert = req("{arch}.expert_count");
    hp.n_expert_used = req("{arch}.expert_used_count");
    if (hp.n_expert_used > hp.n_expert)
      fail("MODEL_BAD_HPARAMS", strfmt("%s: %d experts used of %d", f.path().c_str(), hp.n_expert_used, hp.n_expert));
    hp.n_ff = opt("{arch}.feed_forward_length", 1);  // the dense width, unused: every block is experts
    hp.n_ff_exp = opt("{arch}.expert_feed_forward_length", hp.n_ff / hp.n_expert_used);  // llama.cpp's default
  } else {
    hp.n_ff = req("{arch}.feed_forward_length");
  }
  // head_count may be an array (per-layer counts) in some files; Folio needs it uniform, and get_int says
  // so (an integer expected, an array found).
  hp.n_head = req("{arch}.attention.head_count");
  hp.n_head_kv = opt("{arch}.attention.head_count_kv", hp.n_head);
  if (hp.n_head % hp.n_head_kv != 0)
    fail("MODEL_BAD_HPARAMS",
         strfmt("%s: %d query heads are not a multiple of %d KV heads", f.path().c_str(), hp.n_head, hp.n_head_kv));
  const int64_t default_head_dim = hp.n_embd % hp.n_head == 0 ? hp.n_embd / hp.n_head : 0;
  hp.head_dim = opt("{arch}.attention.key_length", default_head_dim);
  hp.head_dim_v = opt("{arch}.attention.value_length", hp.head_dim);
  hp.rope_dim = opt("{arch}.rope.dimension_count", hp.head_dim);
  if (hp.rope_dim % 2 != 0 || hp.rope_dim > hp.head_dim)
    fail("MODEL_BAD_HPARAMS", strfmt("%s: rope.dimension_count %d is odd or wider than a head (%d)", f.path().c_str(),
                                     hp.rope_dim, hp.head_dim));
  // The float keys were checked finite and in range with the others (gguf::check_metadata); the defaults are.
  hp.rms_eps = float(f.get_float_or(a + "attention.layer_norm_rms_epsilon", 1e-5));
  hp.rope_base = float(f.get_float_or(a + "rope.freq_base", 10000.0));
  if (!(hp.rms_eps > 0) || !std::isfinite(hp.rope_base))  // a double in range can still round to 0 or inf as a float
    fail("MODEL_BAD_HPARAMS", f.path() + ": the RMS epsilon or rope.freq_base does not fit a float");

  const std::string scaling = f.get_string_or(a + "rope.scaling.type", "none");
  if (scaling == "linear") {
    hp.rope_freq_scale = float(1.0 / f.get_float_or(a + "rope.scaling.factor", 1.0));
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
    fail("MODEL_BAD_HPARAMS", f.path() + ": rope.scaling.attn_factor does not fit a float");
  hp.n_ctx_orig = opt("{arch}.rope.scaling.original_context_length", hp.n_ctx_train);
  if (f.find(a + "attention.sliding_window")) {
    hp.n_swa = in_range(f, hp.arch_name, "{arch}.attention.sliding_window", f.get_int(a + "attention.sliding_window"));
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
