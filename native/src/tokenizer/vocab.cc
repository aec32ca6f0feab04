// Loading a vocabulary from GGUF metadata, splitting out special tokens, and turning tokens back into text.
// The defaults and fix-ups follow llama.cpp's llama_vocab::load so that token ids come out identical.
#include "tokenizer/vocab.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace folio {
namespace {

const char kSpace[] = "\xE2\x96\x81";      // U+2581, SentencePiece's visible space
const char kBadType[] = "VOCAB_BAD_TYPE";  // the code of a tokenizer key of the wrong type

bool ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

std::string printable(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (uint8_t(c) < 0x20 || c == 0x7F) out += strfmt("\\x%02x", uint8_t(c));
    else out += c;
  }
  return out.size() > 80 ? out.substr(0, 77) + "..." : out;
}

// Token types of tokenizer.ggml.token_type.
uint32_t attr_of_type(int64_t t) {
  switch (t) {
    case 1: return kAttrNormal;
    case 2: return kAttrUnknown;
    case 3: return kAttrControl;
    case 4: return kAttrUserDefined;
    case 5: return kAttrUnused;
    case 6: return kAttrByte;
    default: return 0;  // undefined: neither text nor special
  }
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out.append(to);
  }
  out.append(s, pos, std::string::npos);
  s.swap(out);
}

}  // namespace

std::unique_ptr<Vocab> Vocab::from_gguf(const gguf::File& file) {
  std::unique_ptr<Vocab> v(new Vocab());
  v->load(file);
  return v;
}

