// Unicode helpers for the tokenizers: code point properties (from unicode-tables.inc), UTF-8 decoding the way
// llama.cpp decodes (so that invalid input splits and re-encodes exactly as it does there), and the GPT-2
// byte-to-character mapping of byte-level BPE.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace folio::unicode {

// Property flags of a code point. Exactly one category bit is set for every code point below 0x110000.
enum : uint8_t {
  kLetter = 1,       // \p{L}
  kNumber = 2,       // \p{N}
  kPunctuation = 4,  // \p{P}
  kSymbol = 8,       // \p{S}
  kMark = 16,        // \p{M}
  kSeparator = 32,   // \p{Z}
  kOther = 64,       // \p{C}: controls, format, surrogates, private use, unassigned
  kWhitespace = 128  // White_Space
};

uint8_t flags(uint32_t cp);  // code points past U+10FFFF read as kOther
inline bool is_whitespace(uint32_t cp) { return flags(cp) & kWhitespace; }
inline bool is_letter(uint32_t cp) { return flags(cp) & kLetter; }
inline bool is_number(uint32_t cp) { return flags(cp) & kNumber; }
uint32_t to_lower(uint32_t cp);
uint32_t to_upper(uint32_t cp);
uint32_t nfd_first(uint32_t cp);  // first code point of the canonical decomposition (cp itself if none)

// Length of the UTF-8 sequence a lead byte announces (1 for continuation bytes, 4 for F8..FF): llama.cpp splits
// text into symbols with this rule, without validating.
inline size_t utf8_len(uint8_t lead) {
  static const uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}

// Decodes like llama.cpp's unicode_cpts_from_utf8: each well-formed-looking sequence (lead byte plus the right
// number of continuation bytes; overlong forms and surrogates are not rejected) gives its code point, and each
// byte that starts no such sequence gives U+FFFD. Values above U+10FFFF, which llama.cpp cannot re-encode,
// become U+FFFD too.
void decode_lenient(std::string_view s, std::vector<uint32_t>& out);

void append_utf8(std::string& out, uint32_t cp);

// GPT-2 byte-level BPE: every byte is written as one printable character (U+0021.. as itself, the others
// shifted to U+0100..). byte_to_char(b) is that character in UTF-8; char_to_byte is the inverse (-1 if none).
const std::string& byte_to_char(uint8_t b);
int char_to_byte(uint32_t cp);

}  // namespace folio::unicode
