// Internal to the quant module: what the blocked matrix-product kernels (gemm-*.cc) share.
//
// A kernel computes a block of m weight rows × n tokens (see Kernels::gemm) tile by tile: RM rows × RN
// tokens at a time, each tile walking the whole row length with RM·RN accumulators, so that every weight
// block loaded serves RN tokens and every activation block RM rows. Formats whose blocks are costly to
// unpack (all but the float formats) are first unpacked RM rows at a time into a "panel" in a per-thread
// buffer, which then serves all n tokens of the block; the activations' fp16 scales are likewise
// converted to floats once per block of tokens (TileArgs::xs):
//   Q8_0, Q4_0, Q5_0, IQ4_NL -> PanelQ8 (d as a float, q − offset or the code book value as int8): exact, the dot is
//   the Q8_0 one
//                       (AVX-512 with VNNI uses pairs of blocks with the quants biased to unsigned);
//   Q4_1, Q5_1 -> PanelU8_1 (d, m as floats, q as uint8);
//   Q2_K, Q3_K, Q4_K, Q5_K, Q6_K -> PanelK (q as uint8 in element order, each sub-block's int16 scales laid out
//                       as the multipliers of vpmaddwd / the pairs of products, the offsets against
//                       the activation group sums, and d, dmin as floats).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "quant/blocks.h"
#include "quant/kernels.h"

namespace folio::quant {

// Q8_0, Q4_0, Q5_0 unpacked: x = d·q, q int8 (Q4_0: nibble − 8, Q5_0: five bits − 16), d as a float.
struct PanelQ8 {
  float d;
  int8_t qs[QK];
};
static_assert(sizeof(PanelQ8) == 36, "PanelQ8");

// Q4_1 / Q5_1 unpacked: x = d·q + m with q in 0..31, d and m as floats.
struct PanelU8_1 {
  float d, m;
  uint8_t qs[QK];
};
static_assert(sizeof(PanelU8_1) == 40, "PanelU8_1");

// A K-quant super-block unpacked: x = d·sc·q − dmin·off-term, i.e. for activations y (Q8_K: d_y, q_y,
// bsums) the dot product is
//   d·d_y·Σ_s Σ_{i in s} sc_s(i)·q_i·q_y,i  −  dmin·d_y·Σ_g off_g·bsums_g,
// where sc[s] holds, for sub-block s of 32 elements, the int16 multiplier of each pair of elements
// (lane l covers elements 2l and 2l+1 of the sub-block: Q4_K/Q5_K repeat the sub-block scale, Q6_K has
// the scale of elements 0-15 in lanes 0-7 and of 16-31 in lanes 8-15), off[g] the offset of group g of
// 16 (Q4_K/Q5_K: the sub-block min; Q6_K: 32·sc_g, with dmin = d).
struct alignas(32) PanelK {
  uint8_t q[QK_K];
  int16_t sc[QK_K / 32][16];
  int16_t off[QK_K / 16];
  float d, dmin;
  uint8_t pad[24];
};
static_assert(sizeof(PanelK) == 576, "PanelK");

// IQ4_XS unpacked: the code book values v (int8, never 0) in element order, each sub-block's scale
// ls − 32 and d as a float; x = d·(ls − 32)·v. A tile multiplies |v| by x carrying v's sign (vpsignb),
// which keeps vpmaddubsw's pairs within int16 (|v|, |x| <= 127).
struct alignas(32) PanelIQ4 {
  int8_t v[QK_K];
  int16_t sc[QK_K / 32];
  float d;
  uint8_t pad[12];
};
static_assert(sizeof(PanelIQ4) == 288, "PanelIQ4");

// One tile's arguments: RM weight rows at w (ldw bytes apart), RN activation rows at x (ldx apart),
// outputs y[j·ldy + i].
struct TileArgs {
  int64_t k;
  const uint8_t* w;
  size_t ldw;
  const uint8_t* x;
  size_t ldx;
  float* y;
  int64_t ldy;
  const float* xs;  // per-block activation scales of the RN rows (PrepFn), ldxs floats apart
  int64_t ldxs;
};
using TileFn = void (*)(const TileArgs&);

// Packs rows [0, rm) of w (ldw apart, k elements) into dst, one panel row after the other (returns the
// panel's row stride).
using PackFn = size_t (*)(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst);

// Writes the per-block scales of n activation rows (x, ldx apart, k elements) as floats into dst, row
// after row; returns the row stride in floats.
using PrepFn = int64_t (*)(int64_t k, const uint8_t* x, size_t ldx, int64_t n, float* dst);

// A matrix-vector kernel's row function: y[t·ldy] = row · x_t for NT tokens (x_t at x + t·ldx), the row
// nb blocks at w (for a repacked layout: the G rows of a group, into y[t·ldy + 0 .. G)). gemv_by_rows
// runs fns[NT − 1] over m rows (ldw apart; in groups of G) and n tokens, up to three tokens at a time, so
// that each row is read from memory once per three tokens.
using GemvRowFn = void (*)(int64_t nb, const uint8_t* w, const uint8_t* x, size_t ldx, float* y, int64_t ldy);
template <int G = 1>
inline void gemv_by_rows(const GemvRowFn (&fns)[3], int64_t nb, const void* w, size_t ldw, const void* x, size_t ldx,
                         float* y, int64_t ldy, int64_t m, int64_t n) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  for (int64_t t0 = 0; t0 < n; t0 += 3) {
    const int nt = int(std::min<int64_t>(3, n - t0));
    for (int64_t r = 0; r < m; r += G)
      fns[nt - 1](nb, wb + size_t(r) * ldw, xb + size_t(t0) * ldx, ldx, y + t0 * ldy + r, ldy);
  }
}

