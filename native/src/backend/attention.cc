// Attention over the flat variable-length KV cache: one sequence per KV head with its G query heads.
//
// The fast path works like flash attention: for a tile of queries of one KV head (all G query heads of
// each), it walks the keys in blocks of kKeyBlock, computes the block's scores as a small matrix product
// (queries × transposed keys, vectorised over the keys), keeps a running max and sum per query (online
// softmax) and accumulates the values as a second small product (probabilities × values); no score matrix
// over the whole sequence ever exists. Both products run four query rows at a time with their sums in
// registers, so that each key and value loaded serves four rows (2.3× the speed of one row at a time on
// prefill: docs/benchmarks-log.md). The loops are
// written so the compiler vectorises them without reassociating sums it must not (every inner loop runs
// over independent outputs), and on x86-64 Linux they are compiled for AVX-512 and AVX2 as well, picked at
// load time.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cpu-ops.h"
#include "backend/sliding-window.h"
#include "backend/vector-math.h"
#include "kv/hadamard.h"
#include "quant/quant.h"

namespace folio::cpu {

namespace {

constexpr int kKeyBlock = 64;  // keys per block
// Query rows (queries × G heads) per work item: each key block is read, converted and transposed once per
// tile, so larger tiles do that less often (128 rows: 7% faster than 64 on prefill; 256 no faster again,
// and its larger buffers raised a read's peak RSS by 60 MiB: docs/benchmarks-log.md).
constexpr int kTileRows = 128;
constexpr int kTransposeRows = 16;  // from this many rows on, transposing the key block pays off

struct TileBuffers {
  float* q;          // [rows, D]     the tile's queries, contiguous
  float* kraw;       // [kKeyBlock, D] a block of keys as floats
  float* kt;         // [D, kKeyBlock] the same, transposed
  float* v;          // [kKeyBlock, Dv]
  float* s;          // [rows, kKeyBlock] scores, then probabilities
  float* o;          // [rows, Dv]    accumulated outputs
  float* mx;         // [rows]        running max of each row's scores
  float* sum;        // [rows]        running sum of each row's exp-scores
  float* carry;      // [rows]        what each row's output is scaled by before a block is added
  int32_t* first;    // [rows]        the first key each row may see (the sliding window's oldest)
  int32_t* visible;  // [rows]        keys [first, visible) are the row's
  uint8_t* q8;       // [kTransposeRows, D/32 blocks of Q8_0] a few rows' queries in 8 bits (quantized keys)
};

// Bytes of one query row in Q8_0 (D a multiple of 32).
size_t q8_row_bytes(int D) { return size_t(D / 32) * 34; }

size_t tile_floats(int D, int Dv) {
  return size_t(kTileRows) * size_t(D) + size_t(kKeyBlock) * size_t(2 * D + Dv) +
         size_t(kTileRows) * (size_t(kKeyBlock) + size_t(Dv) + 5) + (kTransposeRows * q8_row_bytes(D) + 3) / 4;
}

TileBuffers carve(float* base, int D, int Dv) {
  TileBuffers b;
  b.q = base;
  b.kraw = b.q + size_t(kTileRows) * size_t(D);
  b.kt = b.kraw + size_t(kKeyBlock) * size_t(D);
  b.v = b.kt + size_t(kKeyBlock) * size_t(D);
  b.s = b.v + size_t(kKeyBlock) * size_t(Dv);
  b.o = b.s + size_t(kTileRows) * size_t(kKeyBlock);
  b.mx = b.o + size_t(kTileRows) * size_t(Dv);
  b.sum = b.mx + kTileRows;
  b.carry = b.sum + kTileRows;
  b.first = reinterpret_cast<int32_t*>(b.carry + kTileRows);
  b.visible = b.first + kTileRows;
  b.q8 = reinterpret_cast<uint8_t*>(b.visible + kTileRows);
  return b;
}

// Scores of a key block for many rows: s[r][j] = Σ_d q[r][d] · kt[d][j], vectorised over the keys. Four
// rows and half a block of keys at a time (4 × 32 sums, held in registers), so that each loaded piece of
// a key serves four rows; the rows left over go one by one.
FOLIO_VECTOR_CLONES
void block_scores_transposed(const TileBuffers& b, int rows, int D) {
  constexpr int RB = 4, JB = kKeyBlock / 2;
  int r0 = 0;
  for (; r0 + RB <= rows; r0 += RB)
    for (int j0 = 0; j0 < kKeyBlock; j0 += JB) {
      float acc[RB][JB] = {};
      const float* q0 = b.q + size_t(r0) * size_t(D);
      for (int d = 0; d < D; d++) {
        const float* kd = b.kt + size_t(d) * kKeyBlock + j0;
        for (int rr = 0; rr < RB; rr++) {
          const float qd = q0[size_t(rr) * size_t(D) + size_t(d)];
          for (int j = 0; j < JB; j++) acc[rr][j] += qd * kd[j];
        }
      }
      for (int rr = 0; rr < RB; rr++) std::memcpy(b.s + size_t(r0 + rr) * kKeyBlock + j0, acc[rr], sizeof acc[rr]);
    }
  for (; r0 < rows; r0++) {
    float acc[kKeyBlock] = {};
    const float* qr = b.q + size_t(r0) * size_t(D);
    for (int d = 0; d < D; d++) {
      const float qd = qr[d];
      const float* kd = b.kt + size_t(d) * kKeyBlock;
      for (int j = 0; j < kKeyBlock; j++) acc[j] += qd * kd[j];
    }
    std::memcpy(b.s + size_t(r0) * kKeyBlock, acc, sizeof acc);
  }
}

// The same for a few rows (decode): one dot product per (row, key), no transpose.
void block_scores_dot(const TileBuffers& b, int rows, int D, int nb, const quant::Kernels& f32) {
  for (int r = 0; r < rows; r++) {
    const float* qr = b.q + size_t(r) * size_t(D);
    float* sr = b.s + size_t(r) * kKeyBlock;
    for (int j = 0; j < nb; j++) sr[j] = f32.vec_dot(D, b.kraw + size_t(j) * size_t(D), qr);
  }
}

// The same over quantized keys as stored (Q8_0 or Q4_0 blocks, keb bytes an entry): each score an integer dot
// product of the key's blocks with the row's query in Q8_0, as the matrix products do with their activations.
void block_scores_quantized(const TileBuffers& b, int rows, int D, int nb, const uint8_t* keys, size_t keb,
                            const quant::Kernels& kdot) {
  for (int r = 0; r < rows; r++) {
    const uint8_t* qr = b.q8 + size_t(r) * q8_row_bytes(D);
    float* sr = b.s + size_t(r) * kKeyBlock;
    for (int j = 0; j < nb; j++) sr[j] = kdot.vec_dot(D, keys + size_t(j) * keb, qr);
  }
}

// block_accumulate for one row's output values [d0, Dv).
inline void accumulate_row(const TileBuffers& b, int r, int Dv, int nb, int d0) {
  float* o = b.o + size_t(r) * size_t(Dv);
  const float* p = b.s + size_t(r) * kKeyBlock;
  for (int d = d0; d < Dv; d++) o[d] *= b.carry[r];
  for (int j = 0; j < nb; j++) {
    const float* vj = b.v + size_t(j) * size_t(Dv);
    for (int d = d0; d < Dv; d++) o[d] += p[j] * vj[d];
  }
}

// Partial results per lane, for reductions over a block's keys: a float reduction written as one running
// value is not vectorised (the compiler may not reorder its additions), and as a chain of dependent scalar
// operations it cost more than the scores' product itself.
constexpr int kLanes = 16;
static_assert(kKeyBlock % kLanes == 0);

// part[0] op part[1] op ... by halves (a tree, not a chain of dependent operations); part is overwritten.
template <typename Op>
inline float fold_lanes(float* part, Op op) {
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; l++) part[l] = op(part[l], part[l + w]);
  return part[0];
}

// The online-softmax update of each row with the block's scores (masked to what the row may see): the
// scores become the block's probabilities in place, and carry[r] is the factor the row's earlier output
// shrinks by. A row that sees none of the block gets zero probabilities and a carry of 1. The block's max
// and sum are taken over kLanes partial results, then folded.
FOLIO_VECTOR_CLONES
void block_softmax(const TileBuffers& b, int rows, int nb, int32_t j0, float scale) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int r = 0; r < rows; r++) {
    float* sr = b.s + size_t(r) * kKeyBlock;
    const int lim = std::min(nb, b.visible[r] - j0);  // keys [lo, lim) of this block the row may see
    const int lo = std::max(0, b.first[r] - j0);
    if (lim <= lo) {
      std::fill(sr, sr + kKeyBlock, 0.0f);
      b.carry[r] = 1.0f;
      continue;
    }
    float part[kLanes];
    std::fill(part, part + kLanes, kNegInf);
    for (int j = 0; j < kKeyBlock; j += kLanes)
      for (int l = 0; l < kLanes; l++) {
        const float v = j + l >= lo && j + l < lim ? sr[j + l] * scale : kNegInf;
        sr[j + l] = v;
        part[l] = std::max(part[l], v);
      }
    const float new_max = std::max(b.mx[r], fold_lanes(part, [](float x, float y) { return std::max(x, y); }));
    b.carry[r] = std::exp(b.mx[r] - new_max);
    b.mx[r] = new_max;
    for (int j = 0; j < kKeyBlock; j++) sr[j] -= new_max;
    exp_below_zero(sr, kKeyBlock);
    std::fill(part, part + kLanes, 0.0f);
    for (int j = 0; j < kKeyBlock; j += kLanes)
      for (int l = 0; l < kLanes; l++) part[l] += sr[j + l];
    b.sum[r] = b.sum[r] * b.carry[r] + fold_lanes(part, [](float x, float y) { return x + y; });
  }
}

