// Self-test of the quant kernels without Node: every ISA (and ISA variant, e.g. AVX-512 with and without
// VNNI, NEON with and without dotprod) against the scalar reference on random blocks, and the scalar dot
// products against a float64 sum over dequantized values. Runs anywhere the engine builds, including
// arm64 under qemu-user. Prints a summary; exit status 1 on any mismatch.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/kernels.h"

using namespace folio;
using namespace folio::quant;

namespace {

int g_checks = 0, g_failures = 0;

void check(bool ok, const std::string& what) {
  ++g_checks;
  if (!ok) {
    ++g_failures;
    if (g_failures <= 50) std::printf("FAIL %s\n", what.c_str());
  }
}

std::mt19937_64 rng(20240601);

// An fp16 of moderate magnitude (2^-10 .. 2^5), random sign unless positive.
uint16_t sane_f16(bool positive = false, int emin = 5, int emax = 20) {
  const uint16_t sign = (!positive && (rng() & 1)) ? 0x8000 : 0;
  const uint16_t exp = uint16_t(emin + rng() % uint64_t(emax - emin + 1));
  return uint16_t(sign | (exp << 10) | (rng() & 0x3ff));
}

int8_t q8() { return int8_t(int(rng() % 255) - 127); }  // -127..127, as the quantizers produce

void put16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// Random bytes forming n elements of `type` with sane scales (no NaN/inf) and consistent sums.
std::vector<uint8_t> random_row(TensorType type, int64_t n) {
  const TypeInfo& ti = type_info(type);
  const int64_t nb = n / ti.block_size;
  std::vector<uint8_t> row(size_t(nb) * ti.type_size);
  for (auto& b : row) b = uint8_t(rng());
  for (int64_t ib = 0; ib < nb; ++ib) {
    uint8_t* p = row.data() + ib * ti.type_size;
    switch (type) {
      case TensorType::F32: {
        std::uniform_real_distribution<float> u(-4, 4);
        const float f = u(rng);
        std::memcpy(p, &f, 4);
        break;
      }
      case TensorType::F16: put16(p, sane_f16()); break;
      case TensorType::BF16: put16(p, f32_to_bf16(fp16_to_f32(sane_f16()))); break;
      case TensorType::Q4_0:
      case TensorType::Q5_0: put16(p, sane_f16(false, 8, 16)); break;
      case TensorType::Q4_1:
      case TensorType::Q5_1:
      case TensorType::Q4_K:
      case TensorType::Q5_K:
        put16(p, sane_f16(false, 8, 16));
        put16(p + 2, sane_f16(false, 8, 16));
        break;
      case TensorType::Q6_K: put16(p + 208, sane_f16(false, 8, 16)); break;
      case TensorType::Q2_K:
        put16(p + 80, sane_f16(false, 8, 16));
        put16(p + 82, sane_f16(false, 8, 16));
        break;
      case TensorType::Q3_K: put16(p + 108, sane_f16(false, 8, 16)); break;
      case TensorType::IQ4_NL:
      case TensorType::IQ4_XS: put16(p, sane_f16(false, 8, 16)); break;
      case TensorType::Q8_0: {
        put16(p, sane_f16(false, 8, 16));
        for (int i = 0; i < 32; ++i) p[2 + i] = uint8_t(q8());
        break;
      }
      case TensorType::Q8_1: {
        const uint16_t d = sane_f16(false, 8, 16);
        put16(p, d);
        int sum = 0;
        for (int i = 0; i < 32; ++i) {
          const int8_t q = q8();
          p[4 + i] = uint8_t(q);
          sum += q;
        }
        put16(p + 2, f32_to_fp16(float(sum) * fp16_to_f32(d)));
        break;
      }
      case TensorType::Q8_K: {
        BlockQ8_K blk;
        blk.d = std::ldexp(float(rng() % 1000 + 1) / 1000.0f, -int(rng() % 8));
        for (int g = 0; g < 16; ++g) {
          int sum = 0;
          for (int i = 0; i < 16; ++i) {
            blk.qs[16 * g + i] = q8();
            sum += blk.qs[16 * g + i];
          }
          blk.bsums[g] = int16_t(sum);
        }
        std::memcpy(p, &blk, sizeof blk);
        break;
      }
      default: break;
    }
  }
  return row;
}

std::vector<float> random_floats(int64_t n, float scale) {
  std::normal_distribution<float> nd(0, scale);
  std::vector<float> v(static_cast<size_t>(n), 0.0f);
  for (auto& f : v) f = nd(rng);
  return v;
}

bool same_bits(const float* a, const float* b, int64_t n) { return std::memcmp(a, b, size_t(n) * 4) == 0; }

struct Variant {
  std::string name;
  KernelTable table;
};

const TensorType kTypes[] = {TensorType::F32,   TensorType::F16,  TensorType::BF16, TensorType::Q8_0,
                             TensorType::Q8_1,  TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0,
                             TensorType::Q5_1,  TensorType::Q8_K, TensorType::Q4_K, TensorType::Q5_K,
                             TensorType::Q6_K,  TensorType::Q2_K, TensorType::Q3_K, TensorType::IQ4_NL,
                             TensorType::IQ4_XS};

bool is_activation(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16 || t == TensorType::Q8_0 ||
         t == TensorType::Q8_1 || t == TensorType::Q8_K;
}

}  // namespace

