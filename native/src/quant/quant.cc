// Kernel dispatch: which ISAs this build and this CPU have, and the kernel table of each ISA.
#include "quant/quant.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "quant/blocks.h"
#include "quant/gemm.h"
#include "quant/kernels.h"

#if FOLIO_QUANT_NEON && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace folio::quant {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::AVX2: return "avx2";
    case Isa::AVX512: return "avx512";
    case Isa::NEON: return "neon";
  }
  return "unknown";
}

#if FOLIO_QUANT_X86
static bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}
static bool cpu_has_avx512() {
  // The AVX-512 table falls back to AVX2 kernels, so it needs everything AVX2 needs.
  return cpu_has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
bool cpu_has_avx512_vnni() { return cpu_has_avx512() && __builtin_cpu_supports("avx512vnni"); }
bool cpu_has_avx512_bf16() { return cpu_has_avx512() && __builtin_cpu_supports("avx512bf16"); }
bool cpu_has_avx_vnni() {
  const char* env = std::getenv("FOLIO_AVX_VNNI");
  if (env && std::strcmp(env, "0") == 0) return false;
#if FOLIO_AVX_VNNI_VIA_AVX512
  return cpu_has_avx512_vnni();  // the AVX-VNNI kernels compiled over AVX512-VNNI (kernels.h)
#else
  return cpu_has_avx2() && __builtin_cpu_supports("avxvnni");
#endif
}
#endif

#if FOLIO_QUANT_NEON
bool cpu_has_neon_dotprod() {
#if defined(__linux__) && defined(HWCAP_ASIMDDP)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#elif defined(__APPLE__)
  return true;  // every Apple arm64 CPU has it
#else
  return false;
#endif
}
#endif

bool isa_available(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return true;
#if FOLIO_QUANT_X86
    case Isa::AVX2: return cpu_has_avx2();
    case Isa::AVX512: return cpu_has_avx512();
#endif
#if FOLIO_QUANT_NEON
    case Isa::NEON: return true;  // Advanced SIMD is part of the arm64 baseline
#endif
    default: return false;
  }
}

static Isa detect_best_isa() {
  Isa best = Isa::Scalar;
  for (Isa isa : {Isa::NEON, Isa::AVX2, Isa::AVX512}) {
    if (isa_available(isa)) best = isa;
  }
  // FOLIO_ISA can only lower the choice: asking for an ISA the CPU lacks keeps the best one.
  if (const char* env = std::getenv("FOLIO_ISA"); env && *env) {
    bool known = false;
    for (int i = 0; i < kIsaCount; ++i) {
      const Isa isa = Isa(i);
      if (std::strcmp(env, isa_name(isa)) != 0) continue;
      known = true;
      const bool lower = isa == Isa::Scalar || (isa == Isa::AVX2 && best == Isa::AVX512);
      if (isa_available(isa) && (lower || isa == best)) best = isa;
    }
    if (!known) {
      std::fprintf(stderr, "folio: ignoring unknown FOLIO_ISA=%s (scalar, avx2, avx512, neon)\n", env);
    } else if (std::strcmp(env, isa_name(best)) != 0) {
      std::fprintf(stderr, "folio: FOLIO_ISA=%s is not available on this CPU, using %s\n", env, isa_name(best));
    }
  }
  return best;
}

Isa best_isa() {
  static const Isa best = detect_best_isa();
  return best;
}

TensorType vec_dot_type(TensorType weight) {
  switch (weight) {
    case TensorType::F32: return TensorType::F32;
    case TensorType::F16: return TensorType::F16;
    case TensorType::BF16: return TensorType::BF16;
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q8_0:
    case TensorType::Q8_0_R8: return TensorType::Q8_0;
    case TensorType::Q4_1:
    case TensorType::Q5_1: return TensorType::Q8_1;
    case TensorType::IQ4_NL: return TensorType::Q8_0;
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::IQ4_XS:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
    case TensorType::Q4_K_R8:
    case TensorType::Q6_K_R8:
    case TensorType::Q3_K_R8:
    case TensorType::Q2_K_R8:
    case TensorType::IQ4_XS_R8: return TensorType::Q8_K;
    default: break;
  }
  const TypeInfo* ti = type_info(uint32_t(weight));
  if (ti && (weight == TensorType::Q8_1 || weight == TensorType::Q8_K)) {
    fail("UNSUPPORTED_TYPE", strfmt("%s is an activation format: it has no dot product of its own", ti->name));
  }
  fail("UNSUPPORTED_TYPE",
       strfmt("no dot product for tensor type %s", ti ? ti->name : strfmt("%u", uint32_t(weight)).c_str()));
}