// o[r] = carry[r] · o[r] + Σ_j p[r][j] · v[j] for the block's nb values: the small matrix product
// P [rows, nb] × V [nb, Dv], four rows × 32 output values at a time (128 sums held in registers while the
// values stream past). Each sum adds its terms in the order of the keys, as a row-by-row loop would.
FOLIO_VECTOR_CLONES
void block_accumulate(const TileBuffers& b, int rows, int Dv, int nb) {
  constexpr int RB = 4, DB = 32;
  int r0 = 0;
  for (; r0 + RB <= rows; r0 += RB) {
    int d0 = 0;
    for (; d0 + DB <= Dv; d0 += DB) {
      float acc[RB][DB];
      for (int rr = 0; rr < RB; rr++) {
        const float* o = b.o + size_t(r0 + rr) * size_t(Dv) + d0;
        for (int d = 0; d < DB; d++) acc[rr][d] = o[d] * b.carry[r0 + rr];
      }
      for (int j = 0; j < nb; j++) {
        const float* vj = b.v + size_t(j) * size_t(Dv) + d0;
        for (int rr = 0; rr < RB; rr++) {
          const float p = b.s[size_t(r0 + rr) * kKeyBlock + size_t(j)];
          for (int d = 0; d < DB; d++) acc[rr][d] += p * vj[d];
        }
      }
      for (int rr = 0; rr < RB; rr++) std::memcpy(b.o + size_t(r0 + rr) * size_t(Dv) + d0, acc[rr], sizeof acc[rr]);
    }
    for (int rr = 0; rr < RB; rr++) accumulate_row(b, r0 + rr, Dv, nb, d0);
  }
  for (; r0 < rows; r0++) accumulate_row(b, r0, Dv, nb, 0);
}

