// Every operation of the GPU backend (backend/gpu-abi.h) on random inputs, awkward sizes included, against
// the CPU engine's implementation, in the manner of llama.cpp's test-backend-ops.
//   backend-ops [--seed S] [--op NAME[,NAME...]]
// NAME: matmul get_rows rms_norm rope swiglu add add_bias kv (kv_append and kv_gather) attention
// window_scores topk_per_head top_tokens.
//
// Without a usable GPU backend it prints "backend-ops: SKIP: <the loader's reason>" and exits 0. Otherwise
// one line per case and a summary; exit status 1 if any case failed:
//   op  case  nmse=…  tol=…  OK|FAIL            float results, NMSE = Σ(gpu − ref)² / Σ ref²
//   op  case  differ=d/n  tol=exact  OK|FAIL    copies, integers and selections: equal, element for element
//   backend-ops: N passed, M failed
// Test executables are built in native/build and libfolio-cuda beside folio.node (native/build/Release);
// when FOLIO_GPU_LIBRARY is not set and the library is not beside this executable, it is looked for there.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#if defined(__linux__)
#include <unistd.h>
#endif

#include "backend/cpu-ops.h"
#include "backend/gpu-loader.h"
#include "core/error.h"
#include "kv/allocator.h"
#include "kv/flat-cache.h"
#include "kv/scorer.h"
#include "quant/quant.h"

using namespace folio;

namespace {

using ll = long long;  // for printf
const folio_gpu_api* G = nullptr;
ThreadPool* P = nullptr;  // for the CPU references and the random inputs
std::mt19937 rng;
int g_passed = 0, g_failed = 0;
bool g_dead = false;  // the device keeps failing (a kernel fault poisons a CUDA context): stop

// ---------------------------------------------------------------------------------------------------
// Device memory, results

// A device allocation, freed when it goes out of scope (also when a case throws).
struct Dev {
  void* p = nullptr;
  explicit Dev(size_t bytes) { gpu::check(G->alloc(std::max<size_t>(bytes, 4), &p), "alloc"); }
  Dev(Dev&& o) noexcept : p(o.p) { o.p = nullptr; }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  ~Dev() {
    if (p) G->free(p);
  }
  template <class T>
  T* as() const { return static_cast<T*>(p); }
};

Dev up_bytes(const void* src, size_t bytes) {
  Dev d(bytes);
  if (bytes) gpu::check(G->upload(d.p, src, bytes), "upload");
  return d;
}
template <class T>
Dev up(const std::vector<T>& v) { return up_bytes(v.data(), v.size() * sizeof(T)); }
void sync() { gpu::check(G->synchronize(), "synchronize"); }
template <class T>
std::vector<T> down(const Dev& d, size_t count) {
  std::vector<T> v(count);
  if (count) gpu::check(G->download(v.data(), d.p, count * sizeof(T)), "download");
  return v;
}

// Σ(a − b)² / Σ b² (b the reference; the plain sum of squares where b is all zero); inf if a has NaN/inf.
double nmse(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  if (!std::isfinite(num)) return INFINITY;
  return den > 0 ? num / den : num;
}
double nmse(const std::vector<float>& a, const std::vector<float>& b) { return nmse(a.data(), b.data(), b.size()); }

// Distance in units in the last place (+0 and −0 are equal).
int64_t ulps(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  const int64_t oa = ia >= 0 ? ia : int64_t(INT32_MIN) - ia, ob = ib >= 0 ? ib : int64_t(INT32_MIN) - ib;
  return std::llabs(oa - ob);
}

void line(const char* op, const std::string& desc, const std::string& measure, const char* tol, bool ok) {
  std::printf("%-14s %-56s %-22s tol=%-6s %s\n", op, desc.c_str(), measure.c_str(), tol, ok ? "OK" : "FAIL");
  std::fflush(stdout);
  (ok ? g_passed : g_failed)++;
}
void report_nmse(const char* op, const std::string& desc, double e, double tol) {
  line(op, desc, strfmt("nmse=%.2e", e), strfmt("%.0e", tol).c_str(), e <= tol);
}
void report_exact(const char* op, const std::string& desc, size_t differ, size_t total) {
  line(op, desc, strfmt("differ=%zu/%zu", differ, total), "exact", differ == 0);
}

// Runs one case; a thrown error (a failed call, an op missing from the table) is that case's FAIL.
template <class F>
void run_case(const char* op, const std::string& desc, F&& body) {
  if (g_dead) return;
  try {
    body();
  } catch (const std::exception& e) {
    line(op, desc, std::string("error: ") + e.what(), "-", false);
    if (G->synchronize() != 0 && G->synchronize() != 0) {
      g_dead = true;
      std::printf("backend-ops: the device keeps failing (%s); the remaining cases are not run\n", G->last_error());
    }
  }
}
void need(const void* fn, const char* op) {
  if (!fn) fail("GPU_ERROR", strfmt("%s is missing from the operation table", op));
}

// ---------------------------------------------------------------------------------------------------
// Random inputs (chunks with seeds of their own, so the values do not depend on the thread count)

std::vector<float> randn(size_t n, float sd = 1.0f, float mean = 0.0f) {
  std::vector<float> v(n);
  const uint32_t base = rng();
  constexpr size_t kChunk = 1 << 16;
  P->parallel_for(int64_t((n + kChunk - 1) / kChunk), [&](int64_t c, int) {
    std::mt19937 r(base + uint32_t(c) * 0x9E3779B9u);
    std::normal_distribution<float> nd(mean, sd);
    for (size_t i = size_t(c) * kChunk, e = std::min(n, i + kChunk); i < e; i++) v[i] = nd(r);
  });
  return v;
}

int32_t rand_int(int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(rng); }  // [lo, hi]

// A random weight matrix in `type`: its bytes (quantized by the engine's own quantizer) and their exact
// values (the scalar dequantizer). Rows of different scales, 32-element groups of different magnitudes
// (the K-quants' sub-block scales) and a shift on every third row (the minimums of Q4_1, Q5_1, Q4_K, Q5_K).
struct Matrix {
  std::vector<uint8_t> q;
  std::vector<float> f;  // [rows, cols]
  size_t ldw = 0;
};
Matrix random_matrix(TensorType type, int64_t rows, int64_t cols) {
  Matrix m;
  m.ldw = row_bytes(type, cols);
  m.q.resize(m.ldw * size_t(rows));
  m.f.resize(size_t(rows * cols));
  const quant::Kernels& kq = quant::kernels(type);
  const quant::Kernels& ks = quant::kernels(type, quant::Isa::Scalar);
  const uint32_t base = rng();
  P->parallel_for(rows, [&](int64_t r, int) {
    std::mt19937 g(base + uint32_t(r) * 0x9E3779B9u);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::uniform_real_distribution<float> ud(0.1f, 1.5f);
    const float scale = 0.02f * float(1 + r % 5), shift = r % 3 == 0 ? 0.5f * scale : 0.0f;
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t c = 0; c < cols; c += 32) {
      const float s = scale * ud(g);
      for (int64_t i = c; i < std::min(cols, c + 32); i++) row[size_t(i)] = s * nd(g) + shift;
    }
    kq.quantize_row(row.data(), m.q.data() + size_t(r) * m.ldw, cols);
    ks.dequantize_row(m.q.data() + size_t(r) * m.ldw, m.f.data() + r * cols, cols);
  });
  return m;
}

