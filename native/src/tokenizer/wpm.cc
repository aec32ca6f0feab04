// WordPiece ("bert" vocabularies). llama.cpp's converter stores word-initial pieces with a leading ▁ and
// continuation pieces without "##", so a word is matched greedily, longest piece first, as ▁ + word.
#include <algorithm>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace folio {
namespace {

// The CJK ideograph blocks BERT splits into single characters (with llama.cpp's 0x2B920 bound, which follows
// the Hugging Face code rather than the Unicode block).
bool is_chinese_char(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// BERT's basic tokenizer as llama.cpp does it: each code point replaced by the first code point of its NFD
// form (so accents vanish) and lower-cased; split at whitespace; punctuation, ASCII symbols and CJK ideographs
// become words of their own; controls, NUL and U+FFFD are dropped.
std::vector<std::string> split_words(std::string_view text) {
  std::vector<uint32_t> cps;
  unicode::decode_lenient(text, cps);
  std::vector<std::string> words(1);
  for (uint32_t cp : cps) {
    cp = unicode::nfd_first(cp);
    const uint8_t f = unicode::flags(cp);
    if (f & unicode::kWhitespace) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    if (cp == 0 || cp == 0xFFFD || (f & unicode::kOther)) continue;
    std::string s;
    unicode::append_utf8(s, unicode::to_lower(cp));
    if ((f & unicode::kPunctuation) || (cp < 0x7F && (f & unicode::kSymbol)) || is_chinese_char(cp)) {
      if (!words.back().empty()) words.emplace_back();
      words.back() = s;
      words.emplace_back();
    } else {
      words.back() += s;
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

}  // namespace

void Vocab::tokenize_wpm(std::string_view text, std::vector<int32_t>& out) const {
  for (const std::string& word : split_words(text)) {
    if (word.empty()) continue;
    const std::string w = "\xE2\x96\x81" + word;
    const size_t n = w.size();
    const size_t mark = out.size();
    for (size_t i = 0; i < n; i++) {
      bool found = false;
      for (size_t j = std::min(n, i + max_token_len_ + 1); j > i; j--) {
        const int32_t id = find_token(std::string_view(w).substr(i, j - i));
        if (id >= 0) {
          out.push_back(id);
          found = true;
          i = j - 1;
          break;
        }
      }
      if (!found) {  // a part of the word has no piece: the whole word becomes [UNK]
        out.resize(mark);
        break;
      }
    }
    if (out.size() == mark) out.push_back(unk_);
  }
}

}  // namespace folio