void transpose_block(const float* __restrict src, float* __restrict dst, int nb, int D) {
  for (int j = 0; j < kKeyBlock; j++)
    for (int d = 0; d < D; d++)
      dst[size_t(d) * kKeyBlock + size_t(j)] = j < nb ? src[size_t(j) * size_t(D) + size_t(d)] : 0.0f;
}

}  // namespace

void attention(ThreadPool& pool, Scratch& s, const float* q, const FlatKvCache& cache, int l, int64_t m, int n_head,
               int32_t n_swa, float* out, const std::atomic<bool>* stop) {
  const int H = n_head, Hk = cache.n_head_kv(), G = H / Hk, D = cache.head_dim(), Dv = cache.head_dim_v();
  const int64_t qw = int64_t(H) * D, ow = int64_t(H) * Dv;
  const float scale = 1.0f / std::sqrt(float(D));
  // A tile holds whole queries (all G heads of each): as many as fit in kTileRows rows.
  const int64_t tile_q = std::max<int64_t>(1, kTileRows / G);
  const int64_t tiles = (m + tile_q - 1) / tile_q;
  const size_t per_thread = tile_floats(D, Dv);
  s.reserve(pool.size(), per_thread);
  const quant::Kernels& f32 = quant::kernels(TensorType::F32);
  // Rotated entries (kv/hadamard.h) are read as stored: the queries are rotated instead, and the outputs back.
  const bool rotate_k = cache.format().rotate_k(), rotate_v = cache.format().rotate_v();
  // Decoding over quantized keys of whole blocks, the scores are integer dot products with the query in Q8_0
  // (llama.cpp's q8_0 cache does the same): the keys are read once, as bytes, never made floats.
  const KvType key_type = cache.format().k;
  const quant::Kernels* kdot =
      kv_type_quantized(key_type) && D % 32 == 0 ? &quant::kernels(TensorType(int(key_type))) : nullptr;
  const quant::Kernels& q8 = quant::kernels(TensorType::Q8_0);
  const size_t keb = cache.k_entry_bytes();

  pool.parallel_for(int64_t(Hk) * tiles, [&](int64_t item, int thread) {
    if (stop && stop->load(std::memory_order_relaxed)) return;  // cancelled: the output is thrown away
    const int g = int(item / tiles);
    const int64_t t0 = (item % tiles) * tile_q, t1 = std::min(m, t0 + tile_q);
    const int32_t before = cache.len(l, g) - int32_t(m);  // entries older than this call's tokens
    const int32_t* kpos = cache.layer(l).positions(g);    // [len] ascending
    TileBuffers b = carve(s.thread_buffer(thread), D, Dv);
    // Rows in order (query, head): the tile's queries and how far each may look.
    const int rows = int((t1 - t0) * G);
    for (int64_t t = t0; t < t1; t++)
      for (int hh = 0; hh < G; hh++) {
        const int r = int((t - t0) * G + hh);
        std::memcpy(b.q + size_t(r) * size_t(D), q + t * qw + int64_t(g * G + hh) * D, size_t(D) * sizeof(float));
        b.visible[r] = before + int32_t(t) + 1;
        b.first[r] = backend::first_in_window(kpos, b.visible[r], kpos[b.visible[r] - 1], n_swa);
      }
    if (rotate_k) kv::hadamard(b.q, D, rows);
    const bool int_scores = kdot && rows < kTransposeRows;
    if (int_scores)
      for (int r = 0; r < rows; r++)
        q8.quantize_row(b.q + size_t(r) * size_t(D), b.q8 + size_t(r) * q8_row_bytes(D), D);
    const LayerKv& L = cache.layer(l);
    std::fill(b.mx, b.mx + rows, -std::numeric_limits<float>::infinity());
    std::fill(b.sum, b.sum + rows, 0.0f);
    std::fill(b.o, b.o + size_t(rows) * size_t(Dv), 0.0f);

    const int32_t n_keys = before + int32_t(t1);  // the tile's last query sees this many
    // The tile's first row sees the oldest keys (a later query's window starts no earlier); blocks before it
    // are skipped, the blocks aligned to it.
    const int32_t k_first = b.first[0] / kKeyBlock * kKeyBlock;
    for (int32_t j0 = k_first; j0 < n_keys; j0 += kKeyBlock) {
      const int nb = std::min<int32_t>(kKeyBlock, n_keys - j0);
      cache.read_v_stored(l, g, j0, nb, b.v);
      if (int_scores) {
        block_scores_quantized(b, rows, D, nb, L.k.data() + size_t(L.heads[size_t(g)].offset + j0) * keb, keb, *kdot);
      } else if (rows >= kTransposeRows) {
        cache.read_k_stored(l, g, j0, nb, b.kraw);
        transpose_block(b.kraw, b.kt, nb, D);
        block_scores_transposed(b, rows, D);
      } else {
        cache.read_k_stored(l, g, j0, nb, b.kraw);
        block_scores_dot(b, rows, D, nb, f32);
      }
      block_softmax(b, rows, nb, j0, scale);
      block_accumulate(b, rows, Dv, nb);
    }
    for (int64_t t = t0; t < t1; t++)
      for (int hh = 0; hh < G; hh++) {
        const int r = int((t - t0) * G + hh);
        const float inv = 1.0f / b.sum[r];
        float* o = out + t * ow + int64_t(g * G + hh) * Dv;
        for (int d = 0; d < Dv; d++) o[d] = b.o[size_t(r) * size_t(Dv) + size_t(d)] * inv;
        if (rotate_v) kv::hadamard(o, Dv, 1);
      }
  });
}

