// Self-test of the blocked matrix-product kernels (Kernels::gemm) without Node: every ISA variant this
// CPU can run (AVX-512 with and without VNNI, NEON with and without dotprod), every weight type, against
// the scalar vec_dot one (row, token) at a time, on random inputs of awkward sizes: one row, one token,
// row and token counts that are no multiple of any tile. Also the driver (quant::matmul) with threads.
// Runs anywhere the engine builds, including arm64 under qemu-user. Exit status 1 on any mismatch.
//
// Tolerance: both results are float sums of T rounded terms (T = blocks, or elements for the float
// types) whose integer parts agree exactly, so they differ by at most 2·(T + 16)·2^-24·M, where M bounds
// the sum of the terms' magnitudes: M = Σ_k |x_k|·(|w_k| + max over k's block of |w|) on dequantized
// values (test/matmul.test.ts states the same bound).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu-ops.h"
#include "core/thread-pool.h"
#include "quant/kernels.h"
#include "quant/matmul.h"
#include "quant/repack.h"

using namespace folio;
using namespace folio::quant;

namespace {

int g_checks = 0, g_failures = 0;
std::mt19937_64 rng(20250101);

struct Variant {
  std::string name;
  Isa isa;
  KernelTable table;
};

const TensorType kTypes[] = {TensorType::F32,      TensorType::F16,     TensorType::BF16,    TensorType::Q8_0,
                             TensorType::Q4_0,     TensorType::Q4_1,    TensorType::Q5_0,    TensorType::Q5_1,
                             TensorType::Q4_K,     TensorType::Q5_K,    TensorType::Q6_K,    TensorType::Q4_K_R8,
                             TensorType::Q6_K_R8,  TensorType::Q8_0_R8, TensorType::Q2_K,    TensorType::Q3_K,
                             TensorType::IQ4_NL,   TensorType::IQ4_XS,  TensorType::Q3_K_R8, TensorType::Q2_K_R8,
                             TensorType::IQ4_XS_R8};

// A repacked layout is made from its file type's rows (quant/repack.h); the reference is that type's
// vec_dot on the rows as they were.
TensorType file_type(TensorType type) {
  return type == TensorType::Q4_K_R8     ? TensorType::Q4_K
         : type == TensorType::Q6_K_R8   ? TensorType::Q6_K
         : type == TensorType::Q8_0_R8   ? TensorType::Q8_0
         : type == TensorType::Q3_K_R8   ? TensorType::Q3_K
         : type == TensorType::Q2_K_R8   ? TensorType::Q2_K
         : type == TensorType::IQ4_XS_R8 ? TensorType::IQ4_XS
                                         : type;
}

// The matrix w (m rows of `type`, ldw apart, k elements) in `layout`, rows row_bytes(layout, k) apart.
std::vector<uint8_t> in_layout(TensorType type, TensorType layout, const std::vector<uint8_t>& w, size_t ldw, int64_t m,
                               int64_t k) {
  if (layout == type) return w;
  std::vector<uint8_t> out(row_bytes(layout, k) * size_t(m));
  repack_groups(type, layout, w.data(), ldw, k, 0, m / row_group(layout), out.data());
  return out;
}

std::vector<float> normals(int64_t n, float scale) {
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = nd(rng);
  return v;
}

void check_case(const std::vector<Variant>& variants, TensorType layout, int64_t m, int64_t blocks, int64_t n) {
  const TensorType type = file_type(layout);
  const Kernels& ref = variants[0].table[size_t(type)];
  const TypeInfo& ti = type_info(type);
  const int64_t block = ti.block_size == 1 ? 1 : ti.block_size;
  const int64_t k = ti.block_size == 1 ? blocks : blocks * ti.block_size;
  const TensorType xt = vec_dot_type(type);
  const Kernels& xref = variants[0].table[size_t(xt)];
  const size_t ldw = row_bytes(type, k), ldx = row_bytes(xt, k);
  std::vector<uint8_t> w(ldw * size_t(m)), x(ldx * size_t(n));
  std::vector<float> wd(size_t(m * k)), xd(size_t(n * k));
  for (int64_t r = 0; r < m; ++r) {
    const std::vector<float> f = normals(k, 0.05f * float(1 + r % 5));
    ref.quantize_row(f.data(), w.data() + size_t(r) * ldw, k);
    // A file's Q8_0 weights may hold -128, which the quantizer never writes (the kernels' sign and bias
    // tricks must take it): one in every third row.
    if (type == TensorType::Q8_0 && r % 3 == 0)
      w[size_t(r) * ldw + 2 + size_t(r / 3) % 32] = 0x80;  // (d, then 32 quants)
    ref.dequantize_row(w.data() + size_t(r) * ldw, wd.data() + r * k, k);
  }
  for (int64_t t = 0; t < n; ++t) {
    const std::vector<float> f = normals(k, 2.0f);
    xref.quantize_row(f.data(), x.data() + size_t(t) * ldx, k);
    xref.dequantize_row(x.data() + size_t(t) * ldx, xd.data() + t * k, k);
  }
  std::vector<float> want(size_t(m * n)), bound(size_t(m * n));
  const int64_t terms = ti.block_size == 1 ? k : blocks;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t r = 0; r < m; ++r) {
      want[size_t(t * m + r)] = ref.vec_dot(k, w.data() + size_t(r) * ldw, x.data() + size_t(t) * ldx);
      double mag = 0;
      for (int64_t b = 0; b < k; b += block) {
        double big = 0;
        for (int64_t i = b; i < b + block; ++i) big = std::max(big, double(std::fabs(wd[size_t(r * k + i)])));
        for (int64_t i = b; i < b + block; ++i) {
          mag += (std::fabs(double(wd[size_t(r * k + i)])) + big) * std::fabs(double(xd[size_t(t * k + i)]));
        }
      }
      bound[size_t(t * m + r)] = float(2.0 * double(terms + 16) * std::ldexp(1.0, -24) * mag);
    }
  }
  auto compare = [&](const Variant& v, const char* kernel, const std::vector<float>& got) {
    int bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      ++g_checks;
      if (!(std::fabs(got[i] - want[i]) <= bound[i])) {
        ++g_failures;
        if (++bad <= 3 && g_failures <= 50) {
          std::printf("FAIL %s %s %s m=%lld k=%lld n=%lld: out %zu = %.9g, reference %.9g, bound %.3g\n",
                      v.name.c_str(), kernel, type_name(layout), (long long)m, (long long)k, (long long)n, i, got[i],
                      want[i], bound[i]);
        }
      }
    }
  };
  const std::vector<uint8_t> wl = in_layout(type, layout, w, ldw, m, k);
  const size_t ldl = row_bytes(layout, k);
  if (layout != type) {  // repacking keeps every value
    std::vector<float> row(static_cast<size_t>(k));
    for (int64_t r = 0; r < m; ++r) {
      dequantize_repacked_row(layout, wl.data() + size_t(r / 8) * 8 * ldl, int(r % 8), k, row.data());
      ++g_checks;
      if (std::memcmp(row.data(), wd.data() + r * k, size_t(k) * sizeof(float)) != 0 && ++g_failures <= 50)
        std::printf("FAIL repack %s m=%lld k=%lld: row %lld differs\n", type_name(layout), (long long)m, (long long)k,
                    (long long)r);
    }
  }
  for (const Variant& v : variants) {
    const Kernels& kk = v.table[size_t(layout)];
    if (kk.gemm) {
      std::vector<float> got(size_t(m * n), NAN);
      kk.gemm(k, wl.data(), ldl, x.data(), ldx, got.data(), m, m, n);
      compare(v, "gemm", got);
    }
    if (kk.gemv) {  // the matrix-vector kernel takes any token count too (in groups of up to three)
      std::vector<float> got(size_t(m * n), NAN);
      kk.gemv(k, wl.data(), ldl, x.data(), ldx, got.data(), m, m, n);
      compare(v, "gemv", got);
    }
  }
}

