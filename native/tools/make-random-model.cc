// make-random-model: writes a random-weight GGUF model of a realistic shape, for benchmarks that anyone
// can reproduce without downloading a model.
//
//   make-random-model --out FILE [--shape 1b|8b|tiny] [--type f16|q8_0|q4_k_m|...] [--seed S] [--threads N]
//
// The file is what llama.cpp's converter and quantizer would write for a Llama 3.x model of that shape:
// the llama architecture and its metadata keys, Llama 3's rope_freqs tensor, a byte-level BPE vocabulary
// of the real size (128256: 128000 ordinary tokens built by merges over the GPT-2 byte alphabet, then
// 256 special tokens with <|begin_of_text|> = 128000 and <|eot_id|> = 128009), F32 norms, and 2-D
// weights ~ normal(0, 1/sqrt(fan_in)) quantized with the engine's own quantize_row kernels.
//
// The names of llama.cpp's file types (q2_k, q3_k_s, q3_k_m, q3_k_l, q4_k_m, q5_k_m, iq4_xs) give the mix
// of tensor types that llama.cpp's quantizer writes for them (mix_type below); every other --type puts
// all 2-D weights in that one type.
//
// Weights are generated per row from a seed derived from (tensor, row), so the file does not depend on
// the thread count. Rows are generated and quantized in parallel, then written in order.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "core/error.h"
#include "quant/quant.h"
#include "quant/types.h"

using namespace folio;

namespace {

// ---------------------------------------------------------------------------------------------------
// Shapes

struct Shape {
  const char* name;
  int n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_vocab, n_ctx;
  bool tied;          // no output.weight: token_embd is the output projection too
  float rope_factor;  // Llama 3.x rope scaling factor (rope_freqs.weight)
};

// Llama-3.2-1B and Llama-3.1-8B; "tiny" is for tests of the tool itself.
const Shape kShapes[] = {
    {"1b", 2048, 16, 32, 8, 64, 8192, 128256, 131072, true, 32.0f},
    {"8b", 4096, 32, 32, 8, 128, 14336, 128256, 131072, false, 8.0f},
    {"tiny", 256, 2, 4, 2, 64, 768, 128256, 4096, true, 32.0f},
};

// ---------------------------------------------------------------------------------------------------
// Random numbers: splitmix64 seeds a xoshiro256+ stream per row; normals by Box-Muller.

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct Xoshiro {
  uint64_t s[4];
  explicit Xoshiro(uint64_t seed) {
    for (auto& v : s) v = splitmix(seed);
  }
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t next() {
    const uint64_t r = s[0] + s[3], t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
  }
  // Uniform in (0, 1].
  float uniform() { return float((next() >> 40) + 1) * (1.0f / 16777216.0f); }
};

void fill_normal(Xoshiro& rng, float* x, int64_t n, float mean, float std) {
  constexpr float kTwoPi = 6.283185307179586f;
  for (int64_t i = 0; i + 1 < n; i += 2) {
    const float r = std * std::sqrt(-2.0f * std::log(rng.uniform())), a = kTwoPi * rng.uniform();
    x[i] = mean + r * std::cos(a);
    x[i + 1] = mean + r * std::sin(a);
  }
  if (n % 2) x[n - 1] = mean + std * std::sqrt(-2.0f * std::log(rng.uniform())) * std::cos(kTwoPi * rng.uniform());
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// ---------------------------------------------------------------------------------------------------
// Vocabulary: Llama 3's layout with synthetic pieces. Byte-level BPE over GPT-2's byte alphabet (every
// byte is a printable character, space is 'Ġ'); merges build words from letters so that ordinary text
// tokenizes into multi-character tokens; the last 256 ids are the special tokens.

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xc0 | (cp >> 6));
    s += char(0x80 | (cp & 63));
  } else {
    s += char(0xe0 | (cp >> 12));
    s += char(0x80 | ((cp >> 6) & 63));
    s += char(0x80 | (cp & 63));
  }
  return s;
}

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the others are shifted to 256+.
std::vector<std::string> byte_alphabet() {
  std::vector<std::string> out(256);
  int shifted = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    out[size_t(b)] = utf8(printable ? uint32_t(b) : uint32_t(256 + shifted++));
  }
  return out;
}

struct Vocab {
  std::vector<std::string> tokens, merges;
  std::vector<int32_t> types;
};

