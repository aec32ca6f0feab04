#include "tokenizer/pretokenize.h"

#include <algorithm>
#include <initializer_list>
#include <utility>
#include <vector>

#include "tokenizer/unicode.h"

namespace folio {
namespace {

using namespace unicode;

// The text being split: code points and their flags, indexed alike.
struct Text {
  const uint32_t* cp;
  const uint8_t* fl;
  size_t begin = 0;  // start of the piece being split
  bool ws(size_t i) const { return fl[i] & kWhitespace; }
  bool has(size_t i, uint8_t mask) const { return fl[i] & mask; }
  // Neither whitespace, letter nor number: [^\s\p{L}\p{N}].
  bool other(size_t i) const { return !(fl[i] & (kWhitespace | kLetter | kNumber)); }
  bool newline(size_t i) const { return cp[i] == '\r' || cp[i] == '\n'; }
  // llama.cpp runs the regexes without \p{..} on code points with non-ASCII whitespace replaced by a vertical
  // tab, so that no literal class can match such a space.
  uint32_t wide(size_t i) const { return cp[i] >= 0x80 && ws(i) ? 0x0B : cp[i]; }
};

// A matcher gives the length of the match starting at p (the piece being split ends at e), 0 if none. Like a
// regex alternation it commits to the first alternative that matches.
using Matcher = size_t (*)(const Text&, size_t p, size_t e);

template <typename Pred>
size_t run_end(size_t q, size_t e, Pred pred) {
  while (q < e && pred(q)) q++;
  return q;
}

size_t run_of(const Text& t, size_t q, size_t e, uint8_t mask) {
  return run_end(q, e, [&](size_t i) { return t.has(i, mask); });
}

uint32_t ascii_lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

// 's|'t|'re|'ve|'m|'ll|'d, optionally case-insensitive.
size_t contraction(const Text& t, size_t p, size_t e, bool any_case) {
  if (t.cp[p] != '\'' || p + 1 >= e) return 0;
  auto low = [&](size_t i) { return any_case ? ascii_lower(t.cp[i]) : t.cp[i]; };
  const uint32_t a = low(p + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (p + 2 >= e) return 0;
  const uint32_t b = low(p + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
size_t match_gpt2(const Text& t, size_t p, size_t e) {
  if (size_t n = contraction(t, p, e, false)) return n;
  // The optional space belongs to whichever class follows it.
  const size_t s = t.cp[p] == ' ' && p + 1 < e ? p + 1 : p;
  if (t.has(s, kLetter)) return run_of(t, s, e, kLetter) - p;
  if (t.has(s, kNumber)) return run_of(t, s, e, kNumber) - p;
  if (t.other(s)) return run_end(s, e, [&](size_t i) { return t.other(i); }) - p;
  if (t.ws(p)) {
    const size_t r = run_of(t, p, e, kWhitespace);
    if (r == e) return r - p;         // nothing after it: (?!\S) holds
    if (r - p > 1) return r - 1 - p;  // leave the last space to the word that follows
  }
  return 0;  // a lone space before a non-space stays a piece of its own
}

// Llama 3 (kDigits 3) and Qwen 2 (kDigits 1):
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,kDigits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|
// \s+(?!\S)|\s+
template <size_t kDigits>
size_t match_llama3(const Text& t, size_t p, size_t e) {
  if (size_t n = contraction(t, p, e, true)) return n;
  if (!t.newline(p) && !t.has(p, kLetter | kNumber) && p + 1 < e && t.has(p + 1, kLetter))
    return run_of(t, p + 1, e, kLetter) - p;
  if (t.has(p, kLetter)) return run_of(t, p, e, kLetter) - p;
  if (t.has(p, kNumber)) return std::min(run_of(t, p, e, kNumber) - p, kDigits);
  const size_t s = t.cp[p] == ' ' && p + 1 < e ? p + 1 : p;
  if (t.other(s)) {
    const size_t q = run_end(s, e, [&](size_t i) { return t.other(i); });
    return run_end(q, e, [&](size_t i) { return t.newline(i); }) - p;
  }
  if (t.ws(p)) {
    const size_t r = run_of(t, p, e, kWhitespace);
    size_t last_newline = r;
    for (size_t i = p; i < r; i++)
      if (t.newline(i)) last_newline = i;
    if (last_newline < r) return last_newline + 1 - p;  // \s*[\r\n]+ backs off to the last line break
    if (r == e || r - p == 1) return r - p;
    return r - 1 - p;
  }
  return 0;
}

bool in(uint32_t c, std::initializer_list<uint32_t> set) { return std::find(set.begin(), set.end(), c) != set.end(); }

template <bool kBacktick>
size_t match_punct_run(const Text& t, size_t p, size_t e) {
  // [\p{P}\$\+<=>\^~\|`]+ (Falcon) or the same without the backtick (default).
  auto ok = [&](size_t i) {
    return t.has(i, kPunctuation) || in(t.cp[i], {'$', '+', '<', '=', '>', '^', '~', '|'}) ||
           (kBacktick && t.cp[i] == '`');
  };
  return run_end(p, e, ok) - p;
}

bool ascii_digit(uint32_t c) { return c >= '0' && c <= '9'; }

size_t match_digit_triple(const Text& t, size_t p, size_t e) {
  return p + 3 <= e && ascii_digit(t.cp[p]) && ascii_digit(t.cp[p + 1]) && ascii_digit(t.cp[p + 2]) ? 3 : 0;
}

size_t match_number(const Text& t, size_t p, size_t e) { return t.has(p, kNumber) ? 1 : 0; }

size_t match_number_run(const Text& t, size_t p, size_t e) { return run_of(t, p, e, kNumber) - p; }

size_t match_newline(const Text& t, size_t p, size_t e) { return t.newline(p) ? 1 : 0; }

// \s?X+ for a class X: the whitespace is taken only if X follows it.
template <typename Pred>
size_t ws_then_run(const Text& t, size_t p, size_t e, Pred pred) {
  const size_t s = t.ws(p) && p + 1 < e && pred(p + 1) ? p + 1 : p;
  return pred(s) ? run_end(s, e, pred) - p : 0;
}

bool in_ranges(uint32_t c, const std::pair<uint32_t, uint32_t>* r, size_t n) {
  auto it =
      std::upper_bound(r, r + n, c, [](uint32_t v, const std::pair<uint32_t, uint32_t>& x) { return v < x.first; });
  return it != r && c <= (it - 1)->second;
}

// The cased letters DeepSeek LLM's pre-tokenizer lists, as sorted ranges.
const std::pair<uint32_t, uint32_t> kDeepseekLetters[] = {
    {0x41, 0x5A},       {0x61, 0x7A},       {0xB5, 0xB5},       {0xC0, 0xD6},       {0xD8, 0xF6},
    {0xF8, 0x1BA},      {0x1BC, 0x1BF},     {0x1C4, 0x293},     {0x295, 0x2AF},     {0x370, 0x373},
    {0x376, 0x377},     {0x37B, 0x37D},     {0x37F, 0x37F},     {0x386, 0x386},     {0x388, 0x38A},
    {0x38C, 0x38C},     {0x38E, 0x3A1},     {0x3A3, 0x3F5},     {0x3F7, 0x481},     {0x48A, 0x52F},
    {0x531, 0x556},     {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},   {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},   {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},   {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B},   {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},   {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},   {0x2102, 0x2102},   {0x2107, 0x2107},
    {0x210A, 0x2113},   {0x2115, 0x2115},   {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},
    {0x2128, 0x2128},   {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},   {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},   {0xA680, 0xA69B},   {0xA722, 0xA76F},
    {0xA771, 0xA787},   {0xA78B, 0xA78E},   {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A},   {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};

// ASCII and CJK punctuation of DeepSeek LLM: [!-/:-~！-／：-～‘-‟　-。] (note :-~ spans the ASCII letters).
const std::pair<uint32_t, uint32_t> kDeepseekPunct[] = {
    {0x21, 0x2F}, {0x3A, 0x7E}, {0x2018, 0x201F}, {0x3000, 0x3002}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E},
};

// [一-龥ࠀ-一가-퟿]: U+0800..U+9FA5 and the Hangul syllables block and beyond.
const std::pair<uint32_t, uint32_t> kCjk[] = {{0x0800, 0x9FA5}, {0xAC00, 0xD7FF}};

template <size_t N>
bool wide_in(const Text& t, size_t i, const std::pair<uint32_t, uint32_t> (&r)[N]) {
  return in_ranges(t.wide(i), r, N);
}

size_t match_deepseek_letters(const Text& t, size_t p, size_t e) {
  return ws_then_run(t, p, e, [&](size_t i) { return wide_in(t, i, kDeepseekLetters); });
}

size_t match_deepseek_punct(const Text& t, size_t p, size_t e) {
  return ws_then_run(t, p, e, [&](size_t i) { return wide_in(t, i, kDeepseekPunct); });
}

// \s+$: the whitespace the piece ends with. Only the start of a whitespace run can match (a later start
// would have the same run end), which keeps long runs linear.
size_t match_trailing_ws(const Text& t, size_t p, size_t e) {
  if (!t.ws(p) || (p > t.begin && t.ws(p - 1))) return 0;
  return run_of(t, p, e, kWhitespace) == e ? e - p : 0;
}

size_t match_cjk(const Text& t, size_t p, size_t e) {
  return run_end(p, e, [&](size_t i) { return wide_in(t, i, kCjk); }) - p;
}

size_t match_ws_letters(const Text& t, size_t p, size_t e) {
  return ws_then_run(t, p, e, [&](size_t i) { return t.has(i, kLetter); });
}

size_t match_ws_punct(const Text& t, size_t p, size_t e) {
  return ws_then_run(t, p, e, [&](size_t i) { return t.has(i, kPunctuation); });
}

// BLOOM:  ?[^(\s|.,!?…。，、।۔،)]+
size_t match_bloom(const Text& t, size_t p, size_t e) {
  auto ok = [&](size_t i) {
    return !t.ws(i) &&
           !in(t.cp[i], {'(', ')', '|', '.', ',', '!', '?', 0x2026, 0x3002, 0xFF0C, 0x3001, 0x0964, 0x06D4, 0x060C});
  };
  const size_t s = t.cp[p] == ' ' && p + 1 < e && ok(p + 1) ? p + 1 : p;
  return ok(s) ? run_end(s, e, ok) - p : 0;
}

// Splits every piece of `in` at the matches of m: matches and the text between them become pieces.
void apply(Text& t, Matcher m, const std::vector<size_t>& in, std::vector<size_t>& out) {
  out.clear();
  size_t b = 0;
  for (size_t e : in) {
    t.begin = b;
    size_t pending = b;  // start of text not yet emitted
    for (size_t p = b; p < e;) {
      const size_t n = m(t, p, e);
      if (n == 0) {
        p++;
        continue;
      }
      if (p > pending) out.push_back(p);
      p += n;
      out.push_back(p);
      pending = p;
    }
    if (pending < e) out.push_back(e);
    b = e;
  }
}

std::vector<Matcher> stages(PreTokenizer kind) {
  switch (kind) {
    case PreTokenizer::Default: return {match_punct_run<false>, match_gpt2, match_number_run, match_digit_triple};
    case PreTokenizer::Gpt2: return {match_gpt2};
    case PreTokenizer::Llama3: return {match_llama3<3>};
    case PreTokenizer::Qwen2: return {match_llama3<1>};
    case PreTokenizer::Falcon: return {match_punct_run<true>, match_gpt2, match_digit_triple};
    case PreTokenizer::Starcoder: return {match_number, match_gpt2};
    case PreTokenizer::DeepseekLlm:
      return {match_newline, match_deepseek_letters, match_deepseek_punct, match_trailing_ws,
              match_cjk,     match_number_run};
    case PreTokenizer::DeepseekCoder: return {match_newline, match_ws_letters, match_ws_punct, match_cjk, match_number};
    case PreTokenizer::Bloom: return {match_bloom};
    case PreTokenizer::Viking: return {match_bloom, match_number};
  }
  return {};
}

}  // namespace

void pre_tokenize(PreTokenizer kind, std::string_view text, std::vector<uint32_t>& cps, std::vector<size_t>& ends) {
  cps.clear();
  ends.clear();
  decode_lenient(text, cps);
  if (cps.empty()) return;
  std::vector<uint8_t> fl(cps.size());
  for (size_t i = 0; i < cps.size(); i++) fl[i] = flags(cps[i]);
  Text t{cps.data(), fl.data()};
  ends.push_back(cps.size());
  std::vector<size_t> next;
  for (Matcher m : stages(kind)) {
    apply(t, m, ends, next);
    ends.swap(next);
  }
}

bool pre_config_from_name(std::string_view name, PreConfig& c) {
  using P = PreTokenizer;
  struct Entry {
    const char* name;
    P kind;
    bool ignore_merges, add_bos, clean_spaces;
  };
  // The names llama.cpp maps to each splitting, with the flags it sets alongside.
  static const Entry kTable[] = {
      {"default", P::Default, false, false, true},
      {"llama3", P::Llama3, true, true, true},
      {"llama-v3", P::Llama3, true, true, true},
      {"llama-bpe", P::Llama3, true, true, true},
      {"falcon3", P::Llama3, true, true, true},
      {"falcon-h1", P::Llama3, true, true, true},
      {"pixtral", P::Llama3, true, true, true},
      {"midm-2.0", P::Llama3, true, true, true},
      {"lfm2", P::Llama3, true, true, true},
      {"dbrx", P::Llama3, false, false, true},
      {"smaug-bpe", P::Llama3, false, false, true},
      {"deepseek-llm", P::DeepseekLlm, false, false, false},
      {"deepseek-coder", P::DeepseekCoder, false, false, false},
      {"falcon", P::Falcon, false, false, true},
      {"mpt", P::Gpt2, false, false, true},
      {"starcoder", P::Starcoder, false, false, true},
      {"gpt-2", P::Gpt2, false, false, true},
      {"phi-2", P::Gpt2, false, false, true},
      {"jina-es", P::Gpt2, false, false, true},
      {"jina-de", P::Gpt2, false, false, true},
      {"gigachat", P::Gpt2, false, false, true},
      {"jina-v2-es", P::Gpt2, false, false, true},
      {"jina-v2-de", P::Gpt2, false, false, true},
      {"jina-v1-en", P::Gpt2, false, false, true},
      {"jina-v2-code", P::Gpt2, false, false, true},
      {"roberta-bpe", P::Gpt2, false, false, true},
      {"a.x-4.0", P::Gpt2, false, false, true},
      {"mellum", P::Gpt2, false, false, true},
      {"exaone4", P::Gpt2, false, false, true},
      {"olmo", P::Gpt2, false, false, true},
      {"jais", P::Gpt2, false, false, true},
      {"trillion", P::Gpt2, false, false, false},
      {"granite-docling", P::Gpt2, false, false, false},
      {"refact", P::Starcoder, false, false, true},
      {"command-r", P::Starcoder, false, false, false},
      {"smollm", P::Starcoder, false, false, false},
      {"codeshell", P::Starcoder, false, false, true},
      {"exaone", P::Starcoder, false, false, true},
      {"minerva-7b", P::Starcoder, false, false, true},
      {"qwen2", P::Qwen2, false, false, false},
      {"deepseek-r1-qwen", P::Qwen2, false, false, false},
      {"hunyuan", P::Qwen2, false, false, false},
      {"stablelm2", P::Qwen2, false, false, true},
      {"megrez", P::Qwen2, false, false, true},
      {"poro-chat", P::Bloom, false, false, false},
      {"bloom", P::Bloom, false, false, true},
      {"gpt3-finnish", P::Bloom, false, false, true},
      {"viking", P::Viking, false, false, false},
  };
  for (const Entry& e : kTable) {
    if (name == e.name) {
      c = PreConfig{e.kind, e.ignore_merges, e.add_bos, e.clean_spaces};
      return true;
    }
  }
  return false;
}

}  // namespace folio