// The driver with threads: blocked and vec_dot paths against the scalar reference; n = 21 tokens takes
// the blocked kernels, 1–3 the matrix-vector path, whose rows (several steps of parallel_ranges here)
// the three threads split and steal.
void check_driver(TensorType layout, int64_t rows, int64_t n) {
  const TensorType type = file_type(layout);
  const TypeInfo& ti = type_info(type);
  const int64_t k = ti.block_size == 1 ? 96 : (ti.block_size == 32 ? 8 : 2) * int64_t(ti.block_size);
  const Kernels& ref = kernels(type, Isa::Scalar);
  const size_t ldw = row_bytes(type, k);
  std::vector<uint8_t> w(ldw * rows);
  for (int64_t r = 0; r < rows; ++r) ref.quantize_row(normals(k, 0.1f).data(), w.data() + size_t(r) * ldw, k);
  const std::vector<float> x = normals(n * k, 1.0f);
  MatrixRef mr;
  mr.data = w.data(), mr.type = type, mr.rows = rows, mr.cols = k, mr.ldw = ldw;
  ThreadPool one(1), three(3);
  std::vector<uint8_t> act;
  std::vector<float> want(size_t(rows * n));
  matmul_reference(one, mr, x.data(), n, want.data(), act, Isa::Scalar);
  const std::vector<uint8_t> wl = in_layout(type, layout, w, ldw, rows, k);
  mr.data = wl.data(), mr.type = layout, mr.ldw = row_bytes(layout, k);
  for (int i = 0; i < kIsaCount; ++i) {
    if (!isa_available(Isa(i))) continue;
    for (MatmulPath path : {MatmulPath::Auto, MatmulPath::Blocked, MatmulPath::VecDot}) {
      std::vector<float> got(want.size(), NAN);
      matmul(three, mr, x.data(), n, got.data(), act, Isa(i), path);
      for (size_t j = 0; j < got.size(); ++j) {
        ++g_checks;
        // loose here: the exact bound is checked per kernel above; this catches indexing mistakes
        if (!(std::fabs(got[j] - want[j]) <= 1e-4f * (1.0f + std::fabs(want[j])))) {
          if (++g_failures <= 50) {
            std::printf("FAIL driver %s %s path %d rows %lld n %lld: out %zu = %.9g, reference %.9g\n",
                        isa_name(Isa(i)), type_name(type), int(path), (long long)rows, (long long)n, j, got[j],
                        want[j]);
          }
          break;
        }
      }
    }
  }
}