Vocab make_vocab(int n_vocab) {
  constexpr int kSpecial = 256;
  if (n_vocab < 256 + kSpecial + 1000) throw std::runtime_error("the vocabulary needs at least 1512 tokens");
  Vocab v;
  const std::vector<std::string> bytes = byte_alphabet();
  std::unordered_set<std::string> seen;
  for (const auto& b : bytes) {
    v.tokens.push_back(b);
    seen.insert(b);
  }
  const std::string space = bytes[' '];
  std::vector<std::string> letters;
  for (char c = 'a'; c <= 'z'; ++c) letters.push_back(std::string(1, c));
  const int n_ordinary = n_vocab - kSpecial;
  // Merge (left, right) makes left+right; pieces are extended letter by letter in breadth-first order,
  // starting from "Ġ" + letter (word starts) and letter pairs.
  auto merge = [&](const std::string& l, const std::string& r) {
    if (int(v.tokens.size()) >= n_ordinary) return;
    std::string t = l + r;
    if (!seen.insert(t).second) return;
    v.merges.push_back(l + " " + r);
    v.tokens.push_back(std::move(t));
  };
  for (const auto& a : letters) merge(space, a);
  for (const auto& a : letters)
    for (const auto& b : letters) merge(a, b);
  for (size_t i = 256; int(v.tokens.size()) < n_ordinary; ++i) {
    const std::string base = v.tokens[i];
    for (const auto& c : letters) merge(base, c);
  }
  v.types.assign(v.tokens.size(), 1);  // NORMAL
  const char* named[] = {"<|begin_of_text|>",
                         "<|end_of_text|>",
                         "<|reserved_special_token_0|>",
                         "<|reserved_special_token_1|>",
                         "<|finetune_right_pad_id|>",
                         "<|reserved_special_token_2|>",
                         "<|start_header_id|>",
                         "<|end_header_id|>",
                         "<|eom_id|>",
                         "<|eot_id|>",
                         "<|python_tag|>"};
  int reserved = 3;
  for (int i = 0; i < kSpecial; ++i) {
    v.tokens.push_back(i < int(std::size(named)) ? std::string(named[i])
                                                 : "<|reserved_special_token_" + std::to_string(reserved++) + "|>");
    v.types.push_back(3);  // CONTROL
  }
  return v;
}

// ---------------------------------------------------------------------------------------------------
// GGUF writing

enum GgufType : uint32_t { U32 = 4, I32 = 5, F32T = 6, BOOL = 7, STRING = 8, ARRAY = 9 };

struct Writer {
  std::vector<uint8_t> buf;
  void raw(const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    buf.insert(buf.end(), b, b + n);
  }
  template <typename T>
  void pod(T v) {
    raw(&v, sizeof v);
  }
  void str(const std::string& s) {
    pod<uint64_t>(s.size());
    raw(s.data(), s.size());
  }
  void key(const std::string& k, GgufType t) {
    str(k);
    pod<uint32_t>(t);
  }
  int n_kv = 0;
  void kv_u32(const std::string& k, uint32_t v) { key(k, U32), pod(v), ++n_kv; }
  void kv_f32(const std::string& k, float v) { key(k, F32T), pod(v), ++n_kv; }
  void kv_bool(const std::string& k, bool v) { key(k, BOOL), pod<uint8_t>(v), ++n_kv; }
  void kv_str(const std::string& k, const std::string& v) { key(k, STRING), str(v), ++n_kv; }
  void kv_strs(const std::string& k, const std::vector<std::string>& v) {
    key(k, ARRAY), pod<uint32_t>(STRING), pod<uint64_t>(v.size());
    for (const auto& s : v) str(s);
    ++n_kv;
  }
  void kv_i32s(const std::string& k, const std::vector<int32_t>& v) {
    key(k, ARRAY), pod<uint32_t>(I32), pod<uint64_t>(v.size());
    raw(v.data(), v.size() * 4);
    ++n_kv;
  }
};

struct Tensor {
  std::string name;
  int64_t cols = 0, rows = 1;  // ggml ne[0], ne[1]; rows = 1 for vectors
  bool vector = false;
  TensorType type = TensorType::F32;
  float mean = 0, std = 0;  // values ~ normal(mean, std), unless `data` is given
  std::vector<float> data;  // explicit values (rope_freqs)
  uint64_t offset = 0;
  size_t bytes() const { return row_bytes(type, cols) * size_t(rows); }
};