// A K-quant matrix-vector kernel (Kernels::gemv) from its row functions for 1, 2 and 3 tokens.
template <GemvRowFn F1, GemvRowFn F2, GemvRowFn F3, int G = 1>
void gemv_k_quant(int64_t k, const void* w, size_t ldw, const void* x, size_t ldx, float* y, int64_t ldy, int64_t m,
                  int64_t n) {
  static constexpr GemvRowFn fns[3] = {F1, F2, F3};
  gemv_by_rows<G>(fns, k / QK_K, w, ldw, x, ldx, y, ldy, m, n);
}

// Per-thread buffers (for panels, for activation scales), grown on demand, 64-byte aligned.
template <int Which>
inline uint8_t* thread_buffer(size_t bytes) {
  static thread_local std::vector<uint8_t> buf;
  if (buf.size() < bytes + 64) buf.resize(bytes + 64);
  const uintptr_t p = reinterpret_cast<uintptr_t>(buf.data());
  return buf.data() + ((64 - (p & 63)) & 63);
}

// The ConvertedX::id of the activations the calling thread's Kernels::gemm multiplies, set by the matmul
// driver around each call (0 elsewhere, e.g. a test calling a kernel itself): a kernel may reuse what it
// derived from the same x in an earlier call with the same id.
inline uint64_t& gemm_input_id() {
  static thread_local uint64_t id = 0;
  return id;
}

// Walks a block of m rows × n tokens in tiles of at most RM × RN, using table[rm - 1][rn - 1] for a tile
// of rm rows and rn tokens; with a packer, each group of rm rows is unpacked into a panel first.
template <int RM, int RN>
inline void run_tiles(const TileFn (&table)[RM][RN], PackFn pack, size_t panel_row_bytes, PrepFn prep,
                      int64_t prep_floats_per_row, int64_t k, const uint8_t* w, size_t ldw, const uint8_t* x,
                      size_t ldx, float* y, int64_t ldy, int64_t m, int64_t n) {
  uint8_t* panel = pack ? thread_buffer<0>(panel_row_bytes * RM) : nullptr;
  float* xs = nullptr;
  int64_t ldxs = 0;
  if (prep) {
    xs = reinterpret_cast<float*>(thread_buffer<1>(size_t(prep_floats_per_row * n) * sizeof(float)));
    ldxs = prep(k, x, ldx, n, xs);
  }
  for (int64_t i0 = 0; i0 < m; i0 += RM) {
    const int rm = int(std::min<int64_t>(RM, m - i0));
    TileArgs a{k, w + size_t(i0) * ldw, ldw, x, ldx, y + i0, ldy, xs, ldxs};
    if (pack) {
      a.ldw = pack(k, a.w, ldw, rm, panel);
      a.w = panel;
    }
    for (int64_t j0 = 0; j0 < n; j0 += RN) {
      const int rn = int(std::min<int64_t>(RN, n - j0));
      TileArgs t = a;
      t.x = x + size_t(j0) * ldx;
      t.y = a.y + j0 * ldy;
      t.xs = xs + j0 * ldxs;
      table[rm - 1][rn - 1](t);
    }
  }
}

// The table of tile functions F<rm, rn> for every rm <= RM, rn <= RN.
template <template <int, int> class F, int RM, int RN>
struct TileTable {
  TileFn t[RM][RN];
  constexpr TileTable() : t{} { fill<0>(); }

 private:
  template <int I>
  constexpr void fill() {
    if constexpr (I < RM * RN) {
      t[I / RN][I % RN] = &F<I / RN + 1, I % RN + 1>::run;
      fill<I + 1>();
    }
  }
};