Weight f32_weight(const std::vector<float>& v) {
  Weight w;
  w.data = reinterpret_cast<const uint8_t*>(v.data());
  w.type = TensorType::F32;
  w.cols = int64_t(v.size());
  w.rows = 1;
  w.row_bytes = v.size() * 4;
  return w;
}

// KV entries as the cache stores them (F16: the engine's own conversion).
std::vector<uint8_t> kv_bytes(KvType t, const std::vector<float>& f) {
  std::vector<uint8_t> b(f.size() * (t == KvType::F16 ? 2 : 4));
  if (t == KvType::F32) std::memcpy(b.data(), f.data(), b.size());
  else quant::kernels(TensorType::F16).quantize_row(f.data(), b.data(), int64_t(f.size()));
  return b;
}

// A one-layer flat cache whose head g holds lens[g] random entries (positions 0..) in room for caps[g].
FlatKvCache random_cache(KvType type, int Hk, int D, int Dv, const std::vector<int32_t>& lens,
                         const std::vector<int32_t>& caps) {
  FlatKvCache c(1, Hk, D, Dv, type);
  c.reserve_heads(0, caps);
  for (int g = 0; g < Hk; g++) {
    const int32_t n = lens[size_t(g)];
    std::vector<int32_t> pos(static_cast<size_t>(n));
    std::iota(pos.begin(), pos.end(), 0);
    const auto k = kv_bytes(type, randn(size_t(n) * size_t(D))), v = kv_bytes(type, randn(size_t(n) * size_t(Dv)));
    c.append_raw(0, g, pos.data(), k.data(), v.data(), n);
  }
  return c;
}

// Layer 0 of a flat cache on the device with the same layout (offsets, lengths, spare room): its entries
// copied, or (content = false) zeros, for an operation to fill.
struct DevLayer {
  Dev k, v, pos, offset, len;
  folio_gpu_kv_layer d{};
};
Dev up_or_zero(const LargeBuffer& b, bool content) {
  if (content) return up_bytes(b.data(), b.size());
  Dev d(b.size());
  gpu::check(G->zero(d.p, std::max<size_t>(b.size(), 4)), "zero");
  return d;
}
DevLayer mirror(const FlatKvCache& c, bool content = true) {
  const LayerKv& L = c.layer(0);
  std::vector<int64_t> off;
  std::vector<int32_t> len;
  for (const HeadSegment& s : L.heads) off.push_back(s.offset), len.push_back(s.len);
  DevLayer m{up_or_zero(L.k, content), up_or_zero(L.v, content), up_or_zero(L.pos, content), up(off), up(len)};
  m.d.k = m.k.p, m.d.v = m.v.p, m.d.pos = m.pos.as<int32_t>();
  m.d.offset = m.offset.as<const int64_t>(), m.d.len = m.len.as<int32_t>();
  m.d.n_head_kv = c.n_head_kv(), m.d.head_dim = c.head_dim(), m.d.head_dim_v = c.head_dim_v();
  m.d.kv_type = int32_t(c.type());
  return m;
}

const char* tname(TensorType t) { return type_name(t); }

// ---------------------------------------------------------------------------------------------------
// matmul, get_rows

const TensorType kWeightTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q8_0,
                                   TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,
                                   TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};

// The reference multiplies the exact weight values (the scalar dequantizer's) with the float activations,
// accumulating in double. The GPU multiplies the same exact weights with float activations in float32:
// its NMSE is ~cols·2^-48 ≈ 1e-12..1e-10. A kernel that rounds activations and dequantized weights to F16
// (or F32 weights to TF32) for tensor cores adds two relative errors of ~2^-11/√3 each: NMSE ≈ 2·(2.8e-4)²
// ≈ 1.6e-7. So 1e-6 admits such tensor-core paths with a 6× margin and rejects anything coarser (BF16 or
// 8-bit activations: ≥ 1e-5; one wrong block or scale: ≫ 1e-4). Rounding errors scale with the products
// w·x, not with their sum: where a case's few outputs happen to cancel, Σ b² is small against
// T = Σ_(t,r) Σ_c (w_rc·x_tc)² and the tolerance grows by T / Σ b² (≈ 1 for cases with many outputs).
// For context each line also shows the CPU engine's own product against the same reference ("cpu="):
// it quantizes activations to 8 bits (Q8_0/Q8_1/Q8_K) or F16, ~1e-5 and ~1e-7.
constexpr double kMatmulTol = 1e-6;