void Vocab::load(const gguf::File& file) {
  const std::string& path = file.path();
  // Every read is typed (gguf::File::get): a key of the wrong type fails with VOCAB_BAD_TYPE, naming it.
  const gguf::Value* model = file.get("tokenizer.ggml.model", gguf::Kind::String, kBadType);
  if (!model) fail("VOCAB_MISSING_MODEL", path + ": tokenizer.ggml.model is missing: the file has no vocabulary");
  model_ = std::string(model->str);
  const gguf::Value* pre = file.get("tokenizer.ggml.pre", gguf::Kind::String, kBadType);
  pre_ = pre ? std::string(pre->str) : std::string();

  // Defaults per tokenizer model; the file's keys override them below.
  if (model_ == "llama") {
    type_ = Type::Spm;
    bos_ = 1, eos_ = 2, unk_ = 0;
    add_space_prefix_ = true;
    add_bos_ = true;
  } else if (model_ == "gpt2") {
    type_ = Type::Bpe;
    bos_ = 11, eos_ = 11;  // llama.cpp's historical defaults (GPT-NeoX era); real files set them
    const std::string name = pre_.empty() ? "default" : pre_;
    if (!pre_config_from_name(name, pre_cfg_))
      fail("VOCAB_UNSUPPORTED_PRE",
           path + ": unsupported BPE pre-tokenizer '" + printable(pre_) +
               "' (tokenizer.ggml.pre); supported include llama-bpe, qwen2, gpt-2, falcon, mpt, starcoder, refact, "
               "deepseek-llm, deepseek-coder, command-r, default");
    add_bos_ = pre_cfg_.add_bos;
    clean_spaces_ = pre_cfg_.clean_spaces;
  } else if (model_ == "bert") {
    type_ = Type::Wpm;
    bos_ = 101, unk_ = 100, sep_ = 102, pad_ = 0, mask_ = 103;
    add_bos_ = true;
    add_sep_ = true;
    clean_spaces_ = true;
  } else {
    fail("VOCAB_UNSUPPORTED_MODEL",
         path + ": unsupported tokenizer model '" + printable(model_) +
             "' (tokenizer.ggml.model); supported: llama (SentencePiece), gpt2 (byte-level BPE), bert (WordPiece)");
  }
  if (const gguf::Value* v = file.get("tokenizer.ggml.add_space_prefix", gguf::Kind::Bool, kBadType))
    add_space_prefix_ = v->u != 0;

  load_tokens(file);
  if (type_ == Type::Bpe) load_merges(file);
  load_special_ids(file);

  const gguf::Value* name = file.get("general.name", gguf::Kind::String, kBadType);
  detect_special_tokens(name ? std::string(name->str) : std::string());
  build_special_cache();

  for (int b = 0; b < 256; b++) {
    byte_char_token_[b] = find_token(unicode::byte_to_char(uint8_t(b)));
    static const char* hex = "0123456789ABCDEF";
    const char name6[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
    int32_t id = find_token(std::string_view(name6, 6));
    if (id < 0) id = find_token(std::string(1, char(b)));
    byte_fallback_[b] = id;
  }
}

void Vocab::load_tokens(const gguf::File& file) {
  const std::string& path = file.path();
  const gguf::Array* tv = file.get_array("tokenizer.ggml.tokens", gguf::Kind::StringArray, kBadType);
  if (!tv) fail("VOCAB_MISSING_TOKENS", path + ": tokenizer.ggml.tokens is missing");
  const gguf::Array& toks = *tv;
  if (toks.count == 0) fail("VOCAB_EMPTY", path + ": tokenizer.ggml.tokens is empty");
  if (toks.count > uint64_t(INT32_MAX) - 1)
    fail("VOCAB_BAD_LENGTH", strfmt("%s: %llu tokens is too many", path.c_str(), (unsigned long long)toks.count));
  const size_t n = size_t(toks.count);

  // Scores and types, when present, must describe every token.
  auto numeric_array = [&](const char* key, gguf::Kind kind) -> const gguf::Array* {
    const gguf::Array* a = file.get_array(key, kind, kBadType);
    if (a && a->count != toks.count)
      fail("VOCAB_BAD_LENGTH", strfmt("%s: %s has %llu entries but tokenizer.ggml.tokens has %zu", path.c_str(), key,
                                      (unsigned long long)a->count, n));
    return a;
  };
  const gguf::Array* scores = numeric_array("tokenizer.ggml.scores", gguf::Kind::NumberArray);
  const gguf::Array* types = numeric_array("tokenizer.ggml.token_type", gguf::Kind::IntegerArray);

  tokens_.resize(n);
  for (size_t i = 0; i < n; i++) {
    Token& t = tokens_[i];
    t.text = std::string(toks.strings[i]);
    // llama.cpp renames empty tokens so that they can neither match nor be matched.
    if (t.text.empty()) t.text = strfmt("[EMPTY_%zu]", i);
    t.score = scores ? float(gguf::array_number(*scores, i)) : 0.0f;
    t.attr = types ? attr_of_type(gguf::array_integer(*types, i)) : kAttrNormal;
    max_token_len_ = std::max(max_token_len_, t.text.size());
  }
  // The map holds views into the token texts, so it is built once tokens_ no longer moves.
  ids_.reserve(n);
  for (size_t i = 0; i < n; i++) {
    auto res = ids_.emplace(tokens_[i].text, int32_t(i));
    if (!res.second)
      fail("VOCAB_DUPLICATE_TOKEN", strfmt("%s: token '%s' appears twice (ids %d and %zu)", path.c_str(),
                                           printable(tokens_[i].text).c_str(), res.first->second, i));
  }
}

void Vocab::load_merges(const gguf::File& file) {
  const std::string& path = file.path();
  const gguf::Array* mv = file.get_array("tokenizer.ggml.merges", gguf::Kind::StringArray, kBadType);
  if (!mv) fail("VOCAB_MISSING_MERGES", path + ": tokenizer.ggml.merges is missing (a BPE vocabulary needs it)");
  const gguf::Array& merges = *mv;
  if (merges.count > uint64_t(INT32_MAX))
    fail("VOCAB_BAD_LENGTH", path + ": tokenizer.ggml.merges has too many entries");
  merges_.reserve(size_t(merges.count));
  for (size_t i = 0; i < merges.count; i++) {
    const std::string_view m = merges.strings[i];
    // "left right": llama.cpp splits at the first space after the first byte.
    const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string_view::npos;
    if (sp == std::string_view::npos)
      fail("VOCAB_BAD_MERGE", strfmt("%s: merge %zu ('%s') is not two tokens separated by a space", path.c_str(), i,
                                     printable(m).c_str()));
    const std::string_view left = m.substr(0, sp), right = m.substr(sp + 1);
    const int32_t l = find_token(left), r = find_token(right);
    if (l < 0 || r < 0)
      fail("VOCAB_BAD_MERGE", strfmt("%s: merge %zu ('%s') names '%s', which is not a token", path.c_str(), i,
                                     printable(m).c_str(), printable(l < 0 ? left : right).c_str()));
    int32_t result = find_token(std::string(left) + std::string(right));
    if (result < 0) result = n_tokens() + int32_t(n_merged_texts_++);
    // The first occurrence of a pair keeps its rank, as in llama.cpp.
    merges_.emplace(uint64_t(uint32_t(l)) << 32 | uint32_t(r), Merge{int32_t(i), result});
  }
}

void Vocab::load_special_ids(const gguf::File& file) {
  const std::string& path = file.path();
  const int32_t n = n_tokens();
  struct Key {
    const char* key;
    int32_t* id;
    bool strict;  // an out-of-range id is an error; otherwise it is ignored, as llama.cpp does
  };
  const Key keys[] = {
      {"tokenizer.ggml.bos_token_id", &bos_, true},          {"tokenizer.ggml.eos_token_id", &eos_, true},
      {"tokenizer.ggml.eot_token_id", &eot_, true},          {"tokenizer.ggml.eom_token_id", &eom_, true},
      {"tokenizer.ggml.unknown_token_id", &unk_, true},      {"tokenizer.ggml.seperator_token_id", &sep_, true},
      {"tokenizer.ggml.padding_token_id", &pad_, false},     {"tokenizer.ggml.mask_token_id", &mask_, false},
      {"tokenizer.ggml.fim_pre_token_id", &fim_pre_, false}, {"tokenizer.ggml.fim_suf_token_id", &fim_suf_, false},
      {"tokenizer.ggml.fim_mid_token_id", &fim_mid_, false}, {"tokenizer.ggml.fim_pad_token_id", &fim_pad_, false},
      {"tokenizer.ggml.fim_rep_token_id", &fim_rep_, false}, {"tokenizer.ggml.fim_sep_token_id", &fim_sep_, false},
      {"tokenizer.ggml.prefix_token_id", &fim_pre_, false},  {"tokenizer.ggml.suffix_token_id", &fim_suf_, false},
      {"tokenizer.ggml.middle_token_id", &fim_mid_, false},
  };
  for (const Key& k : keys) {
    if (*k.id >= n) *k.id = -1;  // a default the vocabulary is too small for
    const gguf::Value* v = file.get(k.key, gguf::Kind::Integer, kBadType);
    if (!v) continue;
    const int64_t id = v->as_int();
    if (id == -1 || id == 0xFFFFFFFFll) continue;  // "none", as converters write it
    if (id < 0 || id >= n) {
      if (k.strict)
        fail("VOCAB_BAD_SPECIAL",
             strfmt("%s: %s is %lld, outside the vocabulary of %d tokens", path.c_str(), k.key, (long long)id, n));
      continue;
    }
    *k.id = int32_t(id);
  }

  auto flag = [&](const char* key, bool& value) {
    if (const gguf::Value* v = file.get(key, gguf::Kind::Bool, kBadType)) value = v->u != 0;
  };
  flag("tokenizer.ggml.add_bos_token", add_bos_);
  flag("tokenizer.ggml.add_eos_token", add_eos_);
  flag("tokenizer.ggml.add_sep_token", add_sep_);
  auto need = [&](bool add, int32_t id, const char* add_key, const char* id_key) {
    if (add && id < 0)
      fail("VOCAB_MISSING_SPECIAL", path + ": " + add_key + " is true but " + id_key + " names no token");
  };
  need(add_bos_, bos_, "tokenizer.ggml.add_bos_token", "tokenizer.ggml.bos_token_id");
  need(add_eos_, eos_, "tokenizer.ggml.add_eos_token", "tokenizer.ggml.eos_token_id");
  need(add_sep_, sep_, "tokenizer.ggml.add_sep_token", "tokenizer.ggml.seperator_token_id");
}

// llama.cpp recognises some special tokens by their text (converters do not record them), forces them to
// CONTROL, and collects the end-of-generation set. Where llama.cpp's choice among several candidates depends on
// hash-map order, the first name of each list wins here.
void Vocab::detect_special_tokens(const std::string& general_name) {
  auto first_of = [&](std::initializer_list<const char*> names) {
    for (const char* nm : names) {
      const int32_t id = find_token(nm);
      if (id >= 0) return id;
    }
    return int32_t(-1);
  };
  auto make_control = [&](int32_t id) {
    if (id >= 0) tokens_[size_t(id)].attr |= kAttrControl;
  };
  if (eot_ < 0) {
    eot_ = first_of({"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>", "_<EOT>",
                     "<\xEF\xBD\x9C"
                     "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"});
    make_control(eot_);
  }
  if (eom_ < 0) {
    eom_ = first_of({"<|eom_id|>"});
    make_control(eom_);
  }
  struct Fim {
    int32_t* id;
    std::initializer_list<const char*> names;
  };
  const Fim fims[] = {
      {&fim_pre_,
       {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
        "<\xEF\xBD\x9C"
        "fim\xE2\x96\x81"
        "begin\xEF\xBD\x9C>",
        "<PRE>", "\xE2\x96\x81<PRE>"}},
      {&fim_suf_,
       {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
        "<\xEF\xBD\x9C"
        "fim\xE2\x96\x81hole\xEF\xBD\x9C>",
        "<SUF>", "\xE2\x96\x81<SUF>"}},
      {&fim_mid_,
       {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
        "<\xEF\xBD\x9C"
        "fim\xE2\x96\x81"
        "end\xEF\xBD\x9C>",
        "<MID>", "\xE2\x96\x81<MID>"}},
      {&fim_pad_, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>"}},
      {&fim_rep_, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
      {&fim_sep_, {"<|file_sep|>"}},
  };
  for (const Fim& f : fims) {
    if (*f.id >= 0) continue;
    *f.id = first_of(f.names);
    make_control(*f.id);
  }

  // End-of-generation tokens: by name, plus EOS/EOT/EOM and the FIM separators.
  std::vector<int32_t> eog;
  for (const char* nm : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>",
                         "_<EOT>", "<|end_of_text|>", "<end_of_utterance>"}) {
    const int32_t id = find_token(nm);
    if (id < 0) continue;
    eog.push_back(id);
    make_control(id);
  }
  for (int32_t id : {eos_, eot_, eom_, fim_pad_, fim_rep_, fim_sep_})
    if (id >= 0) eog.push_back(id);
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  eog_ = std::move(eog);

  // Whitespace-stripping special tokens that llama.cpp assigns by model name.
  std::string lname = general_name;
  for (char& c : lname) c = char(c >= 'A' && c <= 'Z' ? c + 32 : c);
  auto set_attr = [&](const char* text, uint32_t attr, bool on) {
    const int32_t id = find_token(text);
    if (id < 0) return;
    if (on) tokens_[size_t(id)].attr |= attr;
    else tokens_[size_t(id)].attr &= ~attr;
  };
  if (pre_.find("jina-v2-de") != std::string::npos || pre_.find("jina-v2-es") != std::string::npos ||
      pre_.find("jina-v2-code") != std::string::npos) {
    set_attr("<mask>", kAttrLstrip, true);
  } else if (lname.find("phi-3") != std::string::npos || lname.find("phi3") != std::string::npos) {
    for (Token& t : tokens_)
      if (t.attr & (kAttrControl | kAttrUserDefined | kAttrUnknown)) t.attr |= kAttrRstrip;
    set_attr("</s>", kAttrRstrip, true);
    for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) set_attr(t, kAttrRstrip, false);
  }
}

void Vocab::build_special_cache() {
  for (int32_t id = 0; id < n_tokens(); id++)
    if (tokens_[size_t(id)].attr & (kAttrControl | kAttrUserDefined | kAttrUnknown)) specials_.push_back(id);
  std::stable_sort(specials_.begin(), specials_.end(), [&](int32_t a, int32_t b) {
    return tokens_[size_t(a)].text.size() > tokens_[size_t(b)].text.size();
  });
  special_trie_.assign(1, TrieNode());
  trie_root_.fill(-1);
  for (size_t rank = 0; rank < specials_.size(); rank++) {
    int32_t node = 0;
    for (char c : tokens_[size_t(specials_[rank])].text) {
      int32_t next = node == 0 ? trie_root_[uint8_t(c)] : -1;
      for (auto& e : special_trie_[size_t(node)].next)
        if (e.first == uint8_t(c)) next = e.second;
      if (next < 0) {
        next = int32_t(special_trie_.size());
        special_trie_[size_t(node)].next.emplace_back(uint8_t(c), next);
        if (node == 0) trie_root_[uint8_t(c)] = next;
        special_trie_.emplace_back();
      }
      node = next;
    }
    special_trie_[size_t(node)].rank = int32_t(rank);
  }
}

// Splits the text at special tokens, in llama.cpp's order: the longest special token first, each occurrence
// taken leftmost-first in whatever text earlier tokens left over.
std::vector<Vocab::Fragment> Vocab::partition(std::string_view text, bool parse_special) const {
  std::vector<Fragment> frags;
  if (text.empty()) return frags;
  frags.push_back({-1, 0, text.size()});

  // One pass with the trie tells which special tokens occur at all (as ranks in specials_); only those need
  // the splitting passes.
  std::vector<int32_t> found;
  for (size_t i = 0; i < text.size(); i++) {
    int32_t node = trie_root_[uint8_t(text[i])];  // most bytes start no special token
    for (size_t j = i + 1; node >= 0; j++) {
      if (special_trie_[size_t(node)].rank >= 0) found.push_back(special_trie_[size_t(node)].rank);
      if (j == text.size()) break;
      int32_t next = -1;
      for (auto& e : special_trie_[size_t(node)].next)
        if (e.first == uint8_t(text[j])) next = e.second;
      node = next;
    }
  }
  if (found.empty()) return frags;
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());

  std::vector<Fragment> next;
  for (int32_t rank : found) {
    const int32_t id = specials_[size_t(rank)];
    const Token& tok = tokens_[size_t(id)];
    // Without parse_special, control and unknown tokens are plain text; user-defined ones are still split out
    // (as Hugging Face tokenizers do with added tokens).
    if (!parse_special && (tok.attr & (kAttrControl | kAttrUnknown))) continue;
    const std::string_view t = tok.text;
    next.clear();
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t base = f.offset;
      const size_t end = f.offset + f.length;
      while (true) {
        const size_t m = text.substr(0, end).find(t, base);
        if (m == std::string_view::npos) {
          if (base < end) next.push_back({-1, base, end - base});
          break;
        }
        size_t left_end = m;
        if (tok.attr & kAttrLstrip)
          while (left_end > base && ascii_space(text[left_end - 1])) left_end--;
        if (left_end > base) next.push_back({-1, base, left_end - base});
        next.push_back({id, m, t.size()});
        base = m + t.size();
        if (tok.attr & kAttrRstrip)
          while (base < end && ascii_space(text[base])) base++;
      }
    }
    frags.swap(next);
  }
  return frags;
}

