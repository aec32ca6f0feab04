// Pre-tokenizers of byte-level BPE vocabularies (tokenizer.ggml.pre): they cut text into words before the
// merges run. llama.cpp describes each one as a list of regexes applied in turn (every regex splits the pieces
// the previous ones left, and the text between matches stays a piece of its own); here each regex is a
// hand-written matcher over code points that reproduces what llama.cpp's matching gives, including its
// reading of \s, \p{L}, \p{N}, \p{P} through the categories of unicode-tables.inc.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

enum class PreTokenizer {
  Default,        // no or "default" pre-tokenizer: punctuation runs, GPT-2 regex, digit runs, digit triples
  Gpt2,           // the GPT-2 regex
  Llama3,         // the Llama 3 regex: contractions, letters with one leading non-letter, digits in threes, ...
  Qwen2,          // the Llama 3 regex with single digits
  Falcon,         // punctuation runs, GPT-2 regex, digit triples
  Starcoder,      // single digits, GPT-2 regex
  DeepseekLlm,    // newlines, cased-letter runs, ASCII/CJK punctuation, trailing spaces, CJK, digit runs
  DeepseekCoder,  // newlines, letter runs, punctuation runs, CJK, single digits
  Bloom,          // runs of anything but spaces and . , ! ? and the like
  Viking,         // as Bloom, then single digits
};

// What a tokenizer.ggml.pre value means to llama.cpp: the splitting and the flags it sets with it.
struct PreConfig {
  PreTokenizer kind = PreTokenizer::Default;
  bool ignore_merges = false;  // a word that is a token as a whole is taken as is
  bool add_bos = false;        // default of tokenizer.ggml.add_bos_token
  bool clean_spaces = true;    // detokenize removes the space before . , ! ? and some apostrophes
};

// False when llama.cpp knows no such pre-tokenizer or we do not implement it.
bool pre_config_from_name(std::string_view name, PreConfig& out);

// Splits text into words. cps receives the text's code points (decoded like llama.cpp, invalid bytes as
// U+FFFD), ends the end of each word as an index into cps; words are never empty.
void pre_tokenize(PreTokenizer kind, std::string_view text, std::vector<uint32_t>& cps, std::vector<size_t>& ends);

}  // namespace folio