void attention_reference(ThreadPool& pool, Scratch& s, const float* q, const FlatKvCache& cache, int l, int64_t m,
                         int n_head, int32_t n_swa, float* out) {
  const int H = n_head, Hk = cache.n_head_kv(), G = H / Hk, D = cache.head_dim(), Dv = cache.head_dim_v();
  const int64_t qw = int64_t(H) * D, ow = int64_t(H) * Dv;
  const float scale = 1.0f / std::sqrt(float(D));
  int32_t max_len = 0;
  for (int g = 0; g < Hk; g++) max_len = std::max(max_len, cache.len(l, g));
  const size_t per_thread = size_t(max_len) * size_t(1 + D + Dv);
  s.reserve(pool.size(), per_thread);
  pool.parallel_for(m * H, [&](int64_t item, int thread) {
    const int64_t t = item / H;
    const int h = int(item % H), g = h / G;
    const int32_t n_keys = cache.len(l, g) - int32_t(m) + int32_t(t) + 1;
    float* sc = s.thread_buffer(thread);
    float* K = sc + max_len;
    float* V = K + size_t(max_len) * size_t(D);
    cache.read_k(l, g, 0, n_keys, K);
    cache.read_v(l, g, 0, n_keys, V);
    const float* qr = q + t * qw + int64_t(h) * D;
    const int32_t* kpos = cache.layer(l).positions(g);
    const int32_t q_pos = kpos[n_keys - 1];  // the query's own entry
    float mx = -std::numeric_limits<float>::infinity();
    for (int32_t j = 0; j < n_keys; j++) {
      if (!backend::in_window(q_pos, kpos[j], n_swa)) {
        sc[j] = -std::numeric_limits<float>::infinity();  // exp gives 0
        continue;
      }
      float dot = 0;
      for (int d = 0; d < D; d++) dot += qr[d] * K[size_t(j) * size_t(D) + size_t(d)];
      sc[j] = dot * scale;
      mx = std::max(mx, sc[j]);
    }
    double sum = 0;
    for (int32_t j = 0; j < n_keys; j++) sum += sc[j] = std::exp(sc[j] - mx);
    const float inv = float(1.0 / sum);
    float* o = out + t * ow + int64_t(h) * Dv;
    std::fill(o, o + Dv, 0.0f);
    for (int32_t j = 0; j < n_keys; j++) {
      const float p = sc[j] * inv;
      for (int d = 0; d < Dv; d++) o[d] += p * V[size_t(j) * size_t(Dv) + size_t(d)];
    }
  });
}

