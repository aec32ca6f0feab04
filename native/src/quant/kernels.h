// Internal to the quant module: how the per-ISA kernel files hand their kernels to the dispatcher
// (quant.cc). Each ISA file fills the entries it specialises in a table indexed by ggml type id; the
// dispatcher starts every ISA's table from the next lower ISA's, so unspecialised entries fall back.
#pragma once
#include <array>

#include "quant/quant.h"

// x86 SIMD kernels are compiled per function with target attributes (GCC and Clang); other compilers
// get the scalar kernels only.
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define FOLIO_QUANT_X86 1
#else
#define FOLIO_QUANT_X86 0
#endif
// The AVX-VNNI kernels (the VEX-encoded 256-bit vpdpbusd and vpdpwssd of Intel's cores since Alder Lake and
// Xeons since Sapphire Rapids) compile for FOLIO_AVX_VNNI_TARGET with FOLIO_DPBUSD256 / FOLIO_DPWSSD256. None of the
// machines the tests run on has AVX-VNNI (and QEMU's TCG does not emulate it), so matmul-avxvnni-selftest compiles the
// quant module again with FOLIO_AVX_VNNI_VIA_AVX512: the same kernels over the EVEX form of the same instruction
// (AVX512-VNNI on 256-bit vectors), which a CPU with AVX512-VNNI runs against the scalar reference.
#if FOLIO_AVX_VNNI_VIA_AVX512
#define FOLIO_AVX_VNNI_TARGET "avx2,fma,f16c,avx512f,avx512vl,avx512vnni"
#define FOLIO_DPBUSD256 _mm256_dpbusd_epi32
#define FOLIO_DPWSSD256 _mm256_dpwssd_epi32
#else
#define FOLIO_AVX_VNNI_TARGET "avx2,fma,f16c,avxvnni"
#define FOLIO_DPBUSD256 _mm256_dpbusd_avx_epi32
#define FOLIO_DPWSSD256 _mm256_dpwssd_avx_epi32
#endif
#define FOLIO_AVX_VNNI __attribute__((target(FOLIO_AVX_VNNI_TARGET)))
#define FOLIO_AVX_VNNI_INLINE __attribute__((target(FOLIO_AVX_VNNI_TARGET), always_inline)) inline
#if defined(__aarch64__) && defined(__ARM_NEON)
#define FOLIO_QUANT_NEON 1
#else
#define FOLIO_QUANT_NEON 0
#endif

namespace folio::quant {

constexpr int kTypeSlots = 46;  // ggml type ids 0..39, then Folio's Q4_K_R8 .. IQ4_XS_R8 (types.h)
using KernelTable = std::array<Kernels, kTypeSlots>;

inline Kernels& slot(KernelTable& t, TensorType type) { return t[size_t(type)]; }

void add_scalar_kernels(KernelTable& t);
// The repacked layouts' portable kernels (repack.cc): the reference the SIMD ones are checked against.
void add_repacked_scalar_kernels(KernelTable& t);
#if FOLIO_QUANT_X86
void add_avx2_kernels(KernelTable& t);
// vnni: the CPU has AVX512-VNNI (vpdpbusd); without it the integer dots use vpmaddubsw.
void add_avx512_kernels(KernelTable& t, bool vnni);
bool cpu_has_avx512_vnni();
// AVX512-BF16 (vdpbf16ps): the AVX-512 extension table's BF16 products (gemm-avx512.cc).
bool cpu_has_avx512_bf16();
// AVX-VNNI (the VEX-encoded 256-bit vpdpbusd, e.g. Intel since Alder Lake): the AVX2 table's extension,
// used by its blocked kernels. FOLIO_AVX_VNNI=0 in the environment turns it off (to measure plain AVX2).
bool cpu_has_avx_vnni();
#endif
#if FOLIO_QUANT_NEON
// dotprod: the CPU has the Armv8.2 SDOT instructions.
void add_neon_kernels(KernelTable& t, bool dotprod);
bool cpu_has_neon_dotprod();
#endif

// A full table for one ISA with its optional extensions chosen explicitly, so that the self-test can
// check the variants this CPU does not pick by default (e.g. AVX-512 without VNNI). isa must be
// available.
KernelTable build_kernel_table(Isa isa, bool use_extension);

}  // namespace folio::quant