// Several products with one input (cpu::matmuls, the forward pass's q/k/v and gate/up), which converts
// the input once for the matrices that share an activation format, give exactly the bytes of one
// cpu::matmul per matrix: here Q8_0 repacked, Q8_0 as in the file (rows no multiple of 8), Q4_K, F16
// and Q8_0 again, for a token count of each path.
void check_shared_input() {
  const int64_t k = 256;
  struct M {
    TensorType file, layout;
    int64_t rows;
  };
  const M ms[] = {{TensorType::Q8_0, cpu_layout(TensorType::Q8_0, 16, best_isa()), 16},
                  {TensorType::Q8_0, TensorType::Q8_0, 12},
                  {TensorType::Q4_K, TensorType::Q4_K, 8},
                  {TensorType::F16, TensorType::F16, 5},
                  {TensorType::Q8_0, TensorType::Q8_0, 9}};
  std::vector<std::vector<uint8_t>> data;
  std::vector<Weight> ws;
  for (const M& m : ms) {
    const size_t ld = row_bytes(m.file, k);
    std::vector<uint8_t> w(ld * size_t(m.rows));
    for (int64_t r = 0; r < m.rows; ++r)
      kernels(m.file, Isa::Scalar).quantize_row(normals(k, 0.1f).data(), w.data() + size_t(r) * ld, k);
    data.push_back(in_layout(m.file, m.layout, w, ld, m.rows, k));
  }
  for (size_t i = 0; i < std::size(ms); ++i) {
    Weight w;
    w.data = data[i].data(), w.type = ms[i].layout, w.cols = k, w.rows = ms[i].rows;
    w.row_bytes = row_bytes(ms[i].layout, k);
    ws.push_back(w);
  }
  ThreadPool pool(2);
  for (int64_t n : {1, 3, 7}) {
    const std::vector<float> x = normals(n * k, 1.0f);
    std::vector<std::vector<float>> want, got;
    cpu::Scratch s;
    for (const Weight& w : ws) {
      want.emplace_back(size_t(n * w.rows));
      got.emplace_back(size_t(n * w.rows), NAN);
      cpu::matmul(pool, s, w, x.data(), n, want.back().data());
    }
    cpu::matmuls(pool, s, x.data(), n,
                 {{&ws[0], got[0].data()},
                  {&ws[1], got[1].data()},
                  {&ws[2], got[2].data()},
                  {&ws[3], got[3].data()},
                  {&ws[4], got[4].data()}});
    for (size_t i = 0; i < ws.size(); ++i) {
      ++g_checks;
      if (std::memcmp(got[i].data(), want[i].data(), want[i].size() * sizeof(float)) != 0 && ++g_failures <= 50)
        std::printf("FAIL shared input: %s, n=%lld, differs from its own product\n", type_name(ws[i].type),
                    (long long)n);
    }
  }
}

}  // namespace

