// Byte-level BPE ("gpt2" vocabularies): pre-tokenize into words, write each word's bytes as GPT-2 characters,
// then apply merges by rank (lowest first, leftmost among equals) within the word.
#include <algorithm>

#include "tokenizer/pretokenize.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace folio {
namespace {

struct Symbol {
  int32_t id;           // token or merged-text id; -1 for a character that is no token (it never merges)
  uint32_t start, len;  // in bytes of the word; len 0 once merged into the symbol on its left
  int32_t prev, next;
};

struct Bigram {
  int32_t rank;
  int32_t left, right;
  uint32_t len;
};

// Lowest rank first; among equal ranks the leftmost pair.
struct Later {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

void Vocab::tokenize_bpe(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<uint32_t> cps;
  std::vector<size_t> ends;
  pre_tokenize(pre_cfg_.kind, text, cps, ends);

  std::string raw;
  std::vector<Symbol> sym;
  std::vector<Bigram> heap;  // a max-heap under Later: its front is the next merge
  const int32_t n = n_tokens();
  size_t begin = 0;
  for (size_t end : ends) {
    // The word as UTF-8 (invalid input was decoded to U+FFFD and is re-encoded as such, like llama.cpp).
    raw.clear();
    for (size_t i = begin; i < end; i++) unicode::append_utf8(raw, cps[i]);
    begin = end;

    if (pre_cfg_.ignore_merges) {
      std::string enc;
      for (char c : raw) enc += unicode::byte_to_char(uint8_t(c));
      const int32_t id = find_token(enc);
      if (id >= 0) {
        out.push_back(id);
        continue;
      }
    }

    // One symbol per byte (= one GPT-2 character).
    sym.clear();
    for (size_t i = 0; i < raw.size(); i++) {
      const int32_t k = int32_t(i);
      sym.push_back({byte_char_token_[uint8_t(raw[i])], uint32_t(i), 1, k - 1, i + 1 == raw.size() ? -1 : k + 1});
    }
    heap.clear();
    auto try_pair = [&](int32_t l, int32_t r) {
      if (l < 0 || r < 0) return;
      const int32_t a = sym[size_t(l)].id, b = sym[size_t(r)].id;
      if (a < 0 || b < 0 || a >= n || b >= n) return;
      auto it = merges_.find(uint64_t(uint32_t(a)) << 32 | uint32_t(b));
      if (it == merges_.end()) return;
      heap.push_back({it->second.rank, l, r, sym[size_t(l)].len + sym[size_t(r)].len});
      std::push_heap(heap.begin(), heap.end(), Later());
    };
    for (int32_t i = 1; i < int32_t(sym.size()); i++) try_pair(i - 1, i);

    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), Later());
      const Bigram bg = heap.back();
      heap.pop_back();
      Symbol& l = sym[size_t(bg.left)];
      Symbol& r = sym[size_t(bg.right)];
      if (l.len == 0 || r.len == 0 || l.len + r.len != bg.len) continue;  // stale
      l.id = merges_.at(uint64_t(uint32_t(l.id)) << 32 | uint32_t(r.id)).result;
      l.len += r.len;
      r.len = 0;
      l.next = r.next;
      if (r.next >= 0) sym[size_t(r.next)].prev = bg.left;
      try_pair(l.prev, bg.left);
      try_pair(bg.left, l.next);
    }

    for (int32_t i = sym.empty() ? -1 : 0; i != -1; i = sym[size_t(i)].next) {
      const Symbol& s = sym[size_t(i)];
      if (s.id >= 0 && s.id < n) {
        out.push_back(s.id);
        continue;
      }
      // A merged text or character that is no token: llama.cpp looks up each byte of its GPT-2 spelling as a
      // one-byte token, and drops the bytes that are none.
      std::string enc;
      for (uint32_t k = s.start; k < s.start + s.len; k++) enc += unicode::byte_to_char(uint8_t(raw[k]));
      const int32_t whole = find_token(enc);
      if (whole >= 0) {
        out.push_back(whole);
        continue;
      }
      for (char c : enc) {
        const int32_t id = find_token(std::string_view(&c, 1));
        if (id >= 0) out.push_back(id);
      }
    }
  }
}

}  // namespace folio