namespace {

// scores[j] = scale · Σ_d q[d] · kt[d·ld + j] for j < n: over the keys, so that it vectorises without
// reassociating a sum.
FOLIO_VECTOR_CLONES
void scores_over_keys(const float* __restrict q, const float* __restrict kt, int64_t ld, int D, int32_t n, float scale,
                      float* __restrict scores) {
  std::fill(scores, scores + n, 0.0f);
  for (int d = 0; d < D; d++) {
    const float qd = q[d] * scale;
    const float* __restrict row = kt + d * ld;
    for (int32_t j = 0; j < n; j++) scores[j] += qd * row[j];
  }
}

// p[j] = exp(p[j] − max_j p) for j < n, in place; returns 1 / Σ_j p[j], the sum in double. The max and the
// sum run over lanes (one running value is a chain of dependent operations that does not vectorise: it
// cost as much as the scores' product).
FOLIO_VECTOR_CLONES
float exp_shifted(float* __restrict p, int32_t n) {
  float part[kLanes];
  std::fill(part, part + kLanes, -std::numeric_limits<float>::infinity());
  int32_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; l++) part[l] = std::max(part[l], p[j + l]);
  float mx = fold_lanes(part, [](float x, float y) { return std::max(x, y); });
  for (; j < n; j++) mx = std::max(mx, p[j]);
  for (j = 0; j < n; j++) p[j] -= mx;
  exp_below_zero(p, n);
  constexpr int kDoubleLanes = 8;
  double sum[kDoubleLanes] = {};
  for (j = 0; j + kDoubleLanes <= n; j += kDoubleLanes)
    for (int l = 0; l < kDoubleLanes; l++) sum[l] += double(p[j + l]);
  for (; j < n; j++) sum[0] += double(p[j]);
  double total = 0;
  for (double x : sum) total += x;
  return float(1.0 / total);
}

