// Portable panel packers and activation-scale preparation for the blocked kernels (gemm.h): what the
// NEON kernels use (the x86 kernels have SIMD packers of their own). Plain loops over the block layouts.
#include <cstring>

#include "core/fp16.h"
#include "quant/gemm.h"

namespace folio::quant {

size_t pack_q8_0_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK;
  for (int i = 0; i < rm; ++i) {
    const BlockQ8_0* src = reinterpret_cast<const BlockQ8_0*>(w + i * ldw);
    PanelQ8* out = reinterpret_cast<PanelQ8*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      out[b].d = fp16_to_f32(src[b].d);
      std::memcpy(out[b].qs, src[b].qs, QK);
    }
  }
  return size_t(nb) * sizeof(PanelQ8);
}

size_t pack_q4_0_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK;
  for (int i = 0; i < rm; ++i) {
    const BlockQ4_0* src = reinterpret_cast<const BlockQ4_0*>(w + i * ldw);
    PanelQ8* out = reinterpret_cast<PanelQ8*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      out[b].d = fp16_to_f32(src[b].d);
      for (int l = 0; l < QK / 2; ++l) {
        out[b].qs[l] = int8_t((src[b].qs[l] & 15) - 8);
        out[b].qs[l + QK / 2] = int8_t((src[b].qs[l] >> 4) - 8);
      }
    }
  }
  return size_t(nb) * sizeof(PanelQ8);
}

size_t pack_q5_0_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK;
  for (int i = 0; i < rm; ++i) {
    const BlockQ5_0* src = reinterpret_cast<const BlockQ5_0*>(w + i * ldw);
    PanelQ8* out = reinterpret_cast<PanelQ8*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      uint32_t qh;
      std::memcpy(&qh, src[b].qh, 4);
      out[b].d = fp16_to_f32(src[b].d);
      for (int l = 0; l < QK / 2; ++l) {
        out[b].qs[l] = int8_t(((src[b].qs[l] & 15) | (((qh >> l) & 1) << 4)) - 16);
        out[b].qs[l + QK / 2] = int8_t(((src[b].qs[l] >> 4) | (((qh >> (l + 16)) & 1) << 4)) - 16);
      }
    }
  }
  return size_t(nb) * sizeof(PanelQ8);
}

// IQ4_NL: the code book values (int8) of the indices, nibbles as Q4_0's.
size_t pack_iq4_nl_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK;
  for (int i = 0; i < rm; ++i) {
    const BlockIQ4_NL* src = reinterpret_cast<const BlockIQ4_NL*>(w + i * ldw);
    PanelQ8* out = reinterpret_cast<PanelQ8*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      out[b].d = fp16_to_f32(src[b].d);
      for (int l = 0; l < QK / 2; ++l) {
        out[b].qs[l] = kIq4nlValues[src[b].qs[l] & 15];
        out[b].qs[l + QK / 2] = kIq4nlValues[src[b].qs[l] >> 4];
      }
    }
  }
  return size_t(nb) * sizeof(PanelQ8);
}

size_t pack_iq4_xs_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK_K;
  for (int i = 0; i < rm; ++i) {
    const BlockIQ4_XS* src = reinterpret_cast<const BlockIQ4_XS*>(w + i * ldw);
    PanelIQ4* out = reinterpret_cast<PanelIQ4*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      for (int j = 0; j < QK_K / QK; ++j) {
        const uint8_t* qs = src[b].qs + 16 * j;
        for (int l = 0; l < 16; ++l) {
          out[b].v[QK * j + l] = kIq4nlValues[qs[l] & 15];
          out[b].v[QK * j + l + 16] = kIq4nlValues[qs[l] >> 4];
        }
        out[b].sc[j] = int16_t(iq4_xs_scale(src[b], j) - 32);
      }
      out[b].d = fp16_to_f32(src[b].d);
    }
  }
  return size_t(nb) * sizeof(PanelIQ4);
}

namespace {

void k4_scales(const uint8_t* scales, uint16_t d, uint16_t dmin, PanelK& p) {
  uint8_t sc[8], mn[8];
  unpack_scales_k4(scales, sc, mn);
  for (int s = 0; s < 8; ++s) {
    for (int l = 0; l < 16; ++l) p.sc[s][l] = sc[s];
    p.off[2 * s] = p.off[2 * s + 1] = mn[s];
  }
  p.d = fp16_to_f32(d);
  p.dmin = fp16_to_f32(dmin);
}

}  // namespace

size_t pack_q4_k_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK_K;
  for (int i = 0; i < rm; ++i) {
    const BlockQ4_K* src = reinterpret_cast<const BlockQ4_K*>(w + i * ldw);
    PanelK* out = reinterpret_cast<PanelK*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      for (int c = 0; c < 4; ++c) {
        for (int l = 0; l < 32; ++l) {
          out[b].q[64 * c + l] = src[b].qs[32 * c + l] & 15;
          out[b].q[64 * c + 32 + l] = src[b].qs[32 * c + l] >> 4;
        }
      }
      k4_scales(src[b].scales, src[b].d, src[b].dmin, out[b]);
    }
  }
  return size_t(nb) * sizeof(PanelK);
}

