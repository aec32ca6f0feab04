#include "gguf/metadata-rules.h"

#include <cfloat>
#include <cmath>
#include <string>
#include <unordered_map>

#include "core/error.h"

namespace folio::gguf {

namespace {

constexpr double kMaxInt32 = 2147483647.0;
constexpr double kAnyFinite = DBL_MAX;

// The bounds of a count of things (layers, heads, widths): 1 to `max`.
KeyRule count(const char* key, double max) { return {key, Kind::Integer, 1, max}; }
// A float that must be above `min` and finite (at most `max`).
KeyRule above(const char* key, double min, double max = kAnyFinite) { return {key, Kind::Number, min, max, true}; }

// A double as printf's %g writes it ("inf", "1e-05", "4096"); the TS table's formatG writes the same.
std::string format_g(double v) { return strfmt("%g", v); }

}  // namespace

bool KeyRule::bounded() const { return !(std::isinf(min) && min < 0 && std::isinf(max) && max > 0); }

bool KeyRule::accepts(double v) const {
  if (!bounded()) return true;
  if (!std::isfinite(v)) return false;
  return (min_open ? v > min : v >= min) && v <= max;
}

std::string KeyRule::range_text() const {
  if (kind == Kind::Integer) return strfmt("an integer from %.0f to %.0f", min, max);
  std::string s = "a finite number";
  if (!std::isinf(min)) s += (min_open ? " above " : " at least ") + format_g(min);
  if (max != kAnyFinite) s += (std::isinf(min) ? " at most " : " and at most ") + format_g(max);
  return s;
}

const std::vector<KeyRule>& metadata_rules() {
  static const std::vector<KeyRule> rules = {
      {"general.architecture", Kind::String},
      {"general.name", Kind::String},
      {"general.file_type", Kind::Integer},
      {"split.count", Kind::Integer},
      count("{arch}.context_length", kMaxInt32),
      count("{arch}.embedding_length", 1 << 20),
      count("{arch}.block_count", 4096),
      count("{arch}.feed_forward_length", 1 << 22),
      count("{arch}.vocab_size", kMaxInt32),
      count("{arch}.attention.head_count", 1 << 16),
      count("{arch}.attention.head_count_kv", 1 << 16),
      count("{arch}.attention.key_length", 1 << 10),
      count("{arch}.attention.value_length", 1 << 10),
      above("{arch}.attention.layer_norm_rms_epsilon", 0, 1),
      count("{arch}.rope.dimension_count", 1 << 10),
      above("{arch}.rope.freq_base", 1),
      {"{arch}.rope.scaling.type", Kind::String},
      {"{arch}.rope.scaling.factor", Kind::Number, 1, kAnyFinite},
      above("{arch}.rope.scaling.attn_factor", 0),
      count("{arch}.rope.scaling.original_context_length", kMaxInt32),
      {"{arch}.attention.sliding_window", Kind::Integer, 0, kMaxInt32},
      count("{arch}.expert_count", 1 << 12),
      count("{arch}.expert_used_count", 1 << 12),
      count("{arch}.expert_feed_forward_length", 1 << 22),
      {"tokenizer.ggml.model", Kind::String},
      {"tokenizer.ggml.pre", Kind::String},
      {"tokenizer.ggml.tokens", Kind::StringArray},
      {"tokenizer.ggml.scores", Kind::NumberArray},
      {"tokenizer.ggml.token_type", Kind::IntegerArray},
      {"tokenizer.ggml.merges", Kind::StringArray},
      {"tokenizer.ggml.add_space_prefix", Kind::Bool},
      {"tokenizer.ggml.add_bos_token", Kind::Bool},
      {"tokenizer.ggml.add_eos_token", Kind::Bool},
      {"tokenizer.ggml.add_sep_token", Kind::Bool},
      {"tokenizer.ggml.bos_token_id", Kind::Integer},
      {"tokenizer.ggml.eos_token_id", Kind::Integer},
      {"tokenizer.ggml.eot_token_id", Kind::Integer},
      {"tokenizer.ggml.eom_token_id", Kind::Integer},
      {"tokenizer.ggml.unknown_token_id", Kind::Integer},
      {"tokenizer.ggml.seperator_token_id", Kind::Integer},
      {"tokenizer.ggml.padding_token_id", Kind::Integer},
      {"tokenizer.ggml.mask_token_id", Kind::Integer},
      {"tokenizer.ggml.fim_pre_token_id", Kind::Integer},
      {"tokenizer.ggml.fim_suf_token_id", Kind::Integer},
      {"tokenizer.ggml.fim_mid_token_id", Kind::Integer},
      {"tokenizer.ggml.fim_pad_token_id", Kind::Integer},
      {"tokenizer.ggml.fim_rep_token_id", Kind::Integer},
      {"tokenizer.ggml.fim_sep_token_id", Kind::Integer},
      {"tokenizer.ggml.prefix_token_id", Kind::Integer},
      {"tokenizer.ggml.suffix_token_id", Kind::Integer},
      {"tokenizer.ggml.middle_token_id", Kind::Integer},
      {"tokenizer.chat_template", Kind::String},
  };
  return rules;
}

const KeyRule& metadata_rule(std::string_view table_key) {
  for (const KeyRule& r : metadata_rules())
    if (table_key == r.key) return r;
  fail("INTERNAL", "no metadata rule for " + std::string(table_key));
}

std::string out_of_range_message(std::string_view key, const Value& v, const KeyRule& r) {
  const std::string value = v.type == ValueType::UINT64 ? std::to_string(v.u)
                            : v.is_integer()            ? std::to_string(v.as_int())
                                                        : format_g(v.as_double());
  return "metadata key '" + std::string(key) + "' = " + value + " is out of range: it must be " + r.range_text();
}

void check_metadata(const File& file, std::string_view arch) {
  static constexpr std::string_view kArchPrefix = "{arch}.";
  std::unordered_map<std::string, const KeyRule*> want;
  for (const KeyRule& r : metadata_rules()) {
    const std::string_view key = r.key;
    if (key.substr(0, kArchPrefix.size()) != kArchPrefix) want.emplace(std::string(key), &r);
    else if (!arch.empty()) want.emplace(std::string(arch) + "." + std::string(key.substr(kArchPrefix.size())), &r);
  }
  for (const auto& [key, value] : file.metadata()) {
    auto it = want.find(key);
    if (it == want.end()) continue;
    const KeyRule& r = *it->second;
    if (!value_matches(value, r.kind)) fail("GGUF_TYPE", file.path() + ": " + wrong_type_message(key, value, r.kind));
    if (r.bounded() && !r.accepts(value.as_double()))
      fail("GGUF_VALUE", file.path() + ": " + out_of_range_message(key, value, r));
  }
}

}  // namespace folio::gguf