int main() {
  std::vector<Variant> variants;
  variants.push_back({"scalar", build_kernel_table(Isa::Scalar, false)});
  for (Isa isa : {Isa::AVX2, Isa::AVX512, Isa::NEON}) {
    if (!isa_available(isa)) continue;
    if (isa == Isa::AVX2) {
      variants.push_back({"avx2", build_kernel_table(isa, false)});
      continue;
    }
    const char* ext = isa == Isa::AVX512 ? "vnni" : "dotprod";
    bool has_ext = false;
#if FOLIO_QUANT_X86
    if (isa == Isa::AVX512) has_ext = cpu_has_avx512_vnni();
#endif
#if FOLIO_QUANT_NEON
    if (isa == Isa::NEON) has_ext = cpu_has_neon_dotprod();
#endif
    variants.push_back({isa_name(isa), build_kernel_table(isa, false)});
    if (has_ext) variants.push_back({std::string(isa_name(isa)) + "+" + ext, build_kernel_table(isa, true)});
  }
  std::printf("quant self-test; best ISA %s; variants:", isa_name(best_isa()));
  for (const auto& v : variants) std::printf(" %s", v.name.c_str());
  std::printf("\n");

  const Kernels* ref = nullptr;
  for (TensorType type : kTypes) {
    const TypeInfo& ti = type_info(type);
    ref = &variants[0].table[size_t(type)];
    const int block = int(ti.block_size);
    for (int64_t nblocks : {1, 3, 17, 64}) {
      const int64_t n = nblocks * (block == 1 ? 37 : block);  // awkward float lengths too
      const std::vector<uint8_t> w = random_row(type, n);
      std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
      ref->dequantize_row(w.data(), want.data(), n);
      const std::vector<float> xf = random_floats(n, 1.5f);
      std::vector<uint8_t> q_ref(w.size()), q_got(w.size());
      ref->quantize_row(xf.data(), q_ref.data(), n);

      // vec_dot operands and the float64 reference
      const bool has_dot = ref->vec_dot != nullptr;
      TensorType xt = type;
      std::vector<uint8_t> xq;
      double exact = 0, mag = 0;
      float dot_ref = 0;
      if (has_dot) {
        xt = vec_dot_type(type);
        xq = random_row(xt, n);
        std::vector<float> xd(static_cast<size_t>(n));
        variants[0].table[size_t(xt)].dequantize_row(xq.data(), xd.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          exact += double(want[i]) * double(xd[i]);
          mag += std::fabs(double(want[i]) * double(xd[i]));
        }
        if (xt == TensorType::Q8_1) {
          // The format's offset term is m·s with s = fp16(d·Σq) stored in the activation block, not
          // m·d·Σq: the reference takes the stored s, as the kernels must.
          for (int64_t ib = 0; ib < n / QK; ++ib) {
            BlockQ8_1 xb;
            std::memcpy(&xb, xq.data() + ib * sizeof(BlockQ8_1), sizeof xb);
            uint16_t m;
            std::memcpy(&m, w.data() + ib * ti.type_size + 2, 2);
            int sum = 0;
            for (int i = 0; i < QK; ++i) sum += xb.qs[i];
            exact += double(fp16_to_f32(m)) * (double(fp16_to_f32(xb.s)) - double(fp16_to_f32(xb.d)) * sum);
          }
        }
        dot_ref = ref->vec_dot(n, w.data(), xq.data());
        const std::string what = std::string(ti.name) + " scalar vec_dot vs float64, n=" + std::to_string(n);
        check(std::fabs(dot_ref - exact) <= 1e-5 * mag + 1e-30, what);
      }

      for (size_t v = 1; v < variants.size(); ++v) {
        const Kernels& k = variants[v].table[size_t(type)];
        const std::string tag = std::string(ti.name) + " " + variants[v].name + " n=" + std::to_string(n);
        std::fill(got.begin(), got.end(), -1.0f);
        k.dequantize_row(w.data(), got.data(), n);
        check(same_bits(want.data(), got.data(), n), tag + " dequantize bit-identical");
        if (is_activation(type)) {
          std::fill(q_got.begin(), q_got.end(), 0xAB);
          k.quantize_row(xf.data(), q_got.data(), n);
          check(q_got == q_ref, tag + " quantize bit-identical");
        }
        if (has_dot) {
          const float dot = k.vec_dot(n, w.data(), xq.data());
          check(std::fabs(dot - dot_ref) <= 1e-5 * mag + 1e-30,
                tag + " vec_dot " + std::to_string(dot) + " vs scalar " + std::to_string(dot_ref));
        }
      }
    }
  }

  // Q8_K's sign tie: +a and -a both present; the first one decides, in every ISA.
  {
    std::vector<float> x(256, 0.25f);
    x[10] = -3.0f;
    x[200] = 3.0f;
    std::vector<uint8_t> r(292), g(292);
    variants[0].table[size_t(TensorType::Q8_K)].quantize_row(x.data(), r.data(), 256);
    for (size_t v = 1; v < variants.size(); ++v) {
      variants[v].table[size_t(TensorType::Q8_K)].quantize_row(x.data(), g.data(), 256);
      check(r == g, "Q8_K tie " + variants[v].name);
    }
  }

  std::printf("%d checks, %d failures\n", g_checks, g_failures);
  return g_failures ? 1 : 0;
}