std::vector<int32_t> Vocab::tokenize(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  const std::vector<Fragment> frags = partition(text, parse_special);
  switch (type_) {
    case Type::Spm: {
      // A fragment that follows BOS, a special token or the start gets SentencePiece's leading space.
      bool prev_special = true;
      if (add_special && add_bos_) out.push_back(bos_);
      std::string s;
      for (const Fragment& f : frags) {
        if (f.token >= 0) {
          out.push_back(f.token);
          prev_special = true;
          continue;
        }
        s.clear();
        if (add_space_prefix_ && prev_special) s += ' ';
        s.append(text.substr(f.offset, f.length));
        replace_all(s, " ", kSpace);
        tokenize_spm(s, out);
        prev_special = false;
      }
      if (add_special && add_eos_) out.push_back(eos_);
      break;
    }
    case Type::Bpe: {
      if (add_special && add_bos_) out.push_back(bos_);
      for (const Fragment& f : frags) {
        if (f.token >= 0) out.push_back(f.token);
        else tokenize_bpe(text.substr(f.offset, f.length), out);
      }
      if (add_special && add_eos_) out.push_back(eos_);
      break;
    }
    case Type::Wpm: {
      // llama.cpp frames WordPiece input as [CLS] ... [SEP] whenever add_special is set.
      if (add_special && bos_ >= 0) out.push_back(bos_);
      for (const Fragment& f : frags) {
        if (f.token >= 0) out.push_back(f.token);
        else tokenize_wpm(text.substr(f.offset, f.length), out);
      }
      if (add_special && sep_ >= 0) out.push_back(sep_);
      break;
    }
  }
  return out;
}