KernelTable build_kernel_table(Isa isa, bool use_extension) {
  if (!isa_available(isa)) fail("INVALID_ARGUMENT", strfmt("ISA %s is not available on this CPU", isa_name(isa)));
  KernelTable t{};
  add_scalar_kernels(t);
  add_repacked_scalar_kernels(t);
#if FOLIO_QUANT_X86
  if (isa == Isa::AVX2 || isa == Isa::AVX512) add_avx2_kernels(t);
  if (isa == Isa::AVX512) add_avx512_kernels(t, use_extension);
  // The blocked kernels last: the tables above assign whole entries.
  if (isa == Isa::AVX2 || isa == Isa::AVX512) add_avx2_gemm(t, isa == Isa::AVX2 && use_extension);
  if (isa == Isa::AVX512) add_avx512_gemm(t, use_extension);
  if (isa == Isa::AVX2) add_r8_kernels(t, use_extension ? R8Dot::AvxVnni : R8Dot::Madd);
  if (isa == Isa::AVX512) add_r8_kernels(t, use_extension ? R8Dot::Avx512Vnni : R8Dot::Madd);
#endif
#if FOLIO_QUANT_NEON
  if (isa == Isa::NEON) add_neon_kernels(t, use_extension);
  if (isa == Isa::NEON) add_neon_gemm(t, use_extension);
#endif
  return t;
}

namespace {

struct Tables {
  KernelTable by_isa[kIsaCount];
  bool built[kIsaCount] = {};
};

const Tables& tables() {
  static const Tables t = [] {
    Tables r;
    for (int i = 0; i < kIsaCount; ++i) {
      const Isa isa = Isa(i);
      if (!isa_available(isa)) continue;
      bool ext = false;
#if FOLIO_QUANT_X86
      if (isa == Isa::AVX512) ext = cpu_has_avx512_vnni();
      if (isa == Isa::AVX2) ext = cpu_has_avx_vnni();
#endif
#if FOLIO_QUANT_NEON
      if (isa == Isa::NEON) ext = cpu_has_neon_dotprod();
#endif
      r.by_isa[i] = build_kernel_table(isa, ext);
      r.built[i] = true;
    }
    return r;
  }();
  return t;
}

// Sizes of our block structs, checked once against the type table (types.cc) they must agree with.
bool block_sizes_match() {
  struct {
    TensorType t;
    size_t bytes;
    uint32_t elems;
  } expect[] = {
      {TensorType::Q4_0, sizeof(BlockQ4_0), QK},
      {TensorType::Q4_1, sizeof(BlockQ4_1), QK},
      {TensorType::Q5_0, sizeof(BlockQ5_0), QK},
      {TensorType::Q5_1, sizeof(BlockQ5_1), QK},
      {TensorType::Q8_0, sizeof(BlockQ8_0), QK},
      {TensorType::Q8_1, sizeof(BlockQ8_1), QK},
      {TensorType::Q4_K, sizeof(BlockQ4_K), QK_K},
      {TensorType::Q5_K, sizeof(BlockQ5_K), QK_K},
      {TensorType::Q6_K, sizeof(BlockQ6_K), QK_K},
      {TensorType::Q8_K, sizeof(BlockQ8_K), QK_K},
      {TensorType::Q2_K, sizeof(BlockQ2_K), QK_K},
      {TensorType::Q3_K, sizeof(BlockQ3_K), QK_K},
      {TensorType::IQ4_NL, sizeof(BlockIQ4_NL), QK},
      {TensorType::IQ4_XS, sizeof(BlockIQ4_XS), QK_K},
      {TensorType::Q4_K_R8, sizeof(BlockQ4_Kx8) / 8, QK_K},
      {TensorType::Q6_K_R8, sizeof(BlockQ6_Kx8) / 8, QK_K},
      {TensorType::Q8_0_R8, sizeof(BlockQ8_0x8) / 8, QK},
      {TensorType::Q3_K_R8, sizeof(BlockQ3_Kx8) / 8, QK_K},
      {TensorType::Q2_K_R8, sizeof(BlockQ2_Kx8) / 8, QK_K},
      {TensorType::IQ4_XS_R8, sizeof(BlockIQ4_XSx8) / 8, QK_K},
      {TensorType::F32, 4, 1},
      {TensorType::F16, 2, 1},
      {TensorType::BF16, 2, 1},
  };
  for (const auto& e : expect) {
    const TypeInfo& ti = type_info(e.t);
    if (ti.type_size != e.bytes || ti.block_size != e.elems) return false;
  }
  return true;
}

}  // namespace

const Kernels& kernels(TensorType type, Isa isa) {
  static const bool sizes_ok = block_sizes_match();
  if (!sizes_ok) fail("INTERNAL", "quant block structs disagree with the tensor type table");
  const uint32_t id = uint32_t(type);
  const TypeInfo* ti = type_info(id);
  if (!ti) fail("UNSUPPORTED_TYPE", strfmt("unknown tensor type id %u", id));
  const int i = int(isa);
  if (i < 0 || i >= kIsaCount) fail("INVALID_ARGUMENT", strfmt("unknown ISA %d", i));
  const Tables& t = tables();
  if (!t.built[i]) fail("INVALID_ARGUMENT", strfmt("ISA %s is not available on this CPU", isa_name(isa)));
  const Kernels& k = t.by_isa[i][id];
  // (A repacked layout has matrix products only: its rows are not contiguous.)
  if (!k.dequantize_row && !k.gemv) fail("UNSUPPORTED_TYPE", strfmt("no kernels for tensor type %s", ti->name));
  return k;
}

bool weight_type_supported(TensorType type) {
  const TypeInfo* ti = type_info(uint32_t(type));
  if (!ti || ti->internal) return false;
  const Kernels& k = tables().by_isa[int(Isa::Scalar)][size_t(type)];
  return k.dequantize_row && k.vec_dot;
}

}  // namespace folio::quant