// The kernel NAME of one weight type: tiles from TABLE over panels packed by PACK (PANEL bytes per row;
// none: nullptr, 0) and activations prepared by PREP (PREP_FLOATS floats per token; none: nullptr, 0).
// Each ISA's file (gemm-avx2.cc, gemm-avx512.cc, gemm-neon.cc) instantiates its kernels with it.
#define FOLIO_GEMM(NAME, TABLE, PACK, PANEL, PREP, PREP_FLOATS)                                                \
  void NAME(int64_t k, const void* w, size_t ldw, const void* x, size_t ldx, float* y, int64_t ldy, int64_t m, \
            int64_t n) {                                                                                       \
    run_tiles(TABLE.t, PACK, PANEL, PREP, PREP_FLOATS, k, static_cast<const uint8_t*>(w), ldw,                 \
              static_cast<const uint8_t*>(x), ldx, y, ldy, m, n);                                              \
  }

// The float kernels gemm_f32, gemm_f16 and gemm_bf16 of an ISA, in tiles of up to RM rows × RN tokens,
// for a file that defines FloatTile<Load>::T<rm, rn> (a tile over an element loader) and the loaders
// LoadF32, LoadF16 and LoadBF16.
#define FOLIO_FLOAT_GEMMS(RM, RN)                         \
  template <int M, int N>                                 \
  using TileF32 = FloatTile<LoadF32>::T<M, N>;            \
  template <int M, int N>                                 \
  using TileF16 = FloatTile<LoadF16>::T<M, N>;            \
  template <int M, int N>                                 \
  using TileBF16 = FloatTile<LoadBF16>::T<M, N>;          \
  const TileTable<TileF32, RM, RN> kTilesF32;             \
  const TileTable<TileF16, RM, RN> kTilesF16;             \
  const TileTable<TileBF16, RM, RN> kTilesBF16;           \
  FOLIO_GEMM(gemm_f32, kTilesF32, nullptr, 0, nullptr, 0) \
  FOLIO_GEMM(gemm_f16, kTilesF16, nullptr, 0, nullptr, 0) \
  FOLIO_GEMM(gemm_bf16, kTilesBF16, nullptr, 0, nullptr, 0)

// Portable packers (gemm-pack.cc): the same panels as the x86 SIMD packers, by plain loops.
size_t pack_q8_0_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst);
size_t pack_q4_0_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst);
size_t pack_q5_0_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst);
size_t pack_iq4_nl_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst);
size_t pack_iq4_xs_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst);
size_t pack_q4_k_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst);
size_t pack_q5_k_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst);
size_t pack_q6_k_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst);
size_t pack_q2_k_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst);
size_t pack_q3_k_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst);
int64_t prep_q8_0_portable(int64_t k, const uint8_t* x, size_t ldx, int64_t n, float* dst);

#if FOLIO_QUANT_X86
// avx_vnni: the CPU has AVX-VNNI (vpdpbusd / vpdpwssd on 256-bit vectors, VEX-encoded).
void add_avx2_gemm(KernelTable& t, bool avx_vnni);
// IQ4_XS over PanelIQ4 (gemm-avx2-iq4.cc); the AVX-512 table keeps it.
void add_avx2_iq4_gemm(KernelTable& t);
// The AVX2 packer of a K-quant type into PanelK (the AVX-512 kernels share the panels).
PackFn avx2_k_packer(TensorType type);
void add_avx512_gemm(KernelTable& t, bool vnni);
// The Q4_K_R8, Q6_K_R8, Q3_K_R8, Q2_K_R8 and IQ4_XS_R8 kernels (gemm-r8-x86.cc) with the integer dot product of
// vpmaddubsw, of AVX-VNNI, or of AVX512-VNNI on 256-bit vectors.
enum class R8Dot { Madd, AvxVnni, Avx512Vnni };
void add_r8_kernels(KernelTable& t, R8Dot dot);
// The Q8_0_R8 kernels (gemm-q8r8-x86.cc), likewise; add_r8_kernels adds them.
void add_q8_0_r8_kernels(KernelTable& t, R8Dot dot);
// The blocked products of the K-quant and IQ4_XS layouts (Q4_K_R8, Q6_K_R8, Q3_K_R8, Q2_K_R8, IQ4_XS_R8, Q5_K,
// and Q6_K on AVX-512) over weights unpacked once per call (gemm-unpacked-x86.cc), where the dot product
// is VNNI's; add_r8_kernels adds them.
void add_unpacked_kernels(KernelTable& t, R8Dot dot);
#endif
#if FOLIO_QUANT_NEON
void add_neon_gemm(KernelTable& t, bool dotprod);
#endif

}  // namespace folio::quant