int main() {
  std::vector<Variant> variants;
  variants.push_back({"scalar", Isa::Scalar, build_kernel_table(Isa::Scalar, false)});
  for (Isa isa : {Isa::AVX2, Isa::AVX512, Isa::NEON}) {
    if (!isa_available(isa)) continue;
    variants.push_back({isa_name(isa), isa, build_kernel_table(isa, false)});
    bool has_ext = false;
#if FOLIO_QUANT_X86
    if (isa == Isa::AVX512) has_ext = cpu_has_avx512_vnni();
    if (isa == Isa::AVX2) has_ext = cpu_has_avx_vnni();
#endif
#if FOLIO_QUANT_NEON
    if (isa == Isa::NEON) has_ext = cpu_has_neon_dotprod();
#endif
    if (has_ext) variants.push_back({std::string(isa_name(isa)) + "+ext", isa, build_kernel_table(isa, true)});
  }
  std::printf("matmul self-test; variants:");
  for (const auto& v : variants) {
    int with = 0;
    for (TensorType t : kTypes) with += v.table[size_t(t)].gemm != nullptr;
    std::printf(" %s (%d blocked)", v.name.c_str(), with);
  }
  std::printf("\n");
  // rows × blocks (elements for float types) × tokens
  const int64_t shapes[][3] = {{1, 1, 1}, {1, 3, 5}, {5, 1, 2}, {3, 2, 7}, {7, 2, 4}, {13, 3, 9}, {10, 5, 13}};
  const int64_t float_k[] = {1, 7, 33, 100, 16, 45, 64};
  for (TensorType type : kTypes) {
    // a repacked layout has whole groups of rows
    const int64_t g = row_group(type);
    auto rows = [g](int64_t m) { return (m + g - 1) / g * g; };
    int s = 0;
    for (const auto& sh : shapes) {
      const bool flt = type_info(type).block_size == 1;
      check_case(variants, type, rows(sh[0]), flt ? float_k[s] : sh[1], sh[2]);
      ++s;
    }
    check_driver(type, rows(45), 21);
    for (int64_t n : {1, 2, 3}) check_driver(type, 1000, n);
  }
  check_shared_input();
  // A matrix whose rows do not fill whole groups keeps the file's layout, on every ISA.
  for (int i = 0; i < kIsaCount; ++i)
    for (TensorType type : {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0, TensorType::Q3_K, TensorType::Q2_K,
                            TensorType::IQ4_XS}) {
      ++g_checks;
      if (cpu_layout(type, 12, Isa(i)) != type && ++g_failures <= 50)
        std::printf("FAIL %s keeps %s with 12 rows\n", isa_name(Isa(i)), type_name(type));
    }
  std::printf("%d checks, %d failures\n", g_checks, g_failures);
  return g_failures ? 1 : 0;
}