// Llama 3 rope frequency factors, as convert_hf_to_gguf.py computes them (rope_type "llama3"): low
// frequency factor 1, high 4, original context 8192.
std::vector<float> llama3_rope_factors(int head_dim, float base, float factor) {
  const double low_wavelen = 8192.0 / 1.0, high_wavelen = 8192.0 / 4.0;
  std::vector<float> out(size_t(head_dim / 2));
  for (int i = 0; i < head_dim / 2; ++i) {
    const double freq = 1.0 / std::pow(double(base), double(2 * i) / head_dim);
    const double wavelen = 2 * M_PI / freq;
    if (wavelen < high_wavelen) out[size_t(i)] = 1.0f;
    else if (wavelen > low_wavelen) out[size_t(i)] = factor;
    else {
      const double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
      out[size_t(i)] = float(1.0 / ((1 - smooth) / factor + smooth));
    }
  }
  return out;
}

// The mixes of llama.cpp's quantizer (llama_tensor_get_type in src/llama-quant.cpp; read in ik_llama.cpp's
// src/llama-quantize.cpp) for a dense model without an importance matrix. `None`: one type everywhere.
enum class Mix { None, Q2_K, Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_M, Q5_K_M, IQ4_XS };

struct TypeChoice {
  const char* name;
  TensorType base;
  int file_type;  // general.file_type (LLAMA_FTYPE_*)
  Mix mix;
};

const TypeChoice kTypes[] = {
    {"f32", TensorType::F32, 0, Mix::None},        {"f16", TensorType::F16, 1, Mix::None},
    {"bf16", TensorType::BF16, 32, Mix::None},     {"q8_0", TensorType::Q8_0, 7, Mix::None},
    {"q4_0", TensorType::Q4_0, 2, Mix::None},      {"q4_1", TensorType::Q4_1, 3, Mix::None},
    {"q5_0", TensorType::Q5_0, 8, Mix::None},      {"q5_1", TensorType::Q5_1, 9, Mix::None},
    {"q4_k", TensorType::Q4_K, 15, Mix::None},     {"q5_k", TensorType::Q5_K, 17, Mix::None},
    {"q6_k", TensorType::Q6_K, 18, Mix::None},     {"q3_k", TensorType::Q3_K, 11, Mix::None},
    {"iq4_nl", TensorType::IQ4_NL, 25, Mix::None}, {"q2_k", TensorType::Q2_K, 10, Mix::Q2_K},
    {"q3_k_s", TensorType::Q3_K, 11, Mix::Q3_K_S}, {"q3_k_m", TensorType::Q3_K, 12, Mix::Q3_K_M},
    {"q3_k_l", TensorType::Q3_K, 13, Mix::Q3_K_L}, {"q4_k_m", TensorType::Q4_K, 15, Mix::Q4_K_M},
    {"q5_k_m", TensorType::Q5_K, 17, Mix::Q5_K_M}, {"iq4_xs", TensorType::IQ4_XS, 30, Mix::IQ4_XS},
};

