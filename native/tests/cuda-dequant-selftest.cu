// The CUDA dequantizers (native/cuda/dequant.cuh, __host__ __device__) run on the host against the scalar
// reference (quant-scalar.cc, dequantize_row): every group of 8 of every quantized type the GPU backend
// takes must give the same bits. Built where nvcc is (libfolio-cuda's condition) and runs without a GPU;
// backend-ops checks the same code on the device.
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "dequant.cuh"
#include "quant/quant.h"

using namespace folio;

namespace {

int g_checks = 0, g_failures = 0;
std::mt19937 rng(20261206);

// n elements of `type` at buf: first as the engine quantizes normals, then as random bytes with sane
// fp16 scales at the byte offsets `f16` of every block (every scale, index and bit pattern).
template <class T>
void check(TensorType type, std::initializer_list<int> f16) {
  constexpr int kBlocks = 24;
  constexpr int n = kBlocks * T::kBlock;
  alignas(64) static uint8_t buf[kBlocks * T::kBytes];
  const quant::Kernels& k = quant::kernels(type, quant::Isa::Scalar);
  for (int variant = 0; variant < 2; ++variant) {
    if (variant == 0) {
      std::normal_distribution<float> nd(0, 1);
      std::vector<float> x(n);
      for (auto& v : x) v = nd(rng) * float(1 + rng() % 4);
      k.quantize_row(x.data(), buf, n);
    } else {
      for (auto& b : buf) b = uint8_t(rng());
      for (int b = 0; b < kBlocks; ++b) {
        for (int off : f16) {
          const uint16_t h = uint16_t((rng() & 0x8000) | ((8 + rng() % 9) << 10) | (rng() & 0x3ff));
          std::memcpy(buf + b * T::kBytes + off, &h, 2);
        }
      }
    }
    std::vector<float> ref(n);
    k.dequantize_row(buf, ref.data(), n);
    int bad = 0;
    for (int64_t g = 0; g < n / 8; ++g) {
      float out[8];
      cuda::dq::dequant_group<T>(buf, g, n, out);
      for (int i = 0; i < 8; ++i) {
        ++g_checks;
        if (std::memcmp(&out[i], &ref[size_t(8 * g + i)], 4) != 0) {
          ++g_failures;
          if (++bad <= 3)
            std::printf("FAIL %s %s element %lld: %.9g, reference %.9g\n", type_name(type),
                        variant ? "random bytes" : "quantized", (long long)(8 * g + i), out[i], ref[size_t(8 * g + i)]);
        }
      }
    }
  }
}

}  // namespace

int main() {
  using namespace cuda::dq;
  check<Q8_0>(TensorType::Q8_0, {0});
  check<Q4_0>(TensorType::Q4_0, {0});
  check<Q4_1>(TensorType::Q4_1, {0, 2});
  check<Q5_0>(TensorType::Q5_0, {0});
  check<Q5_1>(TensorType::Q5_1, {0, 2});
  check<Q4_K>(TensorType::Q4_K, {0, 2});
  check<Q5_K>(TensorType::Q5_K, {0, 2});
  check<Q6_K>(TensorType::Q6_K, {208});
  check<Q2_K>(TensorType::Q2_K, {80, 82});
  check<Q3_K>(TensorType::Q3_K, {108});
  check<IQ4_NL>(TensorType::IQ4_NL, {0});
  check<IQ4_XS>(TensorType::IQ4_XS, {0});
  std::printf("cuda dequant self-test (host): %d checks, %d failures\n", g_checks, g_failures);
  return g_failures ? 1 : 0;
}
