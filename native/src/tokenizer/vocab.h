// The tokenizer of a GGUF file, built from its tokenizer.ggml.* metadata. It reproduces llama.cpp's
// llama_tokenize / llama_token_to_piece / llama_detokenize for SentencePiece-style vocabularies ("llama"),
// byte-level BPE ("gpt2", with the pre-tokenizers of pretokenize.h) and WordPiece ("bert").
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/pretokenize.h"

namespace folio {

// Token attributes, as llama.cpp derives them from tokenizer.ggml.token_type (NORMAL=1, UNKNOWN=2, CONTROL=3,
// USER_DEFINED=4, UNUSED=5, BYTE=6; other values give no attribute) and from a few name-based fix-ups.
enum TokenAttr : uint32_t {
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrLstrip = 1u << 7,  // special token that swallows the whitespace before it
  kAttrRstrip = 1u << 8,  // ... and after it
};

class Vocab {
 public:
  enum class Type { Spm, Bpe, Wpm };

  // Reads tokenizer.ggml.* metadata and copies what it needs (the file may be closed afterwards). Throws
  // folio::Error with a VOCAB_* code for a missing or malformed vocabulary or one we do not support.
  static std::unique_ptr<Vocab> from_gguf(const gguf::File& file);

  // llama_tokenize: add_special adds BOS/EOS as the vocabulary asks (CLS/SEP for WordPiece); parse_special
  // turns the text of control tokens into those tokens (user-defined tokens always are).
  std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const;
  // llama_token_to_piece: the token's bytes (possibly part of a UTF-8 character); control and unknown tokens
  // give their text only when `special`. Throws INVALID_TOKEN for an id outside the vocabulary.
  std::string token_to_piece(int32_t id, bool special) const;
  // llama_detokenize (remove_special=false, unparse_special=special): the pieces joined, the leading space of
  // SentencePiece text removed, and for vocabularies that ask for it the spaces before punctuation cleaned
  // up; bytes that do not form valid UTF-8 become U+FFFD.
  std::string detokenize(const std::vector<int32_t>& ids, bool special) const;

  int32_t n_tokens() const { return int32_t(tokens_.size()); }
  // Special tokens: -1 when the vocabulary has none.
  int32_t bos() const { return bos_; }
  int32_t eos() const { return eos_; }
  int32_t eot() const { return eot_; }
  int32_t eom() const { return eom_; }
  int32_t unk() const { return unk_; }
  int32_t sep() const { return sep_; }
  int32_t pad() const { return pad_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }
  const std::string& model() const { return model_; }
  const std::string& pre() const { return pre_; }
  Type type() const { return type_; }
  bool is_eog(int32_t id) const;  // end of generation: EOS, EOT, EOM, <|eot_id|>, <|im_end|>, ...
  const std::vector<int32_t>& eog_ids() const { return eog_; }

  // The token's text as stored in the vocabulary (GPT-2 characters for byte-level BPE, ▁ for SentencePiece).
  const std::string& token_text(int32_t id) const;
  float token_score(int32_t id) const;
  uint32_t token_attr(int32_t id) const;
  int32_t find_token(std::string_view text) const;  // -1 if no token has exactly this text
  size_t memory_bytes() const;                      // rough size of the tables, for the GC's accounting

 private:
  struct Token {
    std::string text;
    float score = 0;
    uint32_t attr = kAttrNormal;
  };
  // A text fragment of the input (token < 0) or a special token found in it.
  struct Fragment {
    int32_t token;
    size_t offset, length;
  };
  struct Merge {
    int32_t rank;
    int32_t result;  // token id, or n_tokens + i for the i-th merged text that is no token
  };
  struct TrieNode {
    std::vector<std::pair<uint8_t, int32_t>> next;
    int32_t rank = -1;  // index into specials_ of the token that ends here
  };

  Vocab() = default;
  void load(const gguf::File& file);
  void load_tokens(const gguf::File& file);
  void load_merges(const gguf::File& file);
  void load_special_ids(const gguf::File& file);
  void detect_special_tokens(const std::string& general_name);
  void build_special_cache();

  std::vector<Fragment> partition(std::string_view text, bool parse_special) const;
  void tokenize_spm(std::string_view text, std::vector<int32_t>& out) const;  // spm.cc
  void tokenize_bpe(std::string_view text, std::vector<int32_t>& out) const;  // bpe.cc
  void tokenize_wpm(std::string_view text, std::vector<int32_t>& out) const;  // wpm.cc
  int32_t byte_token(uint8_t b) const;  // SPM byte fallback: <0xXX>, else the byte as a one-byte token
  uint8_t token_to_byte(int32_t id) const;

  Type type_ = Type::Spm;
  std::string model_, pre_;
  PreConfig pre_cfg_;
  std::vector<Token> tokens_;
  std::unordered_map<std::string_view, int32_t> ids_;  // views into tokens_[i].text
  size_t max_token_len_ = 0;

  // Byte-level BPE: merges keyed by (left id << 32 | right id), and the token of each byte's character.
  std::unordered_map<uint64_t, Merge> merges_;
  size_t n_merged_texts_ = 0;
  std::array<int32_t, 256> byte_char_token_{};
  std::array<int32_t, 256> byte_fallback_{};  // SentencePiece byte tokens

  int32_t bos_ = -1, eos_ = -1, eot_ = -1, eom_ = -1, unk_ = -1, sep_ = -1, pad_ = -1, mask_ = -1;
  int32_t fim_pre_ = -1, fim_suf_ = -1, fim_mid_ = -1, fim_pad_ = -1, fim_rep_ = -1, fim_sep_ = -1;
  bool add_bos_ = false, add_eos_ = false, add_sep_ = false, add_space_prefix_ = false, clean_spaces_ = false;
  std::vector<int32_t> eog_;  // sorted

  // Control, user-defined and unknown tokens, longest text first: the order llama.cpp splits them out in.
  std::vector<int32_t> specials_;
  std::vector<TrieNode> special_trie_;    // over the same texts, to find which of them occur in a text at all
  std::array<int32_t, 256> trie_root_{};  // the trie's first level as a table
};

// Streaming detokenization: push each token's bytes as they arrive; returns only complete UTF-8 text. Bytes that
// cannot be part of valid UTF-8 become U+FFFD (one per maximal invalid subsequence, as the WHATWG decoder and
// TextDecoder do); flush() emits U+FFFD for an incomplete tail and resets the stream.
class Utf8Stream {
 public:
  std::string push(std::string_view bytes);
  std::string flush();

 private:
  uint32_t cp_ = 0;
  uint8_t needed_ = 0, seen_ = 0, lower_ = 0x80, upper_ = 0xBF;
};

}  // namespace folio