size_t pack_q5_k_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK_K;
  for (int i = 0; i < rm; ++i) {
    const BlockQ5_K* src = reinterpret_cast<const BlockQ5_K*>(w + i * ldw);
    PanelK* out = reinterpret_cast<PanelK*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      for (int c = 0; c < 4; ++c) {
        for (int l = 0; l < 32; ++l) {
          const uint8_t h = src[b].qh[l];
          out[b].q[64 * c + l] = uint8_t((src[b].qs[32 * c + l] & 15) | (((h >> (2 * c)) & 1) << 4));
          out[b].q[64 * c + 32 + l] = uint8_t((src[b].qs[32 * c + l] >> 4) | (((h >> (2 * c + 1)) & 1) << 4));
        }
      }
      k4_scales(src[b].scales, src[b].d, src[b].dmin, out[b]);
    }
  }
  return size_t(nb) * sizeof(PanelK);
}

size_t pack_q6_k_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK_K;
  for (int i = 0; i < rm; ++i) {
    const BlockQ6_K* src = reinterpret_cast<const BlockQ6_K*>(w + i * ldw);
    PanelK* out = reinterpret_cast<PanelK*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ6_K& q6 = src[b];
      for (int h = 0; h < 2; ++h) {
        const uint8_t* ql = q6.ql + 64 * h;
        const uint8_t* qh = q6.qh + 32 * h;
        uint8_t* q = out[b].q + 128 * h;
        for (int l = 0; l < 32; ++l) {
          q[l] = uint8_t((ql[l] & 15) | ((qh[l] & 3) << 4));
          q[l + 32] = uint8_t((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4));
          q[l + 64] = uint8_t((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
          q[l + 96] = uint8_t((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
        }
      }
      for (int s = 0; s < 8; ++s) {
        for (int l = 0; l < 8; ++l) {
          out[b].sc[s][l] = q6.scales[2 * s];
          out[b].sc[s][l + 8] = q6.scales[2 * s + 1];
        }
      }
      for (int g = 0; g < 16; ++g) out[b].off[g] = int16_t(32 * q6.scales[g]);
      out[b].d = out[b].dmin = fp16_to_f32(q6.d);
    }
  }
  return size_t(nb) * sizeof(PanelK);
}

// Q2_K: q in 0..3, each group's 4-bit scale on its 8 pairs, its 4-bit min as the offset.
size_t pack_q2_k_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK_K;
  for (int i = 0; i < rm; ++i) {
    const BlockQ2_K* src = reinterpret_cast<const BlockQ2_K*>(w + i * ldw);
    PanelK* out = reinterpret_cast<PanelK*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      for (int h = 0; h < 2; ++h) {
        for (int j = 0; j < 4; ++j) {
          for (int l = 0; l < 32; ++l) out[b].q[128 * h + 32 * j + l] = (src[b].qs[32 * h + l] >> (2 * j)) & 3;
        }
      }
      for (int s = 0; s < 8; ++s) {
        for (int l = 0; l < 8; ++l) {
          out[b].sc[s][l] = src[b].scales[2 * s] & 15;
          out[b].sc[s][l + 8] = src[b].scales[2 * s + 1] & 15;
        }
      }
      for (int g = 0; g < 16; ++g) out[b].off[g] = src[b].scales[g] >> 4;
      out[b].d = fp16_to_f32(src[b].d);
      out[b].dmin = fp16_to_f32(src[b].dmin);
    }
  }
  return size_t(nb) * sizeof(PanelK);
}

// Q3_K: q + 4 in 0..7 (unsigned), each group's signed scale sc - 32 on its 8 pairs and 4 (sc - 32) as the
// offset, dmin = d (as Q6_K does with 32).
size_t pack_q3_k_portable(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK_K;
  for (int i = 0; i < rm; ++i) {
    const BlockQ3_K* src = reinterpret_cast<const BlockQ3_K*>(w + i * ldw);
    PanelK* out = reinterpret_cast<PanelK*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      for (int h = 0; h < 2; ++h) {
        for (int j = 0; j < 4; ++j) {
          for (int l = 0; l < 32; ++l) {
            const int lo = (src[b].qs[32 * h + l] >> (2 * j)) & 3, hi = (src[b].hmask[l] >> (4 * h + j)) & 1;
            out[b].q[128 * h + 32 * j + l] = uint8_t(lo | (hi << 2));
          }
        }
      }
      for (int s = 0; s < 8; ++s) {
        for (int l = 0; l < 8; ++l) {
          out[b].sc[s][l] = int16_t(q3_k_scale(src[b].scales, 2 * s) - 32);
          out[b].sc[s][l + 8] = int16_t(q3_k_scale(src[b].scales, 2 * s + 1) - 32);
        }
      }
      for (int g = 0; g < 16; ++g) out[b].off[g] = int16_t(4 * (q3_k_scale(src[b].scales, g) - 32));
      out[b].d = out[b].dmin = fp16_to_f32(src[b].d);
    }
  }
  return size_t(nb) * sizeof(PanelK);
}

int64_t prep_q8_0_portable(int64_t k, const uint8_t* x, size_t ldx, int64_t n, float* dst) {
  const int64_t nb = k / QK;
  for (int64_t j = 0; j < n; ++j) {
    const BlockQ8_0* xb = reinterpret_cast<const BlockQ8_0*>(x + j * ldx);
    for (int64_t b = 0; b < nb; ++b) dst[j * nb + b] = fp16_to_f32(xb[b].d);
  }
  return nb;
}

}  // namespace folio::quant
