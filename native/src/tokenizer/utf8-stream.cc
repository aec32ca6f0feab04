// UTF-8 decoding as the WHATWG Encoding Standard specifies it (what TextDecoder does), one chunk at a time: a
// token may end in the middle of a character, and the text is only released once the character is complete.
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace folio {

namespace {
const char kReplacement[] = "\xEF\xBF\xBD";
}

std::string Utf8Stream::push(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size(); i++) {
    const uint8_t b = uint8_t(bytes[i]);
    if (needed_ == 0) {
      if (b < 0x80) {
        out += char(b);
      } else if (b >= 0xC2 && b <= 0xDF) {
        needed_ = 1;
        cp_ = b & 0x1F;
      } else if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0) lower_ = 0xA0;  // no overlong forms
        if (b == 0xED) upper_ = 0x9F;  // no surrogates
        needed_ = 2;
        cp_ = b & 0x0F;
      } else if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0) lower_ = 0x90;
        if (b == 0xF4) upper_ = 0x8F;  // nothing past U+10FFFF
        needed_ = 3;
        cp_ = b & 0x07;
      } else {
        out += kReplacement;
      }
      continue;
    }
    if (b < lower_ || b > upper_) {
      // The sequence broke off: it becomes one U+FFFD and this byte starts afresh.
      cp_ = 0;
      needed_ = seen_ = 0;
      lower_ = 0x80;
      upper_ = 0xBF;
      out += kReplacement;
      i--;
      continue;
    }
    lower_ = 0x80;
    upper_ = 0xBF;
    cp_ = cp_ << 6 | (b & 0x3F);
    if (++seen_ == needed_) {
      unicode::append_utf8(out, cp_);
      cp_ = 0;
      needed_ = seen_ = 0;
    }
  }
  return out;
}

std::string Utf8Stream::flush() {
  const bool pending = needed_ != 0;
  cp_ = 0;
  needed_ = seen_ = 0;
  lower_ = 0x80;
  upper_ = 0xBF;
  return pending ? std::string(kReplacement) : std::string();
}

}  // namespace folio
