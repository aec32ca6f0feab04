// Every operation of the backend interface (backend/backend.h) on random inputs, awkward sizes included,
// against slow references, in the manner of llama.cpp's test-backend-ops. The CPU backend and the GPU
// backend (the C table of backend/gpu-abi.h, where one is usable) go through the same interface and the
// same cases.
//   backend-ops [--seed S] [--op NAME[,NAME...]] [--backend cpu|gpu] [--quick]
// NAME: matmul get_rows rms_norm rope swiglu geglu add scale add_bias kv (append and compaction through a KV store)
// attention window_scores hadamard (the rotation of quantized cache entries). Without --backend: the CPU, then the GPU
// if usable.
// --quick: every op still runs, with fewer and smaller cases where they cost (matmul: each weight type
// through both kernels at every row count, no 4096×4096 matrices; attention: shorter caches, one long
// document; window_scores: L ≤ 1030), for slow devices such as a software Vulkan in CI.
//
// With --backend gpu and no usable GPU it prints "backend-ops: SKIP: <the loader's reason>" and exits 0.
// An operation the GPU table lacks (a backend still being written, libfolio-vulkan) is reported as
// "backend-ops: NAME is not supported by this GPU backend ...: SKIP" and counts neither way.
// Otherwise one line per case and a summary; exit status 1 if any case failed:
//   op  case  nmse=…  tol=…  OK|FAIL            float results, NMSE = Σ(got − ref)² / Σ ref²
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

#include "backend/backend.h"
#include "backend/cpu-backend.h"
#include "backend/cpu-ops.h"
#include "backend/gpu-backend.h"
#include "backend/gpu-loader.h"
#include "core/error.h"
#include "kv/allocator.h"
#include "backend/gpu-kv-cache.h"
#include "kv/flat-cache.h"
#include "kv/hadamard.h"
#include "kv/scorer.h"
#include "model/hparams.h"
#include "quant/quant.h"

using namespace folio;