int32_t Vocab::byte_token(uint8_t b) const { return byte_fallback_[b]; }

uint8_t Vocab::token_to_byte(int32_t id) const {
  // "<0xXX>": the two hex digits after "<0x" (what llama.cpp's strtol on substr(3, 2) reads).
  const std::string& s = tokens_[size_t(id)].text;
  int v = 0;
  for (size_t i = 3; i < std::min<size_t>(5, s.size()); i++) {
    const char c = s[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) break;
    v = v * 16 + d;
  }
  return uint8_t(v);
}

std::string Vocab::token_to_piece(int32_t id, bool special) const {
  if (id < 0 || id >= n_tokens())
    fail("INVALID_TOKEN", strfmt("token id %d is outside the vocabulary (0 to %d)", id, n_tokens() - 1));
  const Token& t = tokens_[size_t(id)];
  if (!special && (t.attr & (kAttrUnknown | kAttrControl))) return std::string();
  if (t.attr & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return t.text;
  if (t.attr & kAttrNormal) {
    if (type_ != Type::Bpe) {
      std::string s = t.text;
      replace_all(s, kSpace, " ");
      return s;
    }
    // Byte-level BPE: every character stands for one byte.
    std::vector<uint32_t> cps;
    unicode::decode_lenient(t.text, cps);
    std::string s;
    for (uint32_t cp : cps) {
      const int b = unicode::char_to_byte(cp);
      if (b >= 0) {
        s += char(b);
        continue;
      }
      // llama.cpp's marker for a character outside the mapping, reproduced as is.
      std::string u;
      unicode::append_utf8(u, cp);
      s += "[UNK_BYTE_0x";
      for (char c : u) s += strfmt("%02x", uint8_t(c));
      s += t.text + "]";
    }
    return s;
  }
  if (t.attr & kAttrByte) return std::string(1, char(token_to_byte(id)));
  return std::string();  // unused or undefined tokens have no text
}

std::string Vocab::detokenize(const std::vector<int32_t>& ids, bool special) const {
  std::string s;
  bool strip_space = add_space_prefix_;  // only the first piece loses its leading space
  for (int32_t id : ids) {
    std::string piece = token_to_piece(id, special);
    if (strip_space && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    strip_space = false;
    s += piece;
  }
  if (clean_spaces_ && !s.empty()) {
    // llama.cpp's clean_up_tokenization_spaces, pass by pass on bytes.
    std::string a(1, s[0]);
    for (size_t i = 1; i < s.size(); i++) {
      const char x = s[i];
      if (s[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) a.pop_back();
      a += x;
    }
    std::string b(1, a[0]);
    for (size_t i = 1; i < a.size(); i++) {
      const char x = a[i];
      if (x == '\'' && i + 1 < a.size() && a[i - 1] == ' ' && a[i + 1] == ' ') {
        b.pop_back();   // " ' " loses both spaces
        a[++i] = '\0';  // (the following space is skipped, and no longer counts as a space)
      }
      b += x;
    }
    std::string c(1, b[0]);
    for (size_t i = 1; i < b.size(); i++) {
      const char x = b[i];
      if (b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
        const char x1 = b[i + 1];
        if (x1 == 's' || x1 == 'm') {
          c.pop_back();
        } else if (x1 != 't' && x1 != 'd' && i + 2 < b.size()) {
          const char x2 = b[i + 2];
          if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) c.pop_back();
        }
      }
      c += x;
    }
    s.swap(c);
  }
  Utf8Stream utf8;
  std::string text = utf8.push(s);
  return text + utf8.flush();
}

bool Vocab::is_eog(int32_t id) const { return std::binary_search(eog_.begin(), eog_.end(), id); }

const std::string& Vocab::token_text(int32_t id) const {
  if (id < 0 || id >= n_tokens())
    fail("INVALID_TOKEN", strfmt("token id %d is outside the vocabulary (0 to %d)", id, n_tokens() - 1));
  return tokens_[size_t(id)].text;
}

float Vocab::token_score(int32_t id) const {
  token_text(id);  // range check
  return tokens_[size_t(id)].score;
}

uint32_t Vocab::token_attr(int32_t id) const {
  token_text(id);
  return tokens_[size_t(id)].attr;
}

int32_t Vocab::find_token(std::string_view text) const {
  auto it = ids_.find(text);
  return it == ids_.end() ? -1 : it->second;
}

size_t Vocab::memory_bytes() const {
  size_t n = tokens_.size() * (sizeof(Token) + 16) + ids_.size() * 48 + merges_.size() * 40 +
             special_trie_.size() * sizeof(TrieNode);
  for (const Token& t : tokens_) n += t.text.capacity();
  return n;
}

}  // namespace folio
