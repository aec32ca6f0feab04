// Head allocators: how many of a layer's selectable budget Hk·b each KV head keeps, and which tokens.
#pragma once
#include <cstdint>
#include <vector>

namespace folio::kv {

// uniform (SnapKV): every head keeps b.
std::vector<int32_t> uniform_caps(int n_heads, int32_t b);

// ada (Ada-KV): the global top Hk·b of the layer's scores decides c_h, how many each head won; then
// cap_h = floor(alpha·b) + a share of the rest Hk·(b − floor(alpha·b)) proportional to c_h, rounded by
// largest remainder so that Σ cap_h = Hk·b exactly (the paper's (1 − alpha)·c_h + floor(alpha·b), with
// the rounding the official code leaves under budget made exact). alpha = 1 gives uniform, alpha = 0
// gives c_h. scores: [n_heads][n_h] with n_h = L_h − w selectable tokens per head (the rows may differ in
// length while a document is read in chunks; a head never gets more than its n_h), Σ n_h >= n_heads·b.
std::vector<int32_t> ada_caps(const std::vector<std::vector<float>>& scores, int32_t b, double alpha);
// Its two steps: the global top k of scores [n_heads][n_h] counted per head (ties to the lower token index,
// then the lower head), and the caps from those counts (won: [n_heads], Σ won = n_heads·b; n: the
// selectable tokens of every head, or of each; a GPU can count them on the device).
std::vector<int32_t> global_topk_counts(const std::vector<std::vector<float>>& scores, int64_t k);
std::vector<int32_t> ada_caps_from_won(const std::vector<int32_t>& won, int64_t n, int32_t b, double alpha);
std::vector<int32_t> ada_caps_from_won(const std::vector<int32_t>& won, const std::vector<int64_t>& n, int32_t b,
                                       double alpha);

// The `cap` best tokens of one head by score, ties to the lower index, returned in ascending order.
std::vector<int32_t> top_tokens(const std::vector<float>& scores, int32_t cap);

// A conversation's compressed turns (docs/compression.md, "The conversation"): what each head keeps of a layer
// whose heads compete for k slots by score (Ada's global top k over scores [n_heads][n_h]), no head more than
// `cap` (the positions the kept entries get; a full head's slots go to the next best of the others) and at
// least one of each head that has any when k > 0. Per head its kept entries, ascending.
std::vector<std::vector<int32_t>> capped_top(const std::vector<std::vector<float>>& scores, int64_t k, int32_t cap);

// One budget over a set of documents (docs/compression.md, "One budget over the set"): of the candidates'
// scores [layer][head][n] (the entries a read scored, of every document of the set), keep about ratio of them,
// chosen as a read chooses: with across_layers (the global schedule) the layers' shares come from the global
// top k over every layer's heads, else each layer keeps its own share; within a layer Ada's caps (alpha its
// floor) divide the share among the heads, and each head keeps its cap best. Documents compete as the entries
// of one head do: by score alone. Per layer and head the kept indices into the row, ascending.
std::vector<std::vector<std::vector<int32_t>>> keep_over_set(const std::vector<std::vector<std::vector<float>>>& rows,
                                                             double ratio, double alpha, bool across_layers);

}  // namespace folio::kv
