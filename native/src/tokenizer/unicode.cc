#include "tokenizer/unicode.h"

#include <algorithm>
#include <array>
#include <iterator>

namespace folio::unicode {
namespace {

struct CaseRun {
  uint32_t first, last;
  int32_t delta;
  uint32_t step;
};
struct NfdRun {
  uint32_t first, last, target;
};

#include "tokenizer/unicode-tables.inc"

uint8_t flags_slow(uint32_t cp) {
  // Last run starting at or before cp.
  auto it = std::upper_bound(std::begin(kFlagRuns), std::end(kFlagRuns), cp,
                             [](uint32_t c, uint32_t run) { return c < (run >> 8); });
  return uint8_t(*(it - 1) & 0xFF);
}

// Pre-tokenizers ask for the flags of every code point, so the BMP gets a flat table (64 KiB).
const std::array<uint8_t, 0x10000>& bmp_flags() {
  static const auto table = [] {
    std::array<uint8_t, 0x10000> t{};
    for (uint32_t cp = 0; cp < 0x10000; cp++) t[cp] = flags_slow(cp);
    return t;
  }();
  return table;
}

uint32_t case_map(const CaseRun* begin, const CaseRun* end, uint32_t cp) {
  auto it = std::upper_bound(begin, end, cp, [](uint32_t c, const CaseRun& r) { return c < r.first; });
  if (it == begin) return cp;
  const CaseRun& r = *(it - 1);
  if (cp > r.last || (cp - r.first) % r.step != 0) return cp;
  return uint32_t(int64_t(cp) + r.delta);
}

}  // namespace

uint8_t flags(uint32_t cp) {
  if (cp < 0x10000) return bmp_flags()[cp];
  if (cp >= 0x110000) return kOther;
  return flags_slow(cp);
}

uint32_t to_lower(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  return case_map(std::begin(kLowerRuns), std::end(kLowerRuns), cp);
}

uint32_t to_upper(uint32_t cp) {
  if (cp < 0x80) return cp >= 'a' && cp <= 'z' ? cp - 32 : cp;
  return case_map(std::begin(kUpperRuns), std::end(kUpperRuns), cp);
}

uint32_t nfd_first(uint32_t cp) {
  auto it = std::upper_bound(std::begin(kNfdRuns), std::end(kNfdRuns), cp,
                             [](uint32_t c, const NfdRun& r) { return c < r.first; });
  if (it == std::begin(kNfdRuns)) return cp;
  const NfdRun& r = *(it - 1);
  return cp <= r.last ? r.target : cp;
}

void decode_lenient(std::string_view s, std::vector<uint32_t>& out) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  auto cont = [&](size_t i) { return i < n && (p[i] & 0xC0) == 0x80; };
  size_t i = 0;
  while (i < n) {
    const uint8_t b = p[i];
    if (b < 0x80) {
      out.push_back(b);
      i += 1;
    } else if ((b & 0xE0) == 0xC0 && cont(i + 1)) {
      out.push_back(uint32_t(b & 0x1F) << 6 | (p[i + 1] & 0x3F));
      i += 2;
    } else if ((b & 0xF0) == 0xE0 && cont(i + 1) && cont(i + 2)) {
      out.push_back(uint32_t(b & 0x0F) << 12 | uint32_t(p[i + 1] & 0x3F) << 6 | (p[i + 2] & 0x3F));
      i += 3;
    } else if ((b & 0xF8) == 0xF0 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
      uint32_t cp = uint32_t(b & 0x07) << 18 | uint32_t(p[i + 1] & 0x3F) << 12 | uint32_t(p[i + 2] & 0x3F) << 6 |
                    (p[i + 3] & 0x3F);
      out.push_back(cp < 0x110000 ? cp : 0xFFFD);
      i += 4;
    } else {
      out.push_back(0xFFFD);  // a stray byte: skip just this one
      i += 1;
    }
  }
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

namespace {

// The printable bytes stand for themselves; the other 68 take U+0100.. in byte order.
struct ByteMap {
  std::array<std::string, 256> to_char;
  std::array<int16_t, 512> from_cp;  // code points below 512 cover every character of the mapping
  ByteMap() {
    from_cp.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; b++) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const uint32_t cp = printable ? uint32_t(b) : next++;
      append_utf8(to_char[b], cp);
      from_cp[cp] = int16_t(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

}  // namespace

const std::string& byte_to_char(uint8_t b) { return byte_map().to_char[b]; }

int char_to_byte(uint32_t cp) { return cp < 512 ? byte_map().from_cp[cp] : -1; }

}  // namespace folio::unicode
