// SentencePiece-style BPE ("llama" vocabularies): start from single characters and keep merging the adjacent
// pair whose concatenation is the highest-scoring token; what does not end up a token falls back to byte tokens.
#include <algorithm>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace folio {
namespace {

struct Symbol {
  size_t start, len;  // bytes of the text; len 0 once merged into the symbol on its left
  int32_t prev, next;
};

struct Bigram {
  float score;
  int32_t left, right;
  size_t len;  // combined length when queued: a pair whose symbols changed since is stale
};

// Highest score first; among equal scores the leftmost pair.
struct Lower {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

void Vocab::tokenize_spm(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::vector<Symbol> sym;
  sym.reserve(text.size());
  // Characters by their lead byte, without validation (a broken sequence is one symbol), as llama.cpp does.
  for (size_t off = 0; off < text.size();) {
    const size_t len = std::min(unicode::utf8_len(uint8_t(text[off])), text.size() - off);
    const int32_t i = int32_t(sym.size());
    sym.push_back({off, len, i - 1, off + len == text.size() ? -1 : i + 1});
    off += len;
  }

  std::vector<Bigram> heap;  // a max-heap under Lower: its front is the next merge
  auto try_pair = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const size_t len = sym[size_t(l)].len + sym[size_t(r)].len;
    const int32_t id = find_token(text.substr(sym[size_t(l)].start, len));
    if (id < 0) return;
    heap.push_back({tokens_[size_t(id)].score, l, r, len});
    std::push_heap(heap.begin(), heap.end(), Lower());
  };
  for (int32_t i = 1; i < int32_t(sym.size()); i++) try_pair(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), Lower());
    const Bigram bg = heap.back();
    heap.pop_back();
    Symbol& l = sym[size_t(bg.left)];
    Symbol& r = sym[size_t(bg.right)];
    if (l.len == 0 || r.len == 0 || l.len + r.len != bg.len) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) sym[size_t(r.next)].prev = bg.left;
    try_pair(l.prev, bg.left);
    try_pair(bg.left, l.next);
  }

  for (int32_t i = 0; i != -1; i = sym[size_t(i)].next) {
    const Symbol& s = sym[size_t(i)];
    const std::string_view piece = text.substr(s.start, s.len);
    const int32_t id = find_token(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    // Merges only ever form tokens, so this is a single character the vocabulary lacks: spell it in bytes.
    for (char c : piece) {
      const int32_t b = byte_token(uint8_t(c));
      if (b >= 0) out.push_back(b);
      else if (unk_ >= 0) out.push_back(unk_);  // no byte token either (llama.cpp would throw here)
    }
  }
}

}  // namespace folio
