#include "model/weights.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "core/error.h"
#include "quant/quant.h"
#include "quant/repack.h"

namespace folio {

namespace {

struct Binder {
  const gguf::File& file;
  ModelWeights& mw;
  std::map<TensorType, int> counts;

  std::string shape_str(const gguf::TensorInfo& t) const {
    std::string s = "[";
    for (uint32_t d = 0; d < t.n_dims; d++) s += (d ? ", " : "") + std::to_string(t.ne[d]);
    return s + "]";
  }

  // Binds tensor `name` of shape [cols] (rows == 0) or [cols, rows]; optional tensors may be absent.
  Weight get(const std::string& name, int64_t cols, int64_t rows, bool required = true, bool f32_only = false) {
    const gguf::TensorInfo* t = file.find_tensor(name);
    if (!t) {
      if (required) fail("MODEL_MISSING_TENSOR", file.path() + ": the model has no tensor '" + name + "'");
      return Weight{};
    }
    const bool is_vec = rows == 0;
    const bool ok = is_vec ? (t->ne[0] == cols && t->n_elements == cols)
                           : (t->ne[0] == cols && t->ne[1] == rows && t->n_elements == cols * rows);
    if (!ok)
      fail("MODEL_BAD_TENSOR",
           strfmt("%s: tensor '%s' has shape %s, expected [%lld%s]", file.path().c_str(), name.c_str(),
                  shape_str(*t).c_str(), (long long)cols, is_vec ? "" : (", " + std::to_string(rows)).c_str()));
    return bind(name, *t, f32_only);
  }

  // Binds tensor `name` of shape [cols, rows, n]: n matrices of [cols, rows], as one of n·rows rows.
  Weight get3(const std::string& name, int64_t cols, int64_t rows, int64_t n) {
    const gguf::TensorInfo* t = file.find_tensor(name);
    if (!t) fail("MODEL_MISSING_TENSOR", file.path() + ": the model has no tensor '" + name + "'");
    if (!(t->n_dims == 3 && t->ne[0] == cols && t->ne[1] == rows && t->ne[2] == n))
      fail("MODEL_BAD_TENSOR",
           strfmt("%s: tensor '%s' has shape %s, expected [%lld, %lld, %lld]", file.path().c_str(), name.c_str(),
                  shape_str(*t).c_str(), (long long)cols, (long long)rows, (long long)n));
    Weight w = bind(name, *t, false);
    w.rows = rows * n;
    return w;
  }