void matmul_case(TensorType type, int64_t rows, int64_t cols, int64_t n, const Matrix* shared = nullptr) {
  const std::string desc = strfmt("%-5s %lldx%lld n=%lld", tname(type), ll(rows), ll(cols), ll(n));
  run_case("matmul", desc, [&] {
    need((const void*)G->matmul, "matmul");
    Matrix own;
    const Matrix& m = shared ? *shared : (own = random_matrix(type, rows, cols));
    const std::vector<float> x = randn(size_t(n * cols));
    std::vector<float> want(static_cast<size_t>(n * rows));
    std::vector<double> terms(want.size());  // Σ_c (w·x)² per output
    constexpr int64_t kRowBlock = 16;  // rows per item: a block of weight rows stays in cache over the tokens
    P->parallel_for((rows + kRowBlock - 1) / kRowBlock, [&](int64_t b, int) {
      for (int64_t t = 0; t < n; t++) {
        const float* xr = x.data() + t * cols;
        for (int64_t r = b * kRowBlock; r < std::min(rows, (b + 1) * kRowBlock); r++) {
          const float* wr = m.f.data() + r * cols;
          double acc = 0, sq = 0;
          for (int64_t c = 0; c < cols; c++) {
            const double p = double(wr[c]) * double(xr[c]);
            acc += p, sq += p * p;
          }
          want[size_t(t * rows + r)] = float(acc);
          terms[size_t(t * rows + r)] = sq;
        }
      }
    });
    Dev dw = up(m.q), dx = up(x), dy(size_t(n * rows) * 4);
    gpu::check(G->matmul(dw.p, int32_t(type), rows, cols, m.ldw, dx.as<float>(), n, dy.as<float>()), "matmul");
    sync();
    const std::vector<float> got = down<float>(dy, want.size());
    // context: the CPU engine's product
    Weight W;
    W.data = m.q.data(), W.type = type, W.cols = cols, W.rows = rows, W.row_bytes = m.ldw;
    cpu::Scratch scratch;
    std::vector<float> cpu_y(want.size());
    cpu::matmul(*P, scratch, W, x.data(), n, cpu_y.data());
    double T = 0, B = 0;
    for (size_t i = 0; i < want.size(); i++) T += terms[i], B += double(want[i]) * double(want[i]);
    const double e = nmse(got, want), tol = kMatmulTol * std::max(1.0, B > 0 ? T / B : 1.0);
    line("matmul", desc + strfmt(" cpu=%.1e", nmse(cpu_y, want)), strfmt("nmse=%.2e", e), strfmt("%.0e", tol).c_str(),
         e <= tol);
  });
}

void test_matmul() {
  const int64_t rows_list[] = {1, 7, 67, 259}, n_list[] = {1, 2, 5, 17, 64, 130};
  for (TensorType type : kWeightTypes) {
    const int64_t bs = type_info(type).block_size;
    // float types have no blocks: 32 stands in, and 100 is an awkward width (rows 8-byte aligned in F16)
    const int64_t cols_list[] = {bs == 1 ? 32 : bs, bs == 1 ? 100 : 3 * bs, 2048};
    // Every row count with every token count (decode paths n ≤ 8, prefill paths above), the width cycling.
    for (size_t i = 0; i < 4; i++)
      for (size_t j = 0; j < 6; j++) matmul_case(type, rows_list[i], cols_list[(i + j) % 3], n_list[j]);
    // Many rows at once: decode over a model-sized matrix, and (for the common types) a prefill batch.
    run_case("matmul", strfmt("%-5s 4096x4096 setup", tname(type)), [&] {
      const Matrix big = random_matrix(type, 4096, 4096);
      matmul_case(type, 4096, 4096, 1, &big);
      if (type == TensorType::F16 || type == TensorType::Q8_0 || type == TensorType::Q4_K || type == TensorType::Q6_K)
        matmul_case(type, 4096, 4096, 512, &big);
    });
  }
}