// best[j] = max(best[j], p[j] · inv) for j < n.
FOLIO_VECTOR_CLONES
void raise_to(float* __restrict best, const float* __restrict p, float inv, size_t n) {
  for (size_t j = 0; j < n; j++) best[j] = std::max(best[j], p[j] * inv);
}

// sum[j] += p[j] · inv for j < n.
FOLIO_VECTOR_CLONES
void add_to(float* __restrict sum, const float* __restrict p, float inv, size_t n) {
  for (size_t j = 0; j < n; j++) sum[j] += p[j] * inv;
}

}  // namespace

void watch_attention(ThreadPool& pool, Scratch& s, const float* q, const FlatKvCache& cache, int l, int64_t m,
                     int n_head, backend::Backend::Fold fold, std::vector<std::vector<float>>& acc,
                     const int32_t* lens) {
  const int Hk = cache.n_head_kv(), G = n_head / Hk, D = cache.head_dim();
  const float scale = 1.0f / std::sqrt(float(D));
  const auto len = [&](int g) { return lens ? lens[g] : cache.len(l, g); };
  int32_t max_len = 0;
  for (int g = 0; g < Hk; g++) max_len = std::max(max_len, len(g));
  s.reserve(pool.size(), size_t(max_len) * size_t(2 * D + 1));
  pool.parallel_for(Hk, [&](int64_t g, int thread) {
    const int32_t Lg = len(int(g));
    // [Lg, D] keys, then [D, Lg] transposed, then [Lg] one query's scores
    float* k = s.thread_buffer(thread);
    float* kt = k + size_t(Lg) * size_t(D);
    float* p = kt + size_t(Lg) * size_t(D);
    cache.read_k(l, int(g), 0, Lg, k);
    for (int32_t j = 0; j < Lg; j++)
      for (int d = 0; d < D; d++) kt[size_t(d) * size_t(Lg) + size_t(j)] = k[size_t(j) * size_t(D) + size_t(d)];
    std::vector<float>& b = acc[size_t(g)];
    for (int64_t t = 0; t < m; t++)
      for (int hh = 0; hh < G; hh++) {
        const int32_t visible = Lg - int32_t(m) + int32_t(t) + 1;
        scores_over_keys(q + (t * n_head + g * G + hh) * D, kt, Lg, D, visible, scale, p);
        const float inv = exp_shifted(p, visible);
        const size_t n = std::min(b.size(), size_t(visible));
        if (fold == backend::Backend::Fold::Max) raise_to(b.data(), p, inv, n);
        else add_to(b.data(), p, inv, n);
      }
  });
}

}  // namespace folio::cpu
