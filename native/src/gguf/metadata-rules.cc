#include "gguf/metadata-rules.h"

#include <string>
#include <unordered_map>

#include "core/error.h"

namespace folio::gguf {

const std::vector<KeyRule>& metadata_rules() {
  static const std::vector<KeyRule> rules = {
      {"general.architecture", Kind::String},
      {"general.name", Kind::String},
      {"general.file_type", Kind::Integer},
      {"split.count", Kind::Integer},
      {"{arch}.context_length", Kind::Integer},
      {"{arch}.embedding_length", Kind::Integer},
      {"{arch}.block_count", Kind::Integer},
      {"{arch}.feed_forward_length", Kind::Integer},
      {"{arch}.vocab_size", Kind::Integer},
      {"{arch}.attention.head_count", Kind::Integer},
      {"{arch}.attention.head_count_kv", Kind::Integer},
      {"{arch}.attention.key_length", Kind::Integer},
      {"{arch}.attention.value_length", Kind::Integer},
      {"{arch}.attention.layer_norm_rms_epsilon", Kind::Number},
      {"{arch}.rope.dimension_count", Kind::Integer},
      {"{arch}.rope.freq_base", Kind::Number},
      {"{arch}.rope.scaling.type", Kind::String},
      {"{arch}.rope.scaling.factor", Kind::Number},
      {"{arch}.rope.scaling.attn_factor", Kind::Number},
      {"{arch}.rope.scaling.original_context_length", Kind::Integer},
      {"{arch}.attention.sliding_window", Kind::Integer},
      {"{arch}.expert_count", Kind::Integer},
      {"{arch}.expert_used_count", Kind::Integer},
      {"{arch}.expert_feed_forward_length", Kind::Integer},
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

void check_metadata_types(const File& file, std::string_view arch) {
  static constexpr std::string_view kArchPrefix = "{arch}.";
  std::unordered_map<std::string, Kind> want;
  for (const KeyRule& r : metadata_rules()) {
    const std::string_view key = r.key;
    if (key.substr(0, kArchPrefix.size()) != kArchPrefix) want.emplace(std::string(key), r.kind);
    else if (!arch.empty()) want.emplace(std::string(arch) + "." + std::string(key.substr(kArchPrefix.size())), r.kind);
  }
  for (const auto& [key, value] : file.metadata()) {
    auto it = want.find(key);
    if (it != want.end() && !value_matches(value, it->second))
      fail("GGUF_TYPE", file.path() + ": " + wrong_type_message(key, value, it->second));
  }
}

}  // namespace folio::gguf