// llama.cpp's "use more bits" layers: the first and last eighth, and every third one between.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// The type llama.cpp's quantizer gives the 2-D tensor `role` of layer `layer` (of n_layer) in mix `mix`,
// gqa = n_head / n_head_kv. In words:
//   - the output projection (output.weight, or token_embd.weight when tied) gets Q6_K;
//   - attn_v: Q2_K -> Q4_K when gqa >= 4, else Q3_K; Q3_K_M -> Q5_K in the first two layers, Q4_K after;
//     Q3_K_L -> Q5_K; IQ4_XS -> Q5_K when gqa >= 4; Q4_K_M/Q5_K_M -> Q6_K in the use_more_bits layers;
//   - attn_output: Q2_K -> Q3_K; Q3_K_M -> Q4_K; Q3_K_L -> Q5_K;
//   - ffn_down: Q2_K -> Q3_K; Q3_K_M -> Q5_K in the first n/16 layers, Q4_K after; Q3_K_L -> Q5_K;
//     IQ4_XS -> Q5_K in the first n/8 layers (the rule without an importance matrix); Q4_K_M/Q5_K_M -> Q6_K
//     in the use_more_bits layers;
//   - everything else (attn_q, attn_k, ffn_gate, ffn_up, an untied token_embd) keeps the base type.
enum class Role { Output, AttnV, AttnOutput, FfnDown, Other };
TensorType mix_type(const TypeChoice& tc, Role role, int layer, int n_layer, int gqa) {
  const Mix m = tc.mix;
  if (m == Mix::None) return tc.base;
  switch (role) {
    case Role::Output: return TensorType::Q6_K;
    case Role::AttnV:
      if (m == Mix::Q2_K) return gqa >= 4 ? TensorType::Q4_K : TensorType::Q3_K;
      if (m == Mix::Q3_K_M) return layer < 2 ? TensorType::Q5_K : TensorType::Q4_K;
      if (m == Mix::Q3_K_L) return TensorType::Q5_K;
      if (m == Mix::IQ4_XS && gqa >= 4) return TensorType::Q5_K;
      if ((m == Mix::Q4_K_M || m == Mix::Q5_K_M) && use_more_bits(layer, n_layer)) return TensorType::Q6_K;
      return tc.base;
    case Role::AttnOutput:
      if (m == Mix::Q2_K) return TensorType::Q3_K;
      if (m == Mix::Q3_K_M) return TensorType::Q4_K;
      if (m == Mix::Q3_K_L) return TensorType::Q5_K;
      return tc.base;
    case Role::FfnDown:
      if (m == Mix::Q2_K) return TensorType::Q3_K;
      if (m == Mix::Q3_K_M) return layer < n_layer / 16 ? TensorType::Q5_K : TensorType::Q4_K;
      if (m == Mix::Q3_K_L) return TensorType::Q5_K;
      if (m == Mix::IQ4_XS && layer < n_layer / 8) return TensorType::Q5_K;
      if ((m == Mix::Q4_K_M || m == Mix::Q5_K_M) && use_more_bits(layer, n_layer)) return TensorType::Q6_K;
      return tc.base;
    case Role::Other: return tc.base;
  }
  return tc.base;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "make-random-model: %s\n"
               "usage: make-random-model --out FILE [--shape 1b|8b|tiny] [--type TYPE] [--seed S] [--threads N]\n"
               "  TYPE: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q3_k q4_k q5_k q6_k iq4_nl (one type), q2_k q3_k_s\n"
               "        q3_k_m q3_k_l q4_k_m q5_k_m iq4_xs (llama.cpp's mixes) (default q8_0)\n",
               why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string out, shape_name = "1b", type_name_arg = "q8_0";
  uint64_t seed = 1;
  int threads = int(std::max(1u, std::thread::hardware_concurrency()));
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--out") out = value();
    else if (a == "--shape") shape_name = value();
    else if (a == "--type") type_name_arg = value();
    else if (a == "--seed") seed = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--threads") threads = std::max(1, std::atoi(value().c_str()));
    else if (a == "--quiet") quiet = true;
    else if (a == "--help" || a == "-h") usage("help");
    else usage(("unknown argument " + a).c_str());
  }
  if (out.empty()) usage("--out is required");
  const Shape* shape = nullptr;
  for (const Shape& s : kShapes)
    if (shape_name == s.name) shape = &s;
  if (!shape) usage(("unknown shape " + shape_name).c_str());
  const TypeChoice* tc = nullptr;
  for (const TypeChoice& t : kTypes)
    if (type_name_arg == t.name) tc = &t;
  if (!tc) usage(("unknown type " + type_name_arg).c_str());

  try {
    const auto t0 = std::chrono::steady_clock::now();
    const Shape& S = *shape;
    const int E = S.n_embd, qd = S.n_head * S.head_dim, kvd = S.n_head_kv * S.head_dim;
    const float rope_base = 500000.0f;
    const int gqa = S.n_head / S.n_head_kv;
    auto type_of = [&](Role role, int layer) { return mix_type(*tc, role, layer, S.n_layer, gqa); };

    // Tensors in the converter's order.
    std::vector<Tensor> tensors;
    auto matrix = [&](const std::string& name, int64_t cols, int64_t rows, TensorType t, float std) {
      Tensor x;
      x.name = name, x.cols = cols, x.rows = rows, x.type = t, x.std = std;
      tensors.push_back(std::move(x));
    };
    auto vec = [&](const std::string& name, int64_t n, float mean, float std) {
      Tensor x;
      x.name = name, x.cols = n, x.vector = true, x.mean = mean, x.std = std;
      tensors.push_back(std::move(x));
    };
    matrix("token_embd.weight", E, S.n_vocab, type_of(S.tied ? Role::Output : Role::Other, 0),
           (S.tied ? 2.0f : 1.0f) / std::sqrt(float(E)));
    {
      Tensor rf;
      rf.name = "rope_freqs.weight", rf.cols = S.head_dim / 2, rf.vector = true;
      rf.data = llama3_rope_factors(S.head_dim, rope_base, S.rope_factor);
      tensors.push_back(std::move(rf));
    }
    for (int l = 0; l < S.n_layer; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      const float se = 1 / std::sqrt(float(E));
      vec(p + "attn_norm.weight", E, 1, 0.1f);
      matrix(p + "attn_q.weight", E, qd, type_of(Role::Other, l), se);
      matrix(p + "attn_k.weight", E, kvd, type_of(Role::Other, l), se);
      matrix(p + "attn_v.weight", E, kvd, type_of(Role::AttnV, l), se);
      matrix(p + "attn_output.weight", qd, E, type_of(Role::AttnOutput, l), 1 / std::sqrt(float(qd)));
      vec(p + "ffn_norm.weight", E, 1, 0.1f);
      matrix(p + "ffn_gate.weight", E, S.n_ff, type_of(Role::Other, l), se);
      matrix(p + "ffn_up.weight", E, S.n_ff, type_of(Role::Other, l), se);
      matrix(p + "ffn_down.weight", S.n_ff, E, type_of(Role::FfnDown, l), 1 / std::sqrt(float(S.n_ff)));
    }
    vec("output_norm.weight", E, 1, 0.1f);
    if (!S.tied) matrix("output.weight", E, S.n_vocab, type_of(Role::Output, 0), 2 / std::sqrt(float(E)));
    for (const Tensor& t : tensors) {
      const TypeInfo& ti = type_info(t.type);
      if (t.cols % ti.block_size) throw std::runtime_error(t.name + ": rows are not whole blocks of " + ti.name);
      quant::kernels(t.type);  // throws when the type has no kernels
    }

    // Metadata, in the converter's order.
    const Vocab vocab = make_vocab(S.n_vocab);
    Writer meta;
    const std::string a = "llama.";
    meta.kv_str("general.architecture", "llama");
    meta.kv_str("general.type", "model");
    meta.kv_str("general.name", std::string("Random Llama ") + S.name + " " + tc->name);
    meta.kv_u32(a + "block_count", uint32_t(S.n_layer));
    meta.kv_u32(a + "context_length", uint32_t(S.n_ctx));
    meta.kv_u32(a + "embedding_length", uint32_t(E));
    meta.kv_u32(a + "feed_forward_length", uint32_t(S.n_ff));
    meta.kv_u32(a + "attention.head_count", uint32_t(S.n_head));
    meta.kv_u32(a + "attention.head_count_kv", uint32_t(S.n_head_kv));
    meta.kv_f32(a + "rope.freq_base", rope_base);
    meta.kv_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
    meta.kv_u32(a + "attention.key_length", uint32_t(S.head_dim));
    meta.kv_u32(a + "attention.value_length", uint32_t(S.head_dim));
    meta.kv_u32("general.file_type", uint32_t(tc->file_type));
    meta.kv_u32(a + "vocab_size", uint32_t(S.n_vocab));
    meta.kv_u32(a + "rope.dimension_count", uint32_t(S.head_dim));
    meta.kv_str("tokenizer.ggml.model", "gpt2");
    meta.kv_str("tokenizer.ggml.pre", "llama-bpe");
    meta.kv_strs("tokenizer.ggml.tokens", vocab.tokens);
    meta.kv_i32s("tokenizer.ggml.token_type", vocab.types);
    meta.kv_strs("tokenizer.ggml.merges", vocab.merges);
    meta.kv_u32("tokenizer.ggml.bos_token_id", 128000);
    meta.kv_u32("tokenizer.ggml.eos_token_id", 128009);
    meta.kv_bool("tokenizer.ggml.add_bos_token", true);
    meta.kv_str(
        "tokenizer.chat_template",
        "{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + "
        "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}");
    if (tc->base != TensorType::F32 && tc->base != TensorType::F16 && tc->base != TensorType::BF16)
      meta.kv_u32("general.quantization_version", 2);
    constexpr uint32_t kAlign = 32;
    meta.kv_u32("general.alignment", kAlign);

    // Header and tensor table; offsets are relative to the aligned start of the data section.
    Writer head;
    head.raw("GGUF", 4);
    head.pod<uint32_t>(3);
    head.pod<uint64_t>(tensors.size());
    head.pod<uint64_t>(uint64_t(meta.n_kv));
    head.raw(meta.buf.data(), meta.buf.size());
    uint64_t offset = 0;
    for (Tensor& t : tensors) {
      t.offset = offset;
      offset += (t.bytes() + kAlign - 1) / kAlign * kAlign;
      head.str(t.name);
      head.pod<uint32_t>(t.vector ? 1 : 2);
      head.pod<uint64_t>(uint64_t(t.cols));
      if (!t.vector) head.pod<uint64_t>(uint64_t(t.rows));
      head.pod<uint32_t>(uint32_t(t.type));
      head.pod<uint64_t>(t.offset);
    }
    head.buf.resize((head.buf.size() + kAlign - 1) / kAlign * kAlign, 0);

    const std::string tmp = out + ".part";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw std::runtime_error("cannot open " + tmp + " for writing");
    auto put = [&](const void* p, size_t n) {
      if (n && std::fwrite(p, 1, n, f) != n) throw std::runtime_error("write to " + tmp + " failed");
    };
    put(head.buf.data(), head.buf.size());

    // Tensor data: rows in chunks, generated and quantized by `threads` workers.
    std::vector<uint8_t> chunk;
    uint64_t written = 0, total = offset;
    for (const Tensor& t : tensors) {
      if (!t.data.empty()) {
        put(t.data.data(), t.data.size() * 4);
      } else if (t.vector) {
        std::vector<float> v(size_t(t.cols));
        Xoshiro rng(seed ^ fnv1a(t.name));
        fill_normal(rng, v.data(), t.cols, t.mean, t.std);
        put(v.data(), v.size() * 4);
      } else {
        const quant::Kernels& k = quant::kernels(t.type);
        const size_t rb = row_bytes(t.type, t.cols);
        const int64_t rows_per_chunk = std::max<int64_t>(1, int64_t((64u << 20) / rb));
        const uint64_t name_hash = fnv1a(t.name);
        for (int64_t r0 = 0; r0 < t.rows; r0 += rows_per_chunk) {
          const int64_t r1 = std::min(t.rows, r0 + rows_per_chunk);
          chunk.resize(size_t(r1 - r0) * rb);
          std::atomic<int64_t> next{r0};
          auto work = [&] {
            std::vector<float> x(size_t(t.cols));
            for (int64_t r; (r = next.fetch_add(1)) < r1;) {
              Xoshiro rng(seed * 0x9e3779b97f4a7c15ull ^ name_hash ^ (uint64_t(r) * 0xd1b54a32d192ed03ull));
              fill_normal(rng, x.data(), t.cols, 0, t.std);
              k.quantize_row(x.data(), chunk.data() + size_t(r - r0) * rb, t.cols);
            }
          };
          std::vector<std::thread> pool;
          for (int i = 1; i < threads; ++i) pool.emplace_back(work);
          work();
          for (auto& th : pool) th.join();
          put(chunk.data(), chunk.size());
        }
      }
      const size_t pad = (kAlign - t.bytes() % kAlign) % kAlign;
      static const uint8_t zeros[kAlign] = {};
      put(zeros, pad);
      written += t.bytes() + pad;
      if (!quiet) {
        std::fprintf(stderr, "\r%s: %5.1f%%", out.c_str(), 100.0 * double(written) / double(total));
        std::fflush(stderr);
      }
    }
    if (std::fclose(f) != 0) throw std::runtime_error("closing " + tmp + " failed");
    if (std::rename(tmp.c_str(), out.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp + " to " + out);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!quiet) std::fprintf(stderr, "\r");
    std::printf("%s: %s %s, %d tensors, %.1f MiB, %.1f s\n", out.c_str(), S.name, tc->name, int(tensors.size()),
                double(head.buf.size() + total) / 1048576.0, secs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make-random-model: %s\n", e.what());
    return 1;
  }
  return 0;
}