// get_rows copies dequantized rows: exactly the scalar dequantizer's values. (A kernel that computes
// d·q + m with a fused multiply-add, or d·(sc·q) instead of (d·sc)·q, is off by an ulp here: "maxulp" says
// so; __fmul_rn/__fadd_rn keep the CPU's rounding.)
void test_get_rows() {
  for (TensorType type : kWeightTypes) {
    const int64_t bs = type_info(type).block_size;
    const int64_t shapes[2][3] = {{67, bs == 1 ? 100 : 3 * bs, 9}, {300, 4096, 100}};  // rows, cols, ids
    for (const auto& s : shapes) {
      const int64_t rows = s[0], cols = s[1], n = s[2];
      const std::string desc = strfmt("%-5s rows=%lld cols=%lld n=%lld", tname(type), ll(rows), ll(cols), ll(n));
      run_case("get_rows", desc, [&] {
        need((const void*)G->get_rows, "get_rows");
        const Matrix m = random_matrix(type, rows, cols);
        std::vector<int32_t> ids(static_cast<size_t>(n));
        for (auto& id : ids) id = rand_int(0, int32_t(rows - 1));
        ids[0] = int32_t(rows - 1);  // the last row
        if (n > 2) ids[size_t(n - 1)] = ids[1], ids[2] = 0;  // a repeated id, the first row
        Dev dw = up(m.q), di = up(ids), dout(size_t(n * cols) * 4);
        gpu::check(G->get_rows(dw.p, int32_t(type), cols, m.ldw, di.as<int32_t>(), n, dout.as<float>()), "get_rows");
        sync();
        const std::vector<float> got = down<float>(dout, size_t(n * cols));
        size_t differ = 0;
        int64_t max_ulp = 0;
        for (int64_t t = 0; t < n; t++)
          for (int64_t c = 0; c < cols; c++) {
            const float a = got[size_t(t * cols + c)], b = m.f[size_t(ids[size_t(t)] * cols + c)];
            if (!(a == b)) differ++, max_ulp = std::max(max_ulp, ulps(a, b));
          }
        line("get_rows", desc + (differ ? strfmt(" maxulp=%lld", ll(max_ulp)) : std::string()),
             strfmt("differ=%zu/%lld", differ, ll(n * cols)), "exact", differ == 0);
      });
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Elementwise: rms_norm, rope, swiglu, add, add_bias

// rms_norm: the CPU sums squares in double, the GPU in float; both scale once. Relative errors of a few
// float roundings (~1e-7) give NMSE ~1e-13; 1e-10 leaves room for a tree reduction over 5000 elements.
// swiglu: silu through expf on both sides (CUDA's expf: 2 ulp; even __expf would be ~1e-12) → NMSE ~1e-14.
constexpr double kElementwiseTol = 1e-10;

void test_rms_norm() {
  const int64_t widths[] = {1, 33, 2048, 5000};
  struct C { int64_t width, n; bool in_place; float eps; };
  std::vector<C> cases;
  for (int64_t w : widths) cases.push_back({w, 1, false, 1e-5f}), cases.push_back({w, 7, false, 1e-6f});
  cases.push_back({2048, 130, true, 1e-5f});
  for (const C& c : cases) {
    const std::string desc =
        strfmt("width=%lld n=%lld eps=%g%s", ll(c.width), ll(c.n), c.eps, c.in_place ? " in place" : "");
    run_case("rms_norm", desc, [&] {
      need((const void*)G->rms_norm, "rms_norm");
      const std::vector<float> x = randn(size_t(c.n * c.width), 3.0f, 0.5f), g = randn(size_t(c.width));
      std::vector<float> want(x.size());
      cpu::rms_norm(*P, x.data(), f32_weight(g), want.data(), c.n, c.width, c.eps);
      Dev dx = up(x), dg = up(g), dy(x.size() * 4);
      float* y = c.in_place ? dx.as<float>() : dy.as<float>();
      gpu::check(G->rms_norm(dx.as<float>(), dg.as<float>(), y, c.n, c.width, c.eps), "rms_norm");
      sync();
      report_nmse("rms_norm", desc, nmse(down<float>(c.in_place ? dx : dy, x.size()), want), kElementwiseTol);
    });
  }
}

// rope: angles are large (position 1e5 × freq_scale at the fast pairs) and float carries them to a few
// roundings. The CPU's angle is within (3i + 2)·u·|θ| of the exact one (u = 2^−24: i repeated float
// products, as ggml, the i-fold rounding of base^(−2/rope_dim), the factor and the scale); a GPU's within
// ~(2i + 20)·u·|θ| by the usual formulas (powf(base, −2i/rope_dim): the exponent's rounding amplified by
// ln base ≤ 13, powf's ulps; or powf(base^(−2/rope_dim), i)). At position 1e5 that is up to ~1e-2 rad
// for the fast pairs, so no fixed bound is both safe and tight: each case computes the one its angles
// allow,   tol = Σ_pairs ((5i + 22)·u·|θ|)²·(x_a² + x_b²) / Σ x² + 1e-12,
// a worst case (typical NMSEs are ~100× lower). Real bugs (pair layout, exponent, factor, scale or
// position) are off by 1e-2..1 rad on most pairs; at position 1e5 the bound is loose enough to let one
// garbled pair through, so half the cases keep to positions ≤ 4096, where it is ~400× tighter. "cpu="
// is the CPU's own NMSE against a double rotation with exact angles. The dims past rope_dim must come
// back unchanged.
void test_rope() {
  struct C { int heads, head_dim, rope_dim, n; };
  const C shapes[] = {{8, 128, 128, 7}, {32, 128, 128, 64}, {4, 128, 64, 17},
                      {4, 80, 80, 5},   {2, 64, 32, 1},      {1, 128, 128, 130}};
  int ci = 0;
  for (int neox = 0; neox < 2; neox++)
    for (float base : {10000.0f, 500000.0f})
      for (float fs : {1.0f, 0.25f})
        for (bool ff : {false, true}) {
          const C s = shapes[size_t(ci++ % 6)];
          // half the cases (half of each option) at positions up to 4096, where the bound is tight
          const int32_t max_pos = (neox + (base > 10000.0f) + (fs < 1.0f) + ff) % 2 ? 4096 : 100000;
          const std::string desc = strfmt("%s h=%d hd=%d rd=%d n=%d base=%g fs=%g%s pos<=%d", neox ? "neox" : "norm",
                                          s.heads, s.head_dim, s.rope_dim, s.n, base, fs, ff ? " ff" : "", max_pos);
          run_case("rope", desc, [&] {
            need((const void*)G->rope, "rope");
            const int64_t width = int64_t(s.heads) * s.head_dim;
            const std::vector<float> x = randn(size_t(s.n * width));
            std::vector<int32_t> pos(static_cast<size_t>(s.n));
            for (int t = 0; t < s.n; t++) pos[size_t(t)] = t % 2 ? rand_int(0, 4095) : rand_int(0, max_pos);
            pos[0] = s.n > 1 ? max_pos : max_pos - 9;
            if (s.n > 2) pos[1] = 0;
            // frequency factors as Llama 3.1's: 1 for the fast pairs, up to 8 for the slow ones
            std::vector<float> factors(static_cast<size_t>(s.rope_dim / 2));
            for (size_t i = 0; i < factors.size(); i++)
              factors[i] = 1.0f + 7.0f * float(i) / float(factors.size()) + 0.01f * float(rand_int(0, 9));
            const float* ffp = ff ? factors.data() : nullptr;
            HParams hp;
            hp.rope_dim = s.rope_dim, hp.rope_base = base, hp.rope_freq_scale = fs;
            hp.rope_type = neox ? RopeType::Neox : RopeType::Norm;
            std::vector<float> want = x;
            cpu::rope(*P, want.data(), s.n, s.heads, s.head_dim, pos.data(), hp, ffp);
            // in double with exact angles, and the bound on the NMSE the angles' float roundings allow
            std::vector<float> exact = x;
            double bound = 0, norm = 0;
            for (int t = 0; t < s.n; t++)
              for (int h = 0; h < s.heads; h++) {
                const float* v = x.data() + t * width + int64_t(h) * s.head_dim;
                float* o = exact.data() + t * width + int64_t(h) * s.head_dim;
                for (int d = 0; d < s.head_dim; d++) norm += double(v[d]) * double(v[d]);
                for (int i = 0; i < s.rope_dim / 2; i++) {
                  const double th = double(fs) * double(pos[size_t(t)]) *
                                    std::pow(double(base), -2.0 * i / s.rope_dim) / (ffp ? double(ffp[i]) : 1.0);
                  const int a = neox ? i : 2 * i, b = neox ? i + s.rope_dim / 2 : 2 * i + 1;
                  const double x0 = v[a], x1 = v[b], err = (5.0 * i + 22.0) * std::ldexp(1.0, -24) * th;
                  o[a] = float(x0 * std::cos(th) - x1 * std::sin(th));
                  o[b] = float(x0 * std::sin(th) + x1 * std::cos(th));
                  bound += err * err * (x0 * x0 + x1 * x1);
                }
              }
            const double tol = bound / norm + 1e-12;
            Dev dx = up(x), dp = up(pos), dff = up(factors);
            const folio_gpu_rope p{s.rope_dim, neox, base, fs};
            const float* dffp = ff ? dff.as<float>() : nullptr;
            gpu::check(G->rope(dx.as<float>(), s.n, s.heads, s.head_dim, dp.as<int32_t>(), &p, dffp), "rope");
            sync();
            const std::vector<float> got = down<float>(dx, x.size());
            size_t tail = 0;  // dims past rope_dim that changed
            for (size_t e = 0; e < x.size(); e++)
              if (int(e % size_t(s.head_dim)) >= s.rope_dim && std::memcmp(&got[e], &x[e], 4) != 0) tail++;
            const double e = nmse(got, want);
            const std::string info = strfmt(" cpu=%.0e", nmse(want, exact));
            line("rope", desc + info + (tail ? strfmt(" tail-changed=%zu", tail) : ""),
                 strfmt("nmse=%.2e", e), strfmt("%.0e", tol).c_str(), e <= tol && tail == 0);
          });
        }
}

void test_swiglu() {
  for (int64_t count : {int64_t(1), int64_t(33), int64_t(4096 + 5), int64_t(130 * 2048)})
    for (bool in_place : {false, true}) {
      if (in_place && count < 4096) continue;
      const std::string desc = strfmt("count=%lld%s", ll(count), in_place ? " in place" : "");
      run_case("swiglu", desc, [&] {
        need((const void*)G->swiglu, "swiglu");
        std::vector<float> g = randn(size_t(count), 3.0f);
        const std::vector<float> u = randn(size_t(count));
        if (count > 4) g[1] = 30.0f, g[2] = -30.0f, g[3] = -90.0f;  // silu's saturated ends
        std::vector<float> want(g.size());
        cpu::swiglu(*P, g.data(), u.data(), want.data(), 1, count);
        Dev dg = up(g), du = up(u), dh(g.size() * 4);
        float* h = in_place ? dg.as<float>() : dh.as<float>();
        gpu::check(G->swiglu(dg.as<float>(), du.as<float>(), h, count), "swiglu");
        sync();
        report_nmse("swiglu", desc, nmse(down<float>(in_place ? dg : dh, g.size()), want), kElementwiseTol);
      });
    }
}

// add and add_bias: one correctly rounded float addition per element on either side: bit for bit.
void test_add() {
  for (int64_t count : {int64_t(1), int64_t(33), int64_t((1 << 20) + 3)})
    run_case("add", strfmt("count=%lld", ll(count)), [&] {
      need((const void*)G->add, "add");
      const std::vector<float> x = randn(size_t(count)), y = randn(size_t(count));
      Dev dx = up(x), dy = up(y);
      gpu::check(G->add(dx.as<float>(), dy.as<float>(), count), "add");
      sync();
      const std::vector<float> got = down<float>(dx, x.size());
      size_t differ = 0;
      for (size_t i = 0; i < x.size(); i++) differ += !(got[i] == x[i] + y[i]);
      report_exact("add", strfmt("count=%lld", ll(count)), differ, x.size());
    });
}

void test_add_bias() {
  const int64_t shapes[][2] = {{1, 1}, {7, 33}, {130, 4096}, {1, 5000}};
  for (const auto& s : shapes) {
    const int64_t n = s[0], width = s[1];
    const std::string desc = strfmt("n=%lld width=%lld", ll(n), ll(width));
    run_case("add_bias", desc, [&] {
      need((const void*)G->add_bias, "add_bias");
      const std::vector<float> x = randn(size_t(n * width)), b = randn(size_t(width));
      std::vector<float> want = x;
      cpu::add_bias(want.data(), f32_weight(b), n, width);
      Dev dx = up(x), db = up(b);
      gpu::check(G->add_bias(dx.as<float>(), db.as<float>(), n, width), "add_bias");
      sync();
      const std::vector<float> got = down<float>(dx, x.size());
      size_t differ = 0;
      for (size_t i = 0; i < x.size(); i++) differ += !(got[i] == want[i]);
      report_exact("add_bias", desc, differ, x.size());
    });
  }
}

// ---------------------------------------------------------------------------------------------------
// The KV cache: kv_append and kv_gather, against FlatKvCache::append and ::compact, byte for byte
// (F16: the float → half conversion must round to nearest even, as the engine's).

// Entries of head g that differ between two layers ([0, n_g) of each head, at each layer's own offsets).
size_t differing_entries(const FlatKvCache& c, const std::vector<uint8_t>& k, const std::vector<uint8_t>& v,
                         const std::vector<int32_t>& pos, const std::vector<int64_t>& dev_off,
                         const std::vector<int32_t>& n_g) {
  const LayerKv& L = c.layer(0);
  const size_t kb = c.k_entry_bytes(), vb = c.v_entry_bytes();
  size_t differ = 0;
  for (int g = 0; g < c.n_head_kv(); g++)
    for (int32_t j = 0; j < n_g[size_t(g)]; j++) {
      const size_t a = size_t(L.heads[size_t(g)].offset + j), b = size_t(dev_off[size_t(g)] + j);
      differ += std::memcmp(L.k.data() + a * kb, k.data() + b * kb, kb) != 0 ||
                std::memcmp(L.v.data() + a * vb, v.data() + b * vb, vb) != 0 || L.positions(g)[j] != pos[b];
    }
  return differ;
}

void test_kv() {
  struct C { int Hk, D, Dv, n; };
  const C shapes[] = {{1, 64, 64, 1}, {4, 128, 128, 7}, {8, 128, 128, 33}, {3, 80, 64, 5}};
  for (KvType type : {KvType::F32, KvType::F16})
    for (const C& s : shapes) {
      const std::string desc = strfmt("%s Hk=%d D=%d Dv=%d n=%d", kv_type_name(type), s.Hk, s.D, s.Dv, s.n);
      run_case("kv_append", desc, [&] {
        need((const void*)G->kv_append, "kv_append");
        need((const void*)G->kv_gather, "kv_gather");
        // heads of different lengths and spare room (head 0 empty when there are several)
        std::vector<int32_t> lens(static_cast<size_t>(s.Hk)), caps(static_cast<size_t>(s.Hk));
        for (int g = 0; g < s.Hk; g++) {
          lens[size_t(g)] = g == 0 && s.Hk > 1 ? 0 : rand_int(1, 300);
          caps[size_t(g)] = lens[size_t(g)] + s.n + rand_int(0, 20);
        }
        FlatKvCache cache = random_cache(type, s.Hk, s.D, s.Dv, lens, caps);
        DevLayer src = mirror(cache);
        const std::vector<float> k = randn(size_t(s.n * s.Hk * s.D), 2.0f), v = randn(size_t(s.n * s.Hk * s.Dv), 2.0f);
        std::vector<int32_t> pos(static_cast<size_t>(s.n));
        for (int t = 0; t < s.n; t++) pos[size_t(t)] = 5000 + 3 * t;
        cache.append(0, k.data(), v.data(), pos.data(), s.n);
        Dev dk = up(k), dv = up(v), dp = up(pos);
        gpu::check(G->kv_append(&src.d, dk.as<float>(), dv.as<float>(), dp.as<int32_t>(), s.n), "kv_append");
        sync();
        const LayerKv& L = cache.layer(0);
        std::vector<int64_t> off;
        std::vector<int32_t> len;
        size_t total = size_t(s.Hk);
        for (const HeadSegment& h : L.heads) off.push_back(h.offset), len.push_back(h.len), total += size_t(h.len);
        // every entry (the old ones unchanged, the n new ones converted) and every head's len (+ n on the device)
        const std::vector<int32_t> dev_len = down<int32_t>(src.len, size_t(s.Hk));
        size_t differ = differing_entries(cache, down<uint8_t>(src.k, L.k.size()), down<uint8_t>(src.v, L.v.size()),
                                          down<int32_t>(src.pos, size_t(L.capacity)), off, len);
        for (int g = 0; g < s.Hk; g++) differ += dev_len[size_t(g)] != len[size_t(g)];
        report_exact("kv_append", desc, differ, total);

        // kv_gather: random ascending keep lists (head 0 keeps nothing, the last head everything) into a
        // second layer laid out as the CPU's compacted one.
        std::vector<std::vector<int32_t>> keep(size_t(s.Hk));
        std::vector<int32_t> keep_flat;
        std::vector<int64_t> start{0};
        for (int g = 0; g < s.Hk; g++) {
          for (int32_t j = 0; j < len[size_t(g)]; j++)
            if (g == s.Hk - 1 || (g > 0 && rand_int(0, 2) == 0)) keep[size_t(g)].push_back(j);
          keep_flat.insert(keep_flat.end(), keep[size_t(g)].begin(), keep[size_t(g)].end());
          start.push_back(int64_t(keep_flat.size()));
        }
        cache.compact(0, keep, FlatKvCache::kSpare);
        const LayerKv& C2 = cache.layer(0);
        DevLayer dst = mirror(cache, false);
        std::vector<int64_t> off2;
        std::vector<int32_t> len2;
        for (const HeadSegment& h : C2.heads) off2.push_back(h.offset), len2.push_back(h.len);
        Dev dkeep = up(keep_flat);
        gpu::check(G->kv_gather(&src.d, &dst.d, dkeep.as<int32_t>(), start.data()), "kv_gather");
        sync();
        report_exact("kv_gather", desc + strfmt(" kept=%zu", keep_flat.size()),
                     differing_entries(cache, down<uint8_t>(dst.k, C2.k.size()), down<uint8_t>(dst.v, C2.v.size()),
                                       down<int32_t>(dst.pos, size_t(C2.capacity)), off2, len2),
                     keep_flat.size());
      });
    }
}

// ---------------------------------------------------------------------------------------------------
// attention

// Both sides read the same entries (F16 entries widened exactly) and compute in float32; the reference
// softmax is two-pass, the GPU's online (rescaled running sums) and its sums are ordered differently.
// Outputs are convex combinations of N(0,1) values, each off by a few float roundings of the terms:
// relative errors ~1e-6 at most, NMSE ~1e-12..1e-10 even over 20000 entries; the CPU's own online-softmax
// kernel ("cpu=") shows the level. 1e-8 keeps a 100× margin, while a wrong causal limit (one entry too
// many or few), scale or GQA mapping gives ≫ 1e-4.
constexpr double kAttentionTol = 1e-8;

void attention_case(KvType type, int Hk, int G_, int D, int Dv, int32_t m, int32_t max_before, int32_t long_len) {
  const std::string desc = strfmt("%s m=%d Hk=%d G=%d D=%d Dv=%d %s", kv_type_name(type), m, Hk, G_, D, Dv,
                                  (long_len ? strfmt("len~%d", long_len) : strfmt("len<=%d+m", max_before)).c_str());
  run_case("attention", desc, [&] {
    need((const void*)G->attention, "attention");
    HParams hp;
    hp.n_head_kv = Hk, hp.n_head = Hk * G_, hp.head_dim = D, hp.head_dim_v = Dv;
    std::vector<int32_t> before(static_cast<size_t>(Hk)), caps(static_cast<size_t>(Hk));
    for (int g = 0; g < Hk; g++) {
      before[size_t(g)] = long_len ? long_len - 97 * g : g == 0 && Hk > 1 ? 0 : rand_int(0, max_before);
      caps[size_t(g)] = before[size_t(g)] + m + (g % 2 ? 5 : 0);  // some spare room: offsets ≠ Σ len
    }
    FlatKvCache cache = random_cache(type, Hk, D, Dv, before, caps);
    const std::vector<float> k = randn(size_t(m) * size_t(hp.k_width())), v = randn(size_t(m) * size_t(hp.v_width()));
    std::vector<int32_t> pos(static_cast<size_t>(m));
    std::iota(pos.begin(), pos.end(), 100000);
    cache.append(0, k.data(), v.data(), pos.data(), m);
    const std::vector<float> q = randn(size_t(m) * size_t(hp.q_width()), 2.0f);
    std::vector<float> want(size_t(m) * size_t(hp.n_head) * size_t(Dv)), fast(want.size());
    cpu::Scratch scratch;
    cpu::attention_reference(*P, scratch, q.data(), cache, 0, m, want.data(), hp);
    cpu::attention(*P, scratch, q.data(), cache, 0, m, fast.data(), hp);
    DevLayer layer = mirror(cache);
    Dev dq = up(q), dout(want.size() * 4);
    gpu::check(G->attention(dq.as<float>(), &layer.d, m, hp.n_head, dout.as<float>()), "attention");
    sync();
    const double e = nmse(down<float>(dout, want.size()), want);
    line("attention", desc + strfmt(" cpu=%.0e", nmse(fast, want)), strfmt("nmse=%.2e", e), "1e-08",
         e <= kAttentionTol);
  });
}

void test_attention() {
  struct C { int Hk, G, D, Dv; };
  const C shapes[] = {{1, 1, 64, 64}, {2, 4, 128, 128}, {8, 4, 128, 128},
                      {3, 2, 80, 80}, {4, 3, 64, 64},   {8, 1, 128, 128}};
  int i = 0;
  for (KvType type : {KvType::F32, KvType::F16}) {
    for (int32_t m : {1, 1, 1, 7, 64, 200})  // decode three times as often: it has its own kernel
      for (int r = 0; r < 2; r++) {
        const C& s = shapes[size_t(i++ % 6)];
        attention_case(type, s.Hk, s.G, s.D, s.Dv, m, 3000, 0);
      }
    attention_case(type, 2, 2, 128, 64, 1, 3000, 0);  // head_dim_v ≠ head_dim
    attention_case(type, 2, 2, 128, 64, 64, 3000, 0);
    attention_case(type, 8, 4, 128, 128, 1, 0, 20000);  // a long document
  }
  attention_case(KvType::F16, 8, 4, 128, 128, 16, 0, 20000);
}

// ---------------------------------------------------------------------------------------------------
// Scoring and selection

// window_scores against kv::snapkv_scores (float softmax, double sums of the w·G rows): the attention
// means are probabilities off by a few float roundings, NMSE ~1e-13; 1e-9 is loose for that and tight for
// any wrong causal limit, mask or pooling. But selection downstream is exact: the line also counts the
// entries that differ at all, and how many tokens a top-20% selection per head picks differently.
void window_case(KvType type, int Hk, int G_, int D, int32_t L, int32_t w, int kernel) {
  const std::string desc = strfmt("%s L=%d w=%d k=%d Hk=%d G=%d D=%d", kv_type_name(type), L, w, kernel, Hk, G_, D);
  run_case("window_scores", desc, [&] {
    need((const void*)G->window_scores, "window_scores");
    std::vector<int32_t> lens(static_cast<size_t>(Hk));
    for (int g = 0; g < Hk; g++) lens[size_t(g)] = L + g % 3;  // entries past L must not count
    FlatKvCache cache = random_cache(type, Hk, D, D, lens, lens);
    kv::WindowShape shape;
    shape.n_head = Hk * G_, shape.n_head_kv = Hk, shape.head_dim = D, shape.head_dim_v = D, shape.L = L, shape.w = w;
    const std::vector<float> qw = randn(size_t(w) * size_t(shape.n_head) * size_t(D), 2.0f);
    const kv::EntryReader keys = [&](int g, float* out) { cache.read_k(0, g, 0, L, out); };
    const kv::WindowScores want = kv::snapkv_scores(*P, shape, qw.data(), keys, kernel);
    DevLayer layer = mirror(cache);
    const size_t n = size_t(L - w);
    Dev dq = up(qw), dattn(size_t(Hk) * size_t(L) * 4), dscore(size_t(Hk) * n * 4);
    gpu::check(G->window_scores(dq.as<float>(), &layer.d, shape.n_head, L, w, kernel, dattn.as<float>(),
                                dscore.as<float>()),
               "window_scores");
    sync();
    const std::vector<float> attn = down<float>(dattn, size_t(Hk * L)), score = down<float>(dscore, size_t(Hk) * n);
    std::vector<float> want_attn, want_score;
    for (int g = 0; g < Hk; g++) {
      want_attn.insert(want_attn.end(), want.attn[size_t(g)].begin(), want.attn[size_t(g)].end());
      want_score.insert(want_score.end(), want.score[size_t(g)].begin(), want.score[size_t(g)].end());
    }
    size_t attn_differ = 0, score_differ = 0, picked_differ = 0;
    for (size_t i = 0; i < attn.size(); i++) attn_differ += !(attn[i] == want_attn[i]);
    for (size_t i = 0; i < score.size(); i++) score_differ += !(score[i] == want_score[i]);
    for (int g = 0; g < Hk; g++) {
      const auto first = score.begin() + ptrdiff_t(size_t(g) * n);
      const std::vector<float> row(first, first + ptrdiff_t(n));
      const auto a = kv::top_tokens(row, int32_t(n / 5)), b = kv::top_tokens(want.score[size_t(g)], int32_t(n / 5));
      std::vector<int32_t> only;
      std::set_symmetric_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(only));
      picked_differ += only.size() / 2;
    }
    const double e = std::max(nmse(attn, want_attn), nmse(score, want_score));
    line("window_scores",
         desc + strfmt(" differ: attn %zu/%zu score %zu/%zu top20%% %zu", attn_differ, attn.size(), score_differ,
                       score.size(), picked_differ),
         strfmt("nmse=%.2e", e), "1e-09", e <= 1e-9);
  });
}

void test_window_scores() {
  struct C { int Hk, G, D; };
  const C shapes[] = {{2, 4, 128}, {4, 2, 64}, {8, 4, 128}, {3, 3, 80}};
  int i = 0;
  for (KvType type : {KvType::F32, KvType::F16})
    for (int32_t L : {40, 300, 4099})
      for (int32_t w : {1, 8, 32})
        for (int kernel : {1, 7}) {
          const C& s = shapes[size_t(i++ % 4)];
          window_case(type, s.Hk, s.G, s.D, L, w, kernel);
        }
}

// Scores [Hk][n]: continuous (non-negative, like window scores), or drawn from three values (ties
// everywhere), or all equal.
std::vector<std::vector<float>> random_scores(int Hk, int32_t n, int kind) {
  std::vector<std::vector<float>> s(static_cast<size_t>(Hk), std::vector<float>(static_cast<size_t>(n)));
  std::uniform_real_distribution<float> ud(0.0f, 1.0f);
  const float few[3] = {0.125f, 0.5f, 0.75f};
  for (auto& row : s)
    for (auto& x : row) x = kind == 0 ? ud(rng) : kind == 1 ? few[rand_int(0, 2)] : 0.25f;
  return s;
}
const char* kScoreKinds[] = {"distinct", "ties", "equal"};

void test_topk_per_head() {
  const int32_t shapes[][2] = {{1, 1}, {1, 50}, {4, 37}, {2, 1000}, {8, 4093}, {8, 20000}};
  for (const auto& sh : shapes)
    for (int kind = 0; kind < 3; kind++) {
      const int Hk = sh[0];
      const int32_t n = sh[1];
      const int64_t all = int64_t(Hk) * n;
      std::vector<int64_t> ks{0, 1, std::min<int64_t>(all, all / 3 + rand_int(1, 7)), all};
      if (kind == 2) ks = {all / 2};
      std::sort(ks.begin(), ks.end());
      ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
      for (int64_t k : ks) {
        const std::string desc = strfmt("Hk=%d n=%d k=%lld %s", Hk, n, ll(k), kScoreKinds[kind]);
        run_case("topk_per_head", desc, [&] {
          need((const void*)G->topk_per_head, "topk_per_head");
          const auto scores = random_scores(Hk, n, kind);
          std::vector<float> flat;
          for (const auto& r : scores) flat.insert(flat.end(), r.begin(), r.end());
          const std::vector<int32_t> want = kv::global_topk_counts(scores, k);
          std::vector<int32_t> won(size_t(Hk), -1);
          Dev ds = up(flat);
          gpu::check(G->topk_per_head(ds.as<float>(), Hk, n, k, won.data()), "topk_per_head");
          sync();
          size_t differ = 0;
          for (int g = 0; g < Hk; g++) differ += won[size_t(g)] != want[size_t(g)];
          report_exact("topk_per_head", desc, differ, size_t(Hk));
        });
      }
    }
}

void test_top_tokens() {
  const int32_t shapes[][2] = {{1, 1}, {1, 50}, {4, 37}, {2, 1000}, {8, 4093}, {8, 20000}};
  for (const auto& sh : shapes)
    for (int kind = 0; kind < 3; kind++)
      for (int variant = 0; variant < 2; variant++) {
        const int Hk = sh[0];
        const int32_t n = sh[1];
        // caps: random; in the first variant 0 for head 0 and n for the last (one head: 0, or n with ties)
        std::vector<int32_t> caps(static_cast<size_t>(Hk));
        for (int g = 0; g < Hk; g++) caps[size_t(g)] = rand_int(0, n);
        if (variant == 0 && Hk == 1) caps[0] = kind == 1 ? n : 0;
        if (variant == 0 && Hk > 1) caps[0] = 0, caps[size_t(Hk - 1)] = n;
        std::string cs;
        for (int32_t c : caps) cs += strfmt("%s%d", cs.empty() ? "" : ",", c);
        if (cs.size() > 24) cs = cs.substr(0, 21) + "...";
        const std::string desc = strfmt("Hk=%d n=%d %s caps=%s", Hk, n, kScoreKinds[kind], cs.c_str());
        run_case("top_tokens", desc, [&] {
          need((const void*)G->top_tokens, "top_tokens");
          const auto scores = random_scores(Hk, n, kind);
          std::vector<float> flat;
          std::vector<int32_t> want;
          for (int g = 0; g < Hk; g++) {
            flat.insert(flat.end(), scores[size_t(g)].begin(), scores[size_t(g)].end());
            const auto t = kv::top_tokens(scores[size_t(g)], caps[size_t(g)]);
            want.insert(want.end(), t.begin(), t.end());
          }
          Dev ds = up(flat), dout(want.size() * 4);
          gpu::check(G->top_tokens(ds.as<float>(), Hk, n, caps.data(), dout.as<int32_t>()), "top_tokens");
          sync();
          const std::vector<int32_t> got = down<int32_t>(dout, want.size());
          size_t differ = 0;
          for (size_t i = 0; i < want.size(); i++) differ += got[i] != want[i];
          report_exact("top_tokens", desc, differ, want.size());
        });
      }
}

// ---------------------------------------------------------------------------------------------------

// libfolio-cuda is built beside folio.node (build/Release), the test executables one folder up.
void find_library(const char* argv0) {
  const char* env = std::getenv("FOLIO_GPU_LIBRARY");
  if (env && *env) return;
#if defined(_WIN32)
  const char* name = "folio-cuda.dll";
#else
  const char* name = "libfolio-cuda.so";
#endif
  std::string exe = argv0 ? argv0 : "";
#if defined(__linux__)
  char buf[4096];
  const ssize_t len = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (len > 0) exe.assign(buf, size_t(len));
#endif
  const size_t slash = exe.find_last_of("/\\");
  const std::string dir = slash == std::string::npos ? "." : exe.substr(0, slash);
  auto exists = [](const std::string& p) {
    FILE* f = std::fopen(p.c_str(), "rb");
    if (f) std::fclose(f);
    return f != nullptr;
  };
  const std::string beside = dir + "/" + name, release = dir + "/Release/" + name;
  if (exists(beside) || !exists(release)) return;
#if defined(_WIN32)
  _putenv_s("FOLIO_GPU_LIBRARY", release.c_str());
#else
  setenv("FOLIO_GPU_LIBRARY", release.c_str(), 1);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  unsigned seed = 1;
  std::string only;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--seed" && i + 1 < argc) seed = unsigned(std::strtoul(argv[++i], nullptr, 10));
    else if (a == "--op" && i + 1 < argc) only = argv[++i];
    else {
      std::fprintf(stderr, "usage: backend-ops [--seed S] [--op NAME[,NAME...]]\n");
      return 2;
    }
  }
  struct Op { const char* name; void (*run)(); };
  const Op ops[] = {{"matmul", test_matmul},         {"get_rows", test_get_rows},
                    {"rms_norm", test_rms_norm},     {"rope", test_rope},
                    {"swiglu", test_swiglu},         {"add", test_add},
                    {"add_bias", test_add_bias},     {"kv", test_kv},
                    {"attention", test_attention},   {"window_scores", test_window_scores},
                    {"topk_per_head", test_topk_per_head}, {"top_tokens", test_top_tokens}};
  auto wanted = [&](const std::string& name) {
    if (only.empty()) return true;
    for (size_t b = 0; b <= only.size();) {
      const size_t e = std::min(only.find(',', b), only.size());
      const std::string w = only.substr(b, e - b);
      if (w == name || (name == "kv" && (w == "kv_append" || w == "kv_gather"))) return true;
      b = e + 1;
    }
    return false;
  };
  bool any = false;
  for (const Op& op : ops) any = any || wanted(op.name);
  if (!any) {
    std::fprintf(stderr, "backend-ops: no operation named %s\n", only.c_str());
    return 2;
  }

  find_library(argc > 0 ? argv[0] : nullptr);
  G = gpu::api();
  if (!G) {
    std::printf("backend-ops: SKIP: %s\n", gpu::status().reason.c_str());
    return 0;
  }
  std::printf("backend-ops: %s on %s; seed %u\n", gpu::status().backend.c_str(), gpu::status().reason.c_str(), seed);
  ThreadPool pool(0);
  P = &pool;
  std::string times;
  const auto t0 = std::chrono::steady_clock::now();
  for (const Op& op : ops) {
    if (!wanted(op.name) || g_dead) continue;
    rng.seed(seed);  // each op's inputs do not depend on which others run
    const auto t = std::chrono::steady_clock::now();
    op.run();
    times += strfmt(" %s %.1fs", op.name, std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("backend-ops: time%s; total %.1fs\n", times.c_str(), total);
  std::printf("backend-ops: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}