  // A tensor whose shape has been checked: its type, then the Weight (rows: ne[1], 1 for a vector).
  Weight bind(const std::string& name, const gguf::TensorInfo& tensor, bool f32_only) {
    const gguf::TensorInfo* t = &tensor;
    const bool is_vec = t->n_dims == 1;
    const TypeInfo& ti = type_info(t->type);
    if (!quant::weight_type_supported(t->type) || (f32_only && t->type != TensorType::F32))
      fail("UNSUPPORTED_TYPE",
           strfmt("%s: tensor '%s' has type %s, which Folio does not support%s", file.path().c_str(), name.c_str(),
                  ti.name, f32_only ? " here (F32 expected)" : ""));
    counts[t->type]++;
    mw.total_bytes += t->n_bytes;
    Weight w;
    w.data = t->data;
    w.type = t->type;
    w.cols = t->ne[0];
    w.rows = is_vec ? 1 : t->ne[1];
    w.row_bytes = row_bytes(t->type, t->ne[0]);
    return w;
  }
};

// Rows [r0, r0 + n) of a matrix, as a matrix of its own: one part of a fused tensor. The parts are
// multiplied (and repacked, and uploaded) apart, which costs nothing over the fused product.
Weight rows_of(const Weight& w, int64_t r0, int64_t n) {
  if (w.parts) {  // split on a device (forward/weights.cc): the part that holds the rows
    for (const WeightPart& p : *w.parts)
      if (r0 >= p.row0 && r0 + n <= p.row0 + p.rows) return rows_of(w.part(p), r0 - p.row0, n);
    fail("INTERNAL", "rows that straddle two parts of a split weight");
  }
  Weight v = w;
  v.data = w.data + size_t(r0) * w.row_bytes;
  v.rows = n;
  return v;
}

}  // namespace

Weight expert_rows(const Weight& stacked, int e, int64_t rows) { return rows_of(stacked, int64_t(e) * rows, rows); }

const Weight& rope_factors(const ModelWeights& w, const HParams& hp, int32_t n_ctx) {
  if (w.rope_freqs) return w.rope_freqs;
  return n_ctx > hp.n_ctx_orig ? w.rope_long : w.rope_short;
}

ModelWeights bind_weights(const gguf::File& file, HParams& hp) {
  ModelWeights mw;
  Binder b{file, mw, {}};
  const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight");
  if (!embd) fail("MODEL_MISSING_TENSOR", file.path() + ": the model has no tensor 'token_embd.weight'");
  if (embd->n_dims != 2 || embd->ne[1] <= 0 || embd->ne[1] > (int64_t(1) << 31))
    fail("MODEL_BAD_TENSOR", file.path() + ": token_embd.weight must be a 2-D [n_embd, n_vocab] tensor");
  hp.n_vocab = int32_t(embd->ne[1]);

  const int64_t E = hp.n_embd;
  mw.tok_embd = b.get("token_embd.weight", E, hp.n_vocab);
  mw.output_norm = b.get("output_norm.weight", E, 0, true, true);
  mw.output = b.get("output.weight", E, hp.n_vocab, false);
  if (!mw.output) mw.output = mw.tok_embd;  // tied embeddings
  mw.rope_freqs = b.get("rope_freqs.weight", hp.rope_dim / 2, 0, false, true);
  mw.rope_long = b.get("rope_factors_long.weight", hp.rope_dim / 2, 0, false, true);
  mw.rope_short = b.get("rope_factors_short.weight", hp.rope_dim / 2, 0, false, true);
  if (bool(mw.rope_long) != bool(mw.rope_short))
    fail("MODEL_MISSING_TENSOR", file.path() + ": the model has one of rope_factors_long and rope_factors_short only");

  mw.layers.resize(size_t(hp.n_layer));
  for (int l = 0; l < hp.n_layer; l++) {
    LayerWeights& L = mw.layers[size_t(l)];
    const std::string p = "blk." + std::to_string(l) + ".";
    L.attn_norm = b.get(p + "attn_norm.weight", E, 0, true, true);
    if (hp.arch == Arch::Phi3) {  // one matrix: the Q, K and V rows one after the other
      const Weight qkv = b.get(p + "attn_qkv.weight", E, hp.q_width() + hp.k_width() + hp.v_width());
      L.wq = rows_of(qkv, 0, hp.q_width());
      L.wk = rows_of(qkv, hp.q_width(), hp.k_width());
      L.wv = rows_of(qkv, hp.q_width() + hp.k_width(), hp.v_width());
    } else {
      L.wq = b.get(p + "attn_q.weight", E, hp.q_width());
      L.wk = b.get(p + "attn_k.weight", E, hp.k_width());
      L.wv = b.get(p + "attn_v.weight", E, hp.v_width());
    }
    L.wo = b.get(p + "attn_output.weight", int64_t(hp.n_head) * hp.head_dim_v, E);
    if (hp.has_qkv_bias) {
      L.bq = b.get(p + "attn_q.bias", hp.q_width(), 0, true, true);
      L.bk = b.get(p + "attn_k.bias", hp.k_width(), 0, true, true);
      L.bv = b.get(p + "attn_v.bias", hp.v_width(), 0, true, true);
    }
    if (hp.has_qk_norm) {
      L.q_norm = b.get(p + "attn_q_norm.weight", hp.head_dim, 0, true, true);
      L.k_norm = b.get(p + "attn_k_norm.weight", hp.head_dim, 0, true, true);
    }
    L.ffn_norm = b.get(p + "ffn_norm.weight", E, 0, true, true);
    if (hp.n_expert > 0) {  // qwen3moe: the router and the stacked experts
      L.ffn_gate_inp = b.get(p + "ffn_gate_inp.weight", E, hp.n_expert);
      L.gate_exps = b.get3(p + "ffn_gate_exps.weight", E, hp.n_ff_exp, hp.n_expert);
      L.up_exps = b.get3(p + "ffn_up_exps.weight", E, hp.n_ff_exp, hp.n_expert);
      L.down_exps = b.get3(p + "ffn_down_exps.weight", hp.n_ff_exp, E, hp.n_expert);
      continue;
    }
    if (hp.arch == Arch::Phi3) {  // one matrix: the gate's rows, then the up projection's (HF's chunk(2))
      const Weight gate_up = b.get(p + "ffn_up.weight", E, 2 * int64_t(hp.n_ff));
      L.w_gate = rows_of(gate_up, 0, hp.n_ff);
      L.w_up = rows_of(gate_up, hp.n_ff, hp.n_ff);
    } else {
      L.w_gate = b.get(p + "ffn_gate.weight", E, hp.n_ff);
      L.w_up = b.get(p + "ffn_up.weight", E, hp.n_ff);
    }
    L.w_down = b.get(p + "ffn_down.weight", hp.n_ff, E);
    if (hp.has_post_norms) {
      L.attn_post_norm = b.get(p + "post_attention_norm.weight", E, 0, true, true);
      L.ffn_post_norm = b.get(p + "post_ffw_norm.weight", E, 0, true, true);
    }
  }
  for (auto& [t, n] : b.counts) mw.type_counts.emplace_back(t, n);
  return mw;
}

namespace {

// Whether w gets a copy of its own: in a layout of isa's kernels, or (as_is) as it is in huge pages,
// which the matrix-vector products stream through faster than the file's 4 KiB pages
// (docs/benchmarks-log.md, "Huge pages for every matrix").
bool copied(const Weight& w, quant::Isa isa, bool as_is) {
  return w && (quant::cpu_layout(w.type, w.rows, isa) != w.type || as_is);
}

// w copied into a new buffer of storage, in the CPU layout of isa, where `copied` says so. The file's
// pages are then released: no matrix product reads them again (with tied embeddings the lookup brings
// back the few rows it reads).
Weight repack_weight(const Weight& w, const gguf::File& file, quant::Isa isa, bool as_is, ThreadPool& pool,
                     std::vector<LargeBuffer>& storage) {
  if (!copied(w, isa, as_is)) return w;
  const TensorType to = quant::cpu_layout(w.type, w.rows, isa);
  Weight out = w;
  out.type = to;
  out.row_bytes = row_bytes(to, w.cols);
  storage.emplace_back(out.row_bytes * size_t(w.rows), LargeBuffer::Pages::Huge);
  uint8_t* dst = storage.back().data();
  // A few MiB at a time, each released once copied, so that the file's pages and the copy of a large
  // matrix are never resident together.
  const int64_t group = quant::row_group(to), groups = w.rows / group;
  const size_t group_bytes = w.row_bytes * size_t(group);
  const int64_t chunk = std::max<int64_t>(1, int64_t((8u << 20) / group_bytes));
  for (int64_t c0 = 0; c0 < groups; c0 += chunk) {
    const int64_t c1 = std::min(groups, c0 + chunk);
    pool.parallel_for(
        c1 - c0,
        [&](int64_t i, int) {
          const int64_t g = c0 + i;
          if (to == w.type) std::memcpy(dst + size_t(g) * group_bytes, w.data + size_t(g) * group_bytes, group_bytes);
          else quant::repack_groups(w.type, to, w.data, w.row_bytes, w.cols, g, g + 1, dst);
        },
        8);
    file.mapping().release(w.data + size_t(c0) * group_bytes, size_t(c1 - c0) * group_bytes);
  }
  out.data = dst;
  return out;
}

}  // namespace

ModelWeights repack_for_cpu(const ModelWeights& mw, const gguf::File& file, quant::Isa isa, ThreadPool& pool,
                            std::vector<LargeBuffer>& storage, uint64_t copy_limit) {
  ModelWeights out = mw;
  std::vector<Weight*> matrices;  // what the matrix products read
  for (LayerWeights& L : out.layers)
    for (Weight* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down, &L.ffn_gate_inp})
      if (*w) matrices.push_back(w);  // not the experts: they stay in the file, read when routed
  matrices.push_back(&out.output);
  // The copies are memory the OS cannot reclaim, where the file's pages can be dropped and read again:
  // on a machine that can barely hold the model, the file's pages it is. The matrices that need no
  // repacking are copied only where huge pages make them faster, and give way first.
  const auto copy_bytes = [&](bool as_is) {
    uint64_t n = 0;
    for (const Weight* w : matrices)
      if (copied(*w, isa, as_is)) n += w->row_bytes * uint64_t(w->rows);
    return n;
  };
  bool as_is = LargeBuffer::huge_pages_available();
  if (as_is && copy_bytes(true) > copy_limit) as_is = false;
  if (copy_bytes(as_is) > copy_limit) return out;
  for (Weight* w : matrices) *w = repack_weight(*w, file, isa, as_is, pool, storage);
  return out;
}

}  // namespace folio