namespace {

using ll = long long;            // for printf
backend::Backend* BE = nullptr;  // the backend under test
ThreadPool* P = nullptr;         // for the references and the random inputs
std::mt19937 rng;
int g_passed = 0, g_failed = 0;
bool g_quick = false;  // --quick
bool g_dead = false;   // the device keeps failing (a kernel fault poisons a CUDA context): stop

// ---------------------------------------------------------------------------------------------------
// Backend memory, results

// An allocation of the backend under test, freed when it goes out of scope (also when a case throws).
struct Dev : backend::Buffer {
  explicit Dev(size_t bytes) : backend::Buffer(*BE, std::max<size_t>(bytes, 4)) {}
};

Dev up_bytes(const void* src, size_t bytes) {
  Dev d(bytes);
  if (bytes) BE->upload(d.get(), src, bytes);
  return d;
}
template <class T>
Dev up(const std::vector<T>& v) {
  return up_bytes(v.data(), v.size() * sizeof(T));
}
void sync() { BE->synchronize(); }
template <class T>
std::vector<T> down(const Dev& d, size_t count) {
  std::vector<T> v(count);
  if (count) BE->download(v.data(), d.get(), count * sizeof(T));
  return v;
}
// A weight in the backend's memory (d keeps it).
Weight weight(const Dev& d, TensorType type, int64_t rows, int64_t cols, size_t ldw) {
  Weight w;
  w.data = d.as<const uint8_t>(), w.type = type, w.rows = rows, w.cols = cols, w.row_bytes = ldw;
  return w;
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
    for (int attempt = 0;; attempt++) {
      try {
        BE->synchronize();
        break;
      } catch (const std::exception& e2) {
        if (attempt == 0) continue;
        g_dead = true;
        std::printf("backend-ops: the device keeps failing (%s); the remaining cases are not run\n", e2.what());
        break;
      }
    }
  }
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

// The cache formats the KV cases run over: the plain types, the quantized ones, keys and values apart, rotated.
const KvFormat kPlainFormats[] = {KvType::F32, KvType::F16};
const KvFormat kQuantizedFormats[] = {KvType::Q8_0,
                                      KvType::Q4_0,
                                      {KvType::Q8_0, KvType::Q4_0, true},
                                      {KvType::Q4_0, KvType::Q4_0, true},
                                      {KvType::F16, KvType::Q8_0, true}};

// A one-layer flat cache whose head g holds lens[g] random entries (positions 0..) in room for caps[g].
// Head g's entries take the positions 0, stride, 2·stride, ... (stride > 1: the gaps a compressed cache has).
FlatKvCache random_cache(const KvFormat& f, int Hk, int D, int Dv, const std::vector<int32_t>& lens,
                         const std::vector<int32_t>& caps, int32_t stride = 1) {
  FlatKvCache c(1, Hk, D, Dv, f);
  c.reserve_heads(0, caps);
  for (int g = 0; g < Hk; g++) {
    const int32_t n = lens[size_t(g)];
    std::vector<int32_t> pos(static_cast<size_t>(n));
    for (int32_t j = 0; j < n; j++) pos[size_t(j)] = j * stride;
    const std::vector<float> k = randn(size_t(n) * size_t(D)), v = randn(size_t(n) * size_t(Dv));
    std::vector<uint8_t> kb(size_t(n) * c.k_entry_bytes()), vb(size_t(n) * c.v_entry_bytes());
    kv::encode(f.k, f.rotate_k(), k.data(), kb.data(), D, n);
    kv::encode(f.v, f.rotate_v(), v.data(), vb.data(), Dv, n);
    c.append_raw(0, g, pos.data(), kb.data(), vb.data(), n);
  }
  return c;
}

const char* tname(TensorType t) { return type_name(t); }

// ---------------------------------------------------------------------------------------------------
// matmul, get_rows

const TensorType kWeightTypes[] = {TensorType::F32,  TensorType::F16,    TensorType::BF16,  TensorType::Q8_0,
                                   TensorType::Q4_0, TensorType::Q4_1,   TensorType::Q5_0,  TensorType::Q5_1,
                                   TensorType::Q4_K, TensorType::Q5_K,   TensorType::Q6_K,  TensorType::Q2_K,
                                   TensorType::Q3_K, TensorType::IQ4_NL, TensorType::IQ4_XS};

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
// The CPU backend is held to what its activation format allows (quant::vec_dot_type): float activations
// (F32, F16 weights) to the same 1e-6; BF16 activations, rounded to 8 mantissa bits (NMSE ~1e-6, up to
// 6e-6 over these cases), to 3e-5; 8-bit blocks (Q8_0, Q8_1, Q8_K: ~5e-5, up to 1.4e-4 with Q6_K's) to
// 5e-4, still far below one wrong block or scale.
constexpr double kMatmulTol = 1e-6;
double matmul_tol(TensorType type) {
  if (std::string(BE->name()) != "cpu") return kMatmulTol;
  const TensorType act = quant::vec_dot_type(type);
  return act == TensorType::F32 || act == TensorType::F16 ? kMatmulTol : act == TensorType::BF16 ? 3e-5 : 5e-4;
}

void matmul_case(TensorType type, int64_t rows, int64_t cols, int64_t n, const Matrix* shared = nullptr) {
  const std::string desc = strfmt("%-5s %lldx%lld n=%lld", tname(type), ll(rows), ll(cols), ll(n));
  run_case("matmul", desc, [&] {
    Matrix own;
    const Matrix& m = shared ? *shared : (own = random_matrix(type, rows, cols));
    const std::vector<float> x = randn(size_t(n * cols));
    std::vector<float> want(static_cast<size_t>(n * rows));
    std::vector<double> terms(want.size());  // Σ_c (w·x)² per output
    constexpr int64_t kRowBlock = 16;        // rows per item: a block of weight rows stays in cache over the tokens
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
    BE->matmul(weight(dw, type, rows, cols, m.ldw), dx.as<float>(), n, dy.as<float>());
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
    const double e = nmse(got, want), tol = matmul_tol(type) * std::max(1.0, B > 0 ? T / B : 1.0);
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
    // Quick: each row count with one decode (n = 1) and one prefill (n = 17: a partial tile) token count,
    // and the largest with n = 130 (several tiles both ways), the widths still cycling.
    for (size_t i = 0; i < 4; i++)
      for (size_t j = 0; j < 6; j++)
        if (!g_quick || j == 0 || j == 3 || (i == 3 && j == 5))
          matmul_case(type, rows_list[i], cols_list[(i + j) % 3], n_list[j]);
    if (g_quick) continue;
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
        const Matrix m = random_matrix(type, rows, cols);
        std::vector<int32_t> ids(static_cast<size_t>(n));
        for (auto& id : ids) id = rand_int(0, int32_t(rows - 1));
        ids[0] = int32_t(rows - 1);                          // the last row
        if (n > 2) ids[size_t(n - 1)] = ids[1], ids[2] = 0;  // a repeated id, the first row
        Dev dw = up(m.q), di = up(ids), dout(size_t(n * cols) * 4);
        BE->get_rows(weight(dw, type, rows, cols, m.ldw), di.as<int32_t>(), n, dout.as<float>());
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

// rms_norm against a reference in double: the CPU sums squares in double, the GPU in float; both scale
// once. Relative errors of a few float roundings (~1e-7) give NMSE ~1e-13; 1e-10 leaves room for a tree
// reduction over 5000 elements. swiglu against silu in double: expf on either side (CUDA's expf: 2 ulp;
// even __expf would be ~1e-12) → NMSE ~1e-14.
constexpr double kElementwiseTol = 1e-10;

void test_rms_norm() {
  const int64_t widths[] = {1, 33, 2048, 5000};
  struct C {
    int64_t width, n;
    bool in_place;
    float eps;
  };
  std::vector<C> cases;
  for (int64_t w : widths) cases.push_back({w, 1, false, 1e-5f}), cases.push_back({w, 7, false, 1e-6f});
  cases.push_back({2048, 130, true, 1e-5f});
  for (const C& c : cases) {
    const std::string desc =
        strfmt("width=%lld n=%lld eps=%g%s", ll(c.width), ll(c.n), c.eps, c.in_place ? " in place" : "");
    run_case("rms_norm", desc, [&] {
      const std::vector<float> x = randn(size_t(c.n * c.width), 3.0f, 0.5f), g = randn(size_t(c.width));
      std::vector<float> want(x.size());
      for (int64_t t = 0; t < c.n; t++) {
        const float* xr = x.data() + t * c.width;
        double sum = 0;
        for (int64_t i = 0; i < c.width; i++) sum += double(xr[i]) * double(xr[i]);
        const double scale = 1.0 / std::sqrt(sum / double(c.width) + double(c.eps));
        for (int64_t i = 0; i < c.width; i++)
          want[size_t(t * c.width + i)] = float(double(xr[i]) * scale * double(g[size_t(i)]));
      }
      Dev dx = up(x), dg = up(g), dy(x.size() * 4);
      float* y = c.in_place ? dx.as<float>() : dy.as<float>();
      BE->rms_norm(dx.as<float>(), dg.as<float>(), y, c.n, c.width, c.eps);
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
// for the fast pairs, so no fixed bound is both safe and tight: each backend's result is compared with a
// rotation in double with exact angles, within the bound those angles allow,   tol = Σ_pairs ((5i + 22)·u·|θ|)²·(x_a² +
// x_b²) / Σ x² + 1e-12, a worst case (typical NMSEs are ~100× lower). Real bugs (pair layout, exponent, factor, scale
// or position) are off by 1e-2..1 rad on most pairs; at position 1e5 the bound is loose enough to let one garbled pair
// through, so half the cases keep to positions ≤ 4096, where it is ~400× tighter. "cpu=" is the CPU's own NMSE against
// a double rotation with exact angles. The dims past rope_dim must come back unchanged. The cases with
// frequency factors also scale cos and sin by an mscale, as LongRoPE does.
void test_rope() {
  struct C {
    int heads, head_dim, rope_dim, n;
  };
  const C shapes[] = {{8, 128, 128, 7}, {32, 128, 128, 64}, {4, 128, 64, 17},
                      {4, 80, 80, 5},   {2, 64, 32, 1},     {1, 128, 128, 130}};
  int ci = 0;
  for (int neox = 0; neox < 2; neox++)
    for (float base : {10000.0f, 500000.0f})
      for (float fs : {1.0f, 0.25f})
        for (bool ff : {false, true}) {
          const C s = shapes[size_t(ci++ % 6)];
          // half the cases (half of each option) at positions up to 4096, where the bound is tight
          const int32_t max_pos = (neox + (base > 10000.0f) + (fs < 1.0f) + ff) % 2 ? 4096 : 100000;
          const std::string desc =
              strfmt("%s h=%d hd=%d rd=%d n=%d base=%g fs=%g%s pos<=%d", neox ? "neox" : "norm", s.heads, s.head_dim,
                     s.rope_dim, s.n, base, fs, ff ? " ff ms=1.19" : "", max_pos);
          run_case("rope", desc, [&] {
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
            backend::RopeParams p;
            p.rope_dim = s.rope_dim, p.neox = neox != 0, p.base = base, p.freq_scale = fs;
            p.mscale = ff ? 1.19f : 1.0f;  // Phi-3-128k's sqrt(1 + ln 32 / ln 4096)
            std::vector<float> cpu = x;    // context: the CPU kernel
            cpu::rope(*P, cpu.data(), s.n, s.heads, s.head_dim, pos.data(), p, ffp);
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
                  const double ms = p.mscale;
                  o[a] = float(ms * (x0 * std::cos(th) - x1 * std::sin(th)));
                  o[b] = float(ms * (x0 * std::sin(th) + x1 * std::cos(th)));
                  bound += ms * ms * err * err * (x0 * x0 + x1 * x1);
                }
              }
            const double tol = bound / norm + 1e-12;
            Dev dx = up(x), dp = up(pos), dff = up(factors);
            const float* dffp = ff ? dff.as<float>() : nullptr;
            BE->rope(dx.as<float>(), s.n, s.heads, s.head_dim, dp.as<int32_t>(), p, dffp);
            sync();
            const std::vector<float> got = down<float>(dx, x.size());
            size_t tail = 0;  // dims past rope_dim that changed
            for (size_t e = 0; e < x.size(); e++)
              if (int(e % size_t(s.head_dim)) >= s.rope_dim && std::memcmp(&got[e], &x[e], 4) != 0) tail++;
            const double e = nmse(got, exact);
            const std::string info = strfmt(" cpu=%.0e", nmse(cpu, exact));
            line("rope", desc + info + (tail ? strfmt(" tail-changed=%zu", tail) : ""), strfmt("nmse=%.2e", e),
                 strfmt("%.0e", tol).c_str(), e <= tol && tail == 0);
          });
        }
}

void test_swiglu() {
  for (int64_t count : {int64_t(1), int64_t(33), int64_t(4096 + 5), int64_t(130 * 2048)})
    for (bool in_place : {false, true}) {
      if (in_place && count < 4096) continue;
      const std::string desc = strfmt("count=%lld%s", ll(count), in_place ? " in place" : "");
      run_case("swiglu", desc, [&] {
        std::vector<float> g = randn(size_t(count), 3.0f);
        const std::vector<float> u = randn(size_t(count));
        if (count > 4) g[1] = 30.0f, g[2] = -30.0f, g[3] = -90.0f;  // silu's saturated ends
        std::vector<float> want(g.size());
        for (size_t i = 0; i < g.size(); i++)
          want[i] = float(double(g[i]) / (1.0 + std::exp(-double(g[i]))) * double(u[i]));
        Dev dg = up(g), du = up(u), dh(g.size() * 4);
        float* h = in_place ? dg.as<float>() : dh.as<float>();
        BE->swiglu(dg.as<float>(), du.as<float>(), h, 1, count);
        sync();
        report_nmse("swiglu", desc, nmse(down<float>(in_place ? dg : dh, g.size()), want), kElementwiseTol);
      });
    }
}

// geglu: GELU's tanh form against the formula in double; tanhf's few ulps are far inside the bound.
void test_geglu() {
  for (int64_t count : {int64_t(1), int64_t(33), int64_t(4096 + 5), int64_t(130 * 2048)})
    for (bool in_place : {false, true}) {
      if (in_place && count < 4096) continue;
      const std::string desc = strfmt("count=%lld%s", ll(count), in_place ? " in place" : "");
      run_case("geglu", desc, [&] {
        std::vector<float> g = randn(size_t(count), 3.0f);
        const std::vector<float> u = randn(size_t(count));
        if (count > 4) g[1] = 30.0f, g[2] = -30.0f, g[3] = -90.0f;  // tanh's saturated ends
        std::vector<float> want(g.size());
        for (size_t i = 0; i < g.size(); i++) {
          const double x = g[i];
          want[i] = float(0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))) * u[i]);
        }
        Dev dg = up(g), du = up(u), dh(g.size() * 4);
        float* h = in_place ? dg.as<float>() : dh.as<float>();
        BE->geglu(dg.as<float>(), du.as<float>(), h, 1, count);
        sync();
        report_nmse("geglu", desc, nmse(down<float>(in_place ? dg : dh, g.size()), want), kElementwiseTol);
      });
    }
}

// scale: one correctly rounded float product per element: bit for bit.
void test_scale() {
  for (int64_t count : {int64_t(1), int64_t(33), int64_t((1 << 20) + 3)})
    run_case("scale", strfmt("count=%lld", ll(count)), [&] {
      const std::vector<float> x = randn(size_t(count));
      const float s = 45.254834f;  // √2048, a Gemma embedding scale
      Dev dx = up(x);
      BE->scale(dx.as<float>(), s, count);
      sync();
      const std::vector<float> got = down<float>(dx, x.size());
      size_t differ = 0;
      for (size_t i = 0; i < x.size(); i++) differ += !(got[i] == x[i] * s);
      report_exact("scale", strfmt("count=%lld", ll(count)), differ, x.size());
    });
}

// add and add_bias: one correctly rounded float addition per element on either side: bit for bit.
void test_add() {
  for (int64_t count : {int64_t(1), int64_t(33), int64_t((1 << 20) + 3)})
    run_case("add", strfmt("count=%lld", ll(count)), [&] {
      const std::vector<float> x = randn(size_t(count)), y = randn(size_t(count));
      Dev dx = up(x), dy = up(y);
      BE->add(dx.as<float>(), dy.as<float>(), count);
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
      const std::vector<float> x = randn(size_t(n * width)), b = randn(size_t(width));
      std::vector<float> want = x;
      for (int64_t t = 0; t < n; t++)
        for (int64_t i = 0; i < width; i++) want[size_t(t * width + i)] += b[size_t(i)];
      Dev dx = up(x), db = up(b);
      BE->add_bias(dx.as<float>(), db.as<float>(), n, width);
      sync();
      const std::vector<float> got = down<float>(dx, x.size());
      size_t differ = 0;
      for (size_t i = 0; i < x.size(); i++) differ += !(got[i] == want[i]);
      report_exact("add_bias", desc, differ, x.size());
    });
  }
}

// ---------------------------------------------------------------------------------------------------
// The KV cache through a backend's KV store: append (kv_append on a GPU) and compaction (kv_gather)
// against FlatKvCache::append and ::compact on the host, byte for byte (F16: the float → half conversion
// must round to nearest even, as the engine's).

// Whether entry `got` holds the numbers of entry `want` (stored basis): the same bytes for the plain types;
// for a quantized one each number within one step of want's block (d = the block's largest magnitude / 127
// for Q8_0, / 8 for Q4_0), as a device may round a product that lands on a half, or rotate in another order,
// the other way.
bool same_entry(KvType t, int dim, const uint8_t* want, const uint8_t* got) {
  if (!kv_type_quantized(t)) return std::memcmp(want, got, kv::entry_bytes(t, dim)) == 0;
  std::vector<float> a(static_cast<size_t>(dim)), b(a.size());
  kv::decode_stored(t, want, a.data(), dim, 1);
  kv::decode_stored(t, got, b.data(), dim, 1);
  for (int b0 = 0; b0 < dim; b0 += 32) {
    const int b1 = std::min(dim, b0 + 32);
    float amax = 0;
    for (int i = b0; i < b1; i++) amax = std::max(amax, std::fabs(a[size_t(i)]));
    const float step = amax / (t == KvType::Q8_0 ? 127.0f : 8.0f);
    for (int i = b0; i < b1; i++)
      if (!(std::fabs(a[size_t(i)] - b[size_t(i)]) <= 1.01f * step + 1e-6f)) return false;
  }
  return true;
}

// Entries (k, v, position) and lengths that differ between layer 0 of two caches, head by head at each
// cache's own offsets; `bytes` counts the entries whose bytes differ at all.
size_t differing_entries(const FlatKvCache& want, const FlatKvCache& got, size_t* bytes = nullptr) {
  const LayerKv &A = want.layer(0), &B = got.layer(0);
  const size_t kb = want.k_entry_bytes(), vb = want.v_entry_bytes();
  const KvFormat& f = want.format();
  size_t differ = 0;
  for (int g = 0; g < want.n_head_kv(); g++) {
    const HeadSegment &a = A.heads[size_t(g)], &b = B.heads[size_t(g)];
    if (a.len != b.len) {
      differ += size_t(std::abs(a.len - b.len)) + 1;
      continue;
    }
    for (int32_t j = 0; j < a.len; j++) {
      const uint8_t *ka = A.k.data() + size_t(a.offset + j) * kb, *kb_ = B.k.data() + size_t(b.offset + j) * kb;
      const uint8_t *va = A.v.data() + size_t(a.offset + j) * vb, *vb_ = B.v.data() + size_t(b.offset + j) * vb;
      differ += !same_entry(f.k, want.head_dim(), ka, kb_) || !same_entry(f.v, want.head_dim_v(), va, vb_) ||
                want.layer(0).positions(g)[j] != got.layer(0).positions(g)[j];
      if (bytes) *bytes += std::memcmp(ka, kb_, kb) != 0 || std::memcmp(va, vb_, vb) != 0;
    }
  }
  return differ;
}

void test_kv() {
  struct C {
    int Hk, D, Dv, n;
  };
  const C shapes[] = {{1, 64, 64, 1}, {4, 128, 128, 7}, {8, 128, 128, 33}, {3, 80, 64, 5}, {2, 16, 16, 9}};
  std::vector<KvFormat> formats(std::begin(kPlainFormats), std::end(kPlainFormats));
  formats.insert(formats.end(), std::begin(kQuantizedFormats), std::end(kQuantizedFormats));
  for (const KvFormat& f : formats)
    for (const C& s : shapes) {
      const std::string desc = strfmt("%s Hk=%d D=%d Dv=%d n=%d", kv_format_name(f).c_str(), s.Hk, s.D, s.Dv, s.n);
      run_case("kv_append", desc, [&] {
        // heads of different lengths and spare room (head 0 empty when there are several)
        std::vector<int32_t> lens(static_cast<size_t>(s.Hk)), caps(static_cast<size_t>(s.Hk));
        for (int g = 0; g < s.Hk; g++) {
          lens[size_t(g)] = g == 0 && s.Hk > 1 ? 0 : rand_int(1, 300);
          caps[size_t(g)] = lens[size_t(g)] + s.n + rand_int(0, 20);
        }
        FlatKvCache cache = random_cache(f, s.Hk, s.D, s.Dv, lens, caps);
        std::unique_ptr<backend::KvStore> store = BE->kv_store_from_host(cache.clone());
        const std::vector<float> k = randn(size_t(s.n * s.Hk * s.D), 2.0f), v = randn(size_t(s.n * s.Hk * s.Dv), 2.0f);
        std::vector<int32_t> pos(static_cast<size_t>(s.n));
        for (int t = 0; t < s.n; t++) pos[size_t(t)] = 5000 + 3 * t;
        cache.append(0, k.data(), v.data(), pos.data(), s.n);
        Dev dk = up(k), dv = up(v), dp = up(pos);
        store->reserve(0, s.n, 0);  // there is room: in place
        store->append(0, dk.as<float>(), dv.as<float>(), dp.as<int32_t>(), pos.data(), s.n);
        sync();
        // the caller's projections are left as they were (a rotated cache rotates a copy)
        size_t changed = down<float>(dk, k.size()) != k || down<float>(dv, v.size()) != v;
        size_t total = size_t(s.Hk) + 1;
        for (int g = 0; g < s.Hk; g++) total += size_t(cache.len(0, g));
        // every entry (the old ones unchanged, the n new ones converted) and every head's length
        size_t bytes = 0;
        size_t differ = differing_entries(cache, store->to_host(), &bytes) + changed;
        for (int g = 0; g < s.Hk; g++) differ += store->len(0, g) != cache.len(0, g);
        if (kv_type_quantized(f.k) || kv_type_quantized(f.v))
          line("kv_append", desc + strfmt(" bytes differ %zu", bytes), strfmt("differ=%zu/%zu", differ, total),
               "1 step", differ == 0);
        else report_exact("kv_append", desc, differ, total);

        // compaction: random ascending keep lists (head 0 keeps nothing, the last head everything); the
        // entries are moved as they are, so both sides' bytes must stay equal
        std::vector<std::vector<int32_t>> keep(size_t(s.Hk));
        size_t kept = 0;
        for (int g = 0; g < s.Hk; g++) {
          for (int32_t j = 0; j < cache.len(0, g); j++)
            if (g == s.Hk - 1 || (g > 0 && rand_int(0, 2) == 0)) keep[size_t(g)].push_back(j);
          kept += keep[size_t(g)].size();
        }
        FlatKvCache before = store->to_host();
        before.compact(0, keep, FlatKvCache::kSpare);
        store->compact(0, keep, FlatKvCache::kSpare);
        const FlatKvCache got = store->to_host();
        size_t moved = 0;
        size_t differ2 = differing_entries(before, got, &moved) + moved;
        for (int g = 0; g < s.Hk; g++)
          differ2 += got.layer(0).heads[size_t(g)].cap != before.layer(0).heads[size_t(g)].cap;
        report_exact("kv_gather", desc + strfmt(" kept=%zu", kept), differ2, kept);
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
// With a sliding window (n_swa > 0) the older entries are two positions apart and the new ones follow them,
// so that each query's window starts at a different entry, inside a tile.
constexpr double kAttentionTol = 1e-8;
constexpr double kQ8QueryTol = 1e-3;

void attention_case(const KvFormat& f, int Hk, int G_, int D, int Dv, int32_t m, int32_t max_before, int32_t long_len,
                    int32_t n_swa = 0) {
  const std::string desc = strfmt("%s m=%d Hk=%d G=%d D=%d Dv=%d %s%s", kv_format_name(f).c_str(), m, Hk, G_, D, Dv,
                                  (long_len ? strfmt("len~%d", long_len) : strfmt("len<=%d+m", max_before)).c_str(),
                                  n_swa ? strfmt(" n_swa=%d", n_swa).c_str() : "");
  run_case("attention", desc, [&] {
    HParams hp;
    hp.n_head_kv = Hk, hp.n_head = Hk * G_, hp.head_dim = D, hp.head_dim_v = Dv;
    std::vector<int32_t> before(static_cast<size_t>(Hk)), caps(static_cast<size_t>(Hk));
    for (int g = 0; g < Hk; g++) {
      before[size_t(g)] = long_len ? long_len - 97 * g : g == 0 && Hk > 1 ? 0 : rand_int(0, max_before);
      caps[size_t(g)] = before[size_t(g)] + m + (g % 2 ? 5 : 0);  // some spare room: offsets ≠ Σ len
    }
    const int32_t stride = n_swa ? 2 : 1;
    FlatKvCache cache = random_cache(f, Hk, D, Dv, before, caps, stride);
    const std::vector<float> k = randn(size_t(m) * size_t(hp.k_width())), v = randn(size_t(m) * size_t(hp.v_width()));
    std::vector<int32_t> pos(static_cast<size_t>(m));
    std::iota(pos.begin(), pos.end(), n_swa ? stride * *std::max_element(before.begin(), before.end()) : 100000);
    cache.append(0, k.data(), v.data(), pos.data(), m);
    const std::vector<float> q = randn(size_t(m) * size_t(hp.q_width()), 2.0f);
    std::vector<float> want(size_t(m) * size_t(hp.n_head) * size_t(Dv)), fast(want.size());
    cpu::Scratch scratch;
    cpu::attention_reference(*P, scratch, q.data(), cache, 0, m, hp.n_head, n_swa, want.data());
    cpu::attention(*P, scratch, q.data(), cache, 0, m, hp.n_head, n_swa, fast.data());
    const std::unique_ptr<backend::KvStore> store = BE->kv_store_from_host(cache.clone());
    Dev dq = up(q), dout(want.size() * 4);
    BE->attention(dq.as<float>(), *store, 0, m, hp.n_head, n_swa, dout.as<float>());
    sync();
    const double e = nmse(down<float>(dout, want.size()), want);
    // The CPU's decode over quantized keys of whole blocks quantizes its few query rows to Q8_0 too and takes
    // integer products (backend/attention.cc, as llama.cpp's q8_0 cache does): a relative error of ~1/250 per
    // query number, NMSE up to ~1.3e-4 seen. A device dequantizes the keys and multiplies in float32.
    const bool q8_queries = BE->host_memory() && kv_type_quantized(f.k) && D % 32 == 0;
    const double tol = q8_queries ? kQ8QueryTol : kAttentionTol;
    line("attention", desc + strfmt(" cpu=%.0e", nmse(fast, want)), strfmt("nmse=%.2e", e),
         q8_queries ? "1e-03" : "1e-08", e <= tol);
  });
}

void test_attention() {
  struct C {
    int Hk, G, D, Dv;
  };
  const C shapes[] = {{1, 1, 64, 64}, {2, 4, 128, 128}, {8, 4, 128, 128},
                      {3, 2, 80, 80}, {4, 3, 64, 64},   {8, 1, 128, 128}};
  // Quick: caches up to 400 entries instead of 3000, and one long document (the F16 decode).
  const int32_t before = g_quick ? 400 : 3000;
  int i = 0;
  for (const KvFormat& f : kPlainFormats) {
    for (int32_t m : {1, 1, 1, 7, 64, 200})  // decode three times as often: it has its own kernel
      for (int r = 0; r < 2; r++) {
        const C& s = shapes[size_t(i++ % 6)];
        attention_case(f, s.Hk, s.G, s.D, s.Dv, m, before, 0);
      }
    attention_case(f, 2, 2, 128, 64, 1, before, 0);  // head_dim_v ≠ head_dim
    attention_case(f, 2, 2, 128, 64, 64, before, 0);
    if (!g_quick || f.k == KvType::F16) attention_case(f, 8, 4, 128, 128, 1, 0, 20000);  // a long document
  }
  if (!g_quick) attention_case(KvType::F16, 8, 4, 128, 128, 16, 0, 20000);
  // Sliding windows (gemma3's sliding layers, phi3): narrower than a tile, across tiles, wider than the cache.
  for (const KvFormat& f : kPlainFormats) {
    attention_case(f, 2, 4, 128, 128, 1, before, 0, 37);
    attention_case(f, 4, 3, 64, 64, 7, before, 0, 1);
    attention_case(f, 8, 1, 128, 128, 64, before, 0, 100);
    attention_case(f, 2, 2, 128, 64, 200, before, 0, 513);
    attention_case(f, 1, 1, 64, 64, 33, before, 0, 100000);
  }
  attention_case(KvType::F16, 8, 4, 128, 128, 1, 0, 20000, 1024);                 // a long document, gemma3's window
  if (!g_quick) attention_case(KvType::F16, 8, 4, 128, 128, 16, 0, 20000, 2047);  // phi3's
  // Quantized entries (issue 43): the same numbers on both sides (the CPU reference reads them rotated back,
  // the device rotates the queries and outputs instead), so the same bound. Decode, a chunk, a prefill; a
  // short last block (80 = 2·32 + 16); values of a size other than the keys'; a window; a long document.
  for (const KvFormat& f : kQuantizedFormats) {
    for (int32_t m : {1, 7, 64}) {
      const C& s = shapes[size_t(i++ % 6)];
      attention_case(f, s.Hk, s.G, s.D, s.Dv, m, before, 0);
    }
    attention_case(f, 3, 2, 80, 80, 1, before, 0);
    attention_case(f, 2, 2, 128, 64, 16, before, 0);
    attention_case(f, 2, 4, 128, 128, 7, before, 0, 37);
  }
  attention_case({KvType::Q8_0, KvType::Q4_0, true}, 8, 4, 128, 128, 1, 0, g_quick ? 4000 : 20000);
}

// ---------------------------------------------------------------------------------------------------
// Scoring and selection

// window_scores against kv::snapkv_scores (float softmax, double sums of the w·G rows): the attention
// means are probabilities off by a few float roundings, NMSE ~1e-13; 1e-9 is loose for that and tight for
// any wrong causal limit, mask or pooling. But selection downstream is exact: the line also counts the
// entries that differ at all, and how many tokens a top-20% selection per head picks differently.
// ragged: the heads are scored over different lengths (a chunked read), L to L + 74.
void window_case(const KvFormat& f, int Hk, int G_, int D, int32_t L, int32_t w, int kernel, bool ragged = false) {
  const std::string desc = strfmt("%s L=%d%s w=%d k=%d Hk=%d G=%d D=%d", kv_format_name(f).c_str(), L,
                                  ragged ? "+ragged" : "", w, kernel, Hk, G_, D);
  run_case("window_scores", desc, [&] {
    std::vector<int32_t> scored(static_cast<size_t>(Hk)), lens(static_cast<size_t>(Hk));
    for (int g = 0; g < Hk; g++) {
      scored[size_t(g)] = ragged ? L + 37 * (g % 3) : L;
      lens[size_t(g)] = scored[size_t(g)] + g % 3;  // entries past the scored ones must not count
    }
    FlatKvCache cache = random_cache(f, Hk, D, D, lens, lens);
    kv::WindowShape shape;
    shape.n_head = Hk * G_, shape.n_head_kv = Hk, shape.head_dim = D, shape.head_dim_v = D, shape.L = L, shape.w = w;
    if (ragged) shape.lens = scored;
    const int32_t M = shape.max_len();
    const std::vector<float> qw = randn(size_t(w) * size_t(shape.n_head) * size_t(D), 2.0f);
    const kv::EntryReader keys = [&](int g, float* out) { cache.read_k(0, g, 0, shape.len(g), out); };
    const kv::WindowScores want = kv::snapkv_scores(*P, shape, qw.data(), keys, kernel);
    const std::unique_ptr<backend::KvStore> store = BE->kv_store_from_host(cache.clone());
    const size_t n = size_t(M - w);
    Dev dq = up(qw), dattn(size_t(Hk) * size_t(M) * 4), dscore(size_t(Hk) * n * 4);
    BE->window_scores(dq.as<float>(), *store, 0, shape.n_head, scored.data(), w, kernel, dattn.as<float>(),
                      dscore.as<float>());
    sync();
    const std::vector<float> all_attn = down<float>(dattn, size_t(Hk * M)),
                             all_score = down<float>(dscore, size_t(Hk) * n);
    std::vector<float> attn, score, want_attn, want_score;
    for (int g = 0; g < Hk; g++) {  // row g is filled up to its own length
      const size_t ng = size_t(shape.len(g));
      attn.insert(attn.end(), all_attn.begin() + ptrdiff_t(size_t(g) * size_t(M)),
                  all_attn.begin() + ptrdiff_t(size_t(g) * size_t(M) + ng));
      score.insert(score.end(), all_score.begin() + ptrdiff_t(size_t(g) * n),
                   all_score.begin() + ptrdiff_t(size_t(g) * n + ng - size_t(w)));
      want_attn.insert(want_attn.end(), want.attn[size_t(g)].begin(), want.attn[size_t(g)].end());
      want_score.insert(want_score.end(), want.score[size_t(g)].begin(), want.score[size_t(g)].end());
    }
    size_t attn_differ = 0, score_differ = 0, picked_differ = 0;
    for (size_t i = 0; i < attn.size(); i++) attn_differ += !(attn[i] == want_attn[i]);
    for (size_t i = 0; i < score.size(); i++) score_differ += !(score[i] == want_score[i]);
    for (int g = 0; g < Hk; g++) {
      const size_t ng = size_t(shape.len(g) - w);
      const auto first = all_score.begin() + ptrdiff_t(size_t(g) * n);
      const std::vector<float> row(first, first + ptrdiff_t(ng));
      const auto a = kv::top_tokens(row, int32_t(ng / 5)), b = kv::top_tokens(want.score[size_t(g)], int32_t(ng / 5));
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
  struct C {
    int Hk, G, D;
  };
  const C shapes[] = {{2, 4, 128}, {4, 2, 64}, {8, 4, 128}, {3, 3, 80}};
  int i = 0;
  for (const KvFormat& f : kPlainFormats)
    for (int32_t L : {40, 300, g_quick ? 1030 : 4099})  // quick: a shorter long one
      for (int32_t w : {1, 8, 32})
        for (int kernel : {1, 7}) {
          const C& s = shapes[size_t(i++ % 4)];
          window_case(f, s.Hk, s.G, s.D, L, w, kernel);
        }
  for (const KvFormat& f : kPlainFormats)  // heads of different lengths, as while a long document is read
    for (int32_t w : {1, 32}) {
      window_case(f, 8, 4, 128, 300, w, 7, true);
      window_case(f, 3, 3, 80, 40, w, 1, true);
    }
  for (const KvFormat& f : kQuantizedFormats) {  // the keys' type (and rotation) is what the scores read
    const C& s = shapes[size_t(i++ % 4)];
    window_case(f, s.Hk, s.G, s.D, 300, 32, 7);
    window_case(f, 3, 3, 80, 1030, 8, 7);
    window_case(f, 8, 4, 128, 300, 32, 7, true);
  }
}

// ---------------------------------------------------------------------------------------------------
// hadamard: the rotation of quantized entries (kv/hadamard.h), against its matrix reference in double. The
// CPU rotates inside its kernels (kv::hadamard, the butterfly that is checked here); a GPU through its table.
// Each output is a sum of `block` terms rounded log2(block) times: relative errors ~1e-7, NMSE ~1e-14.

void test_hadamard() {
  const bool device = !BE->host_memory();
  for (int32_t block : {2, 8, 16, 32, 64, 128, 256, 1024})
    for (int64_t rows : {int64_t(1), int64_t(7), int64_t(300)}) {
      const std::string desc = strfmt("block=%d rows=%lld", block, ll(rows));
      run_case("hadamard", desc, [&] {
        const std::vector<float> x = randn(size_t(rows) * size_t(block), 3.0f);
        std::vector<float> want = x, got = x;
        kv::hadamard_reference(want.data(), block, rows);
        if (device) {
          Dev d = up(x);
          gpu::rotate_rows(*gpu::status().api, d.as<float>(), rows, block);
          got = down<float>(d, x.size());
        } else {
          kv::hadamard(got.data(), block, rows);
        }
        report_nmse("hadamard", desc, nmse(got, want), 1e-12);
      });
    }
}

// ---------------------------------------------------------------------------------------------------

// Whether the GPU table has the entries an op of this suite calls ("kv": append and compaction).
bool gpu_has(const folio_gpu_api& a, const std::string& op) {
  if (op == "matmul") return a.matmul;
  if (op == "get_rows") return a.get_rows;
  if (op == "rms_norm") return a.rms_norm;
  if (op == "rope") return a.rope;
  if (op == "swiglu") return a.swiglu;
  if (op == "geglu") return a.geglu;
  if (op == "add") return a.add;
  if (op == "scale") return a.scale;
  if (op == "add_bias") return a.add_bias;
  if (op == "kv") return a.kv_append && a.kv_gather;
  if (op == "attention") return a.attention;
  if (op == "window_scores") return a.window_scores;
  if (op == "hadamard") return a.hadamard;
  return false;
}

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
  std::string only, which;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--seed" && i + 1 < argc) seed = unsigned(std::strtoul(argv[++i], nullptr, 10));
    else if (a == "--op" && i + 1 < argc) only = argv[++i];
    else if (a == "--quick") g_quick = true;
    else if (a == "--backend" && i + 1 < argc &&
             (std::string(argv[i + 1]) == "cpu" || std::string(argv[i + 1]) == "gpu"))
      which = argv[++i];
    else {
      std::fprintf(stderr, "usage: backend-ops [--seed S] [--op NAME[,NAME...]] [--backend cpu|gpu] [--quick]\n");
      return 2;
    }
  }
  struct Op {
    const char* name;
    void (*run)();
  };
  const Op ops[] = {{"matmul", test_matmul},
                    {"get_rows", test_get_rows},
                    {"rms_norm", test_rms_norm},
                    {"rope", test_rope},
                    {"swiglu", test_swiglu},
                    {"geglu", test_geglu},
                    {"add", test_add},
                    {"scale", test_scale},
                    {"add_bias", test_add_bias},
                    {"kv", test_kv},
                    {"attention", test_attention},
                    {"window_scores", test_window_scores},
                    {"hadamard", test_hadamard}};
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

  ThreadPool pool(0);
  P = &pool;
  std::unique_ptr<backend::Backend> cpu;
  std::shared_ptr<backend::Backend> gpu;
  std::vector<std::pair<backend::Backend*, std::string>> backends;  // (backend, what it runs on)
  if (which != "gpu") {
    cpu = backend::make_cpu_backend(pool);
    backends.emplace_back(cpu.get(), strfmt("%d threads, %s kernels", pool.size(), quant::isa_name(quant::best_isa())));
  }
  if (which != "cpu") {
    find_library(argc > 0 ? argv[0] : nullptr);
    // A backend still being written (libfolio-vulkan) may lack operations: load it anyway and test the
    // ones it has (the others are reported "not supported" below).
#if defined(_WIN32)
    _putenv_s("FOLIO_GPU_PARTIAL", "1");
#else
    setenv("FOLIO_GPU_PARTIAL", "1", 1);
#endif
    gpu::Kind kind = gpu::Kind::Cuda;
    if (gpu::status().available && gpu::kind_from_name(gpu::status().backend, kind)) {
      gpu = backend::gpu_backend(kind);
      backends.emplace_back(gpu.get(), gpu::status().reason);
    } else if (which == "gpu") {
      std::printf("backend-ops: SKIP: %s\n", gpu::status().reason.c_str());
      return 0;
    } else {
      std::printf("backend-ops: no GPU backend (%s)\n", gpu::status().reason.c_str());
    }
  }
  std::string times;
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& [be, where] : backends) {
    BE = be;
    g_dead = false;
    std::printf("backend-ops: %s on %s; seed %u\n", be->name(), where.c_str(), seed);
    for (const Op& op : ops) {
      if (!wanted(op.name) || g_dead) continue;
      if (be == gpu.get() && !gpu_has(*gpu::status().api, op.name)) {
        std::printf("backend-ops: %s is not supported by this GPU backend (not in its table): SKIP\n", op.name);
        continue;
      }
      rng.seed(seed);  // each op's inputs do not depend on which others run
      const auto t = std::chrono::steady_clock::now();
      op.run();
      times += strfmt(" %s:%s %.1fs", be->name(), op.name,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
    }
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("backend-ops: time%s; total %.1fs\n", times.c_str(), total);
  std::printf("backend-ops: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}
