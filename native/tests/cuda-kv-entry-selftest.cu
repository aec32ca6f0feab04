// The CUDA backend's cache entries (native/cuda/kv-entry.cuh) and Hadamard butterflies (hadamard.cuh), their
// __host__ __device__ code run on the host against the engine (kv/entry-format.h, kv/hadamard.h):
//   encoding  every type and head size, byte for byte against kv::encode and kv::encode_reference, both as
//             one thread does it (entry::encode_entry) and as kv.cu's warps do it (the pick reduced over 32
//             lanes by xor shuffles in the kernel's order, Q4_0's high nibbles taken from lane j + len/2);
//             a q may differ by 1 only where x·id lands within 1e-6 of a rounding tie, not on it (counted; none
//             expected: the host runs the same operations)
//   decoding  every element of encoded and of random entries, bit for bit against kv::decode_stored and
//             kv::decode_reference, through both the 16-bit and the byte reads of the scale
//   hadamard  the kernel's tiles of 2048 floats and its passes against kv::hadamard, bit for bit
// Built where nvcc is (libfolio-cuda's condition) and runs without a GPU; backend-ops checks the device.
#undef NDEBUG  // the alignment assertions of the 16-bit scale reads (dequant.cuh's ld) hold in a Release build too
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "hadamard.cuh"
#include "kv-entry.cuh"
#include "kv/entry-format.h"
#include "kv/hadamard.h"

using namespace folio;
namespace ce = folio::cuda::entry;

namespace {

int g_checks = 0, g_failures = 0, g_ties = 0;
std::mt19937 rng(20260611);

bool report(bool ok, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
bool report(bool ok, const char* fmt, ...) {
  ++g_checks;
  if (ok) return true;
  if (++g_failures <= 30) {
    va_list ap;
    va_start(ap, fmt);
    std::printf("FAIL ");
    std::vprintf(fmt, ap);
    std::printf("\n");
    va_end(ap);
  }
  return false;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

// ---- test rows ----

// n rows of dim numbers in one of several shapes: normals at scales from tiny (f16 subnormal d) to huge
// (f16 overflow of d), outliers, zeros and −0, magnitudes tied between signs, halves (x·id on rounding ties).
std::vector<float> rows_of(int kind, int dim, int n) {
  std::vector<float> x(size_t(dim) * n);
  std::normal_distribution<float> nd(0, 1);
  const float scales[] = {1e-7f, 1e-3f, 1.0f, 30.0f, 1e7f};
  for (int r = 0; r < n; r++) {
    float* row = x.data() + size_t(r) * dim;
    switch (kind) {
      case 0:  // normals at a per-row scale
      case 1: {
        const float s = scales[rng() % 5];
        for (int i = 0; i < dim; i++) row[i] = nd(rng) * s;
        if (kind == 1) row[rng() % dim] *= 50;  // an outlier channel
        break;
      }
      case 2:  // zeros, −0, and a few numbers
        for (int i = 0; i < dim; i++) row[i] = rng() % 2 ? 0.0f : -0.0f;
        if (r % 2)
          for (int k = 0; k < 3; k++) row[rng() % dim] = nd(rng);
        break;
      case 3: {  // magnitudes tied between signs: the first of equals decides Q4_0's sign
        for (int i = 0; i < dim; i++) row[i] = nd(rng);
        const float m = 4.0f + float(rng() % 4);
        for (int b = 0; b < dim; b += 32) {
          const int len = dim - b < 32 ? dim - b : 32;
          const int i = b + int(rng() % len), j = b + int(rng() % len);
          row[i] = rng() % 2 ? m : -m;
          row[j] = rng() % 2 ? m : -m;
        }
        break;
      }
      default:  // halves: x·id on .5 ties for the power-of-two scales of Q4_0 (±8 largest) and Q8_0 (127·2^k)
        for (int i = 0; i < dim; i++) row[i] = float(int(rng() % 33) - 16) / 2.0f;
        if (r % 2) {
          const float p = std::ldexp(1.0f, int(rng() % 9) - 4);
          for (int i = 0; i < dim; i++) row[i] = float(int(rng() % 253) - 126) * p + (rng() % 2 ? 0.5f * p : 0.0f);
          row[0] = 127.0f * p;  // the block's amax: d = p, so x·id = x / p, on .5 where x is
        }
        break;
    }
  }
  return x;
}

// ---- encoding ----

// kv.cu's store_row for a quantized row, lane by lane: the pick reduced by xor shuffles (offsets 16 .. 1, every
// lane combining with its partner's value from before the step), then each lane's q; Q4_0 lane j < len/2
// takes lane j + len/2's q as __shfl_down_sync gives it.
void encode_warps(int32_t t, const float* x, int dim, uint8_t* e) {
  for (int b = 0; b * 32 < dim; b++) {
    const int len = dim - 32 * b < 32 ? dim - 32 * b : 32;
    uint8_t* out = e + b * ce::block_bytes(t, 32);
    float xi[32];
    ce::Pick p[32], next[32];
    for (int lane = 0; lane < 32; lane++) {
      xi[lane] = lane < len ? x[32 * b + lane] : 0.0f;
      p[lane] = ce::pick_of(xi[lane], lane);
    }
    for (int o = 16; o > 0; o /= 2) {
      for (int lane = 0; lane < 32; lane++) next[lane] = ce::better(p[lane], p[lane ^ o]);
      std::memcpy(p, next, sizeof p);
    }
    for (int lane = 1; lane < 32; lane++)
      report(same_bits(p[lane].x, p[0].x) && p[lane].i == p[0].i, "lanes disagree on the pick");
    float d[32], id[32];
    int q[32];
    for (int lane = 0; lane < 32; lane++) {
      ce::block_scale(t, p[lane].x, &d[lane], &id[lane]);
      q[lane] = ce::block_q(t, xi[lane], id[lane]);
    }
    ce::store_scale(out, d[0]);
    const int half = len / 2;
    for (int lane = 0; lane < 32; lane++) {
      if (t == ce::kQ8_0) {
        if (lane < len) out[2 + lane] = uint8_t(int8_t(q[lane]));
      } else if (lane < half) {
        const int hi = lane + half < 32 ? q[lane + half] : q[lane];
        out[2 + lane] = uint8_t(q[lane] | hi << 4);
      }
    }
  }
}

// Whether q differences in the block at `blk` (len numbers x, in an entry of type t) are all ±1 where x·id is
// within 1e-6 of a rounding tie (the CPU's and the device's rounding could then part); counts those.
bool near_tie(int32_t t, const float* x, int len, const uint8_t* got, const uint8_t* want) {
  if (std::memcmp(got, want, 2) != 0) return false;  // the scales must agree exactly
  ce::Pick p = ce::pick_of(0.0f, 0);
  for (int i = 0; i < len; i++) p = ce::better(p, ce::pick_of(x[i], i));
  float d, id;
  ce::block_scale(t, p.x, &d, &id);
  auto q_of = [&](const uint8_t* blk, int i) {
    if (t == ce::kQ8_0) return int(int8_t(blk[2 + i]));
    const int half = len / 2;
    return i < half ? blk[2 + i] & 15 : blk[2 + i - half] >> 4;
  };
  for (int i = 0; i < (t == ce::kQ8_0 ? len : len / 2 * 2); i++) {
    const int a = q_of(got, i), b = q_of(want, i);
    if (a == b) continue;
    // Near a tie but not on one: an exact tie has one right answer (roundf's, truncation's), the CPU's.
    const float v = t == ce::kQ8_0 ? std::fabs(x[i] * id) : x[i] * id + 8.5f;
    const float frac = v - std::floor(v);
    const bool tie = t == ce::kQ8_0 ? std::fabs(frac - 0.5f) < 1e-6f && frac != 0.5f
                                    : (frac < 1e-6f || frac > 1 - 1e-6f) && frac != 0.0f;
    if (std::abs(a - b) != 1 || !tie) return false;
    ++g_ties;
  }
  return true;
}

// Compares entries got and want (n of eb bytes) block by block; `what` names the pair.
void compare_entries(const char* what, int32_t t, int dim, int n, const float* x, const uint8_t* got,
                     const uint8_t* want) {
  const size_t eb = size_t(ce::entry_bytes(t, dim));
  int bad = 0;
  for (int e = 0; e < n; e++) {
    const uint8_t *g = got + e * eb, *w = want + e * eb;
    if (!ce::type_quantized(t)) {
      if (!report(std::memcmp(g, w, eb) == 0, "%s %s dim %d entry %d differs", what, kv_type_name(KvType(t)), dim, e))
        if (++bad > 2) return;
      continue;
    }
    for (int b = 0; b * 32 < dim; b++) {
      const int len = dim - 32 * b < 32 ? dim - 32 * b : 32;
      const size_t off = size_t(b) * ce::block_bytes(t, 32), bb = size_t(ce::block_bytes(t, len));
      const bool ok =
          std::memcmp(g + off, w + off, bb) == 0 || near_tie(t, x + size_t(e) * dim + 32 * b, len, g + off, w + off);
      if (!report(ok, "%s %s dim %d entry %d block %d differs (d %02x%02x, reference %02x%02x)", what,
                  kv_type_name(KvType(t)), dim, e, b, g[off + 1], g[off], w[off + 1], w[off]))
        if (++bad > 2) return;
    }
  }
}

// ---- decoding ----

template <class Reader>
void check_reader(const char* what, int32_t t, int dim, int n, const uint8_t* buf, const float* want) {
  const size_t eb = size_t(ce::entry_bytes(t, dim));
  int bad = 0;
  for (int e = 0; e < n; e++)
    for (int i = 0; i < dim; i++) {
      const float got = Reader::at(buf + e * eb, dim, i), ref = want[size_t(e) * dim + i];
      if (!report(same_bits(got, ref), "%s %s dim %d entry %d element %d: %.9g, reference %.9g", what,
                  kv_type_name(KvType(t)), dim, e, i, got, ref) &&
          ++bad > 2)
        return;
    }
}

// Every element of n entries at buf (aligned to 64) by each reader that applies, against decode_stored and
// decode_reference.
void check_decode(int32_t t, int dim, int n, const uint8_t* buf) {
  const size_t eb = size_t(ce::entry_bytes(t, dim));
  std::vector<float> want(size_t(dim) * n);
  kv::decode_stored(KvType(t), buf, want.data(), dim, n);
  int bad = 0;
  for (int e = 0; e < n; e++)
    for (int i = 0; i < dim; i++) {
      const float a = ce::load(t, buf + e * eb, int64_t(eb), dim, i);
      const float b = kv::decode_reference(KvType(t), buf + e * eb, dim, i);
      const float c = want[size_t(e) * dim + i];
      if (!report(same_bits(a, c) && same_bits(b, c), "decode %s dim %d entry %d element %d: %.9g, %.9g, %.9g",
                  kv_type_name(KvType(t)), dim, e, i, a, b, c) &&
          ++bad > 2)
        return;
    }
  switch (t) {
    case ce::kF32: check_reader<ce::F32>("F32 reader", t, dim, n, buf, want.data()); break;
    case ce::kF16: check_reader<ce::F16>("F16 reader", t, dim, n, buf, want.data()); break;
    case ce::kQ8_0:
      if (eb % 2 == 0) check_reader<ce::Q8_0<true>>("16-bit scale reader", t, dim, n, buf, want.data());
      check_reader<ce::Q8_0<false>>("byte scale reader", t, dim, n, buf, want.data());
      break;
    default:
      if (eb % 2 == 0) check_reader<ce::Q4_0<true>>("16-bit scale reader", t, dim, n, buf, want.data());
      check_reader<ce::Q4_0<false>>("byte scale reader", t, dim, n, buf, want.data());
      break;
  }
}

// Entries of random bytes (every q and nibble) with random finite scales at each block's start.
void random_entries(int32_t t, int dim, int n, uint8_t* buf) {
  const size_t eb = size_t(ce::entry_bytes(t, dim));
  for (size_t i = 0; i < eb * n; i++) buf[i] = uint8_t(rng());
  for (int e = 0; e < n; e++) {
    if (t == ce::kF16)
      for (int i = 0; i < dim; i++) {  // no NaN or inf: their payloads are not the point
        uint8_t* p = buf + e * eb + 2 * i;
        if ((p[1] & 0x7c) == 0x7c) p[1] &= 0xbf;
      }
    if (t == ce::kF32)
      for (int i = 0; i < dim; i++) {
        uint8_t* p = buf + e * eb + 4 * i;
        if ((p[3] & 0x7f) == 0x7f) p[3] &= 0xbf;
      }
    if (!ce::type_quantized(t)) continue;
    for (int b = 0; b * 32 < dim; b++) {
      const uint16_t h = uint16_t((rng() & 0x8000) | (rng() % 31) << 10 | (rng() & 0x3ff));
      std::memcpy(buf + e * eb + b * ce::block_bytes(t, 32), &h, 2);
    }
  }
}

void check_type(int32_t t, int dim) {
  const KvType kt = KvType(t);
  const size_t eb = kv::entry_bytes(kt, dim);
  report(size_t(ce::entry_bytes(t, dim)) == eb, "entry_bytes %s dim %d: %lld, engine %zu", kv_type_name(kt), dim,
         (long long)ce::entry_bytes(t, dim), eb);
  constexpr int n = 48;
  alignas(64) static uint8_t cpu[n * 2048], ref[n * 2048], one[n * 2048], warps[n * 2048];
  for (int kind = 0; kind < 5; kind++) {
    const std::vector<float> x = rows_of(kind, dim, n);
    kv::encode(kt, false, x.data(), cpu, dim, n);
    for (int e = 0; e < n; e++) {
      kv::encode_reference(kt, x.data() + size_t(e) * dim, ref + e * eb, dim);
      ce::encode_entry(t, x.data() + size_t(e) * dim, dim, one + e * eb);
      if (ce::type_quantized(t)) encode_warps(t, x.data() + size_t(e) * dim, dim, warps + e * eb);
    }
    compare_entries("encode_entry vs kv::encode", t, dim, n, x.data(), one, cpu);
    compare_entries("encode_entry vs kv::encode_reference", t, dim, n, x.data(), one, ref);
    if (ce::type_quantized(t)) compare_entries("warps vs kv::encode", t, dim, n, x.data(), warps, cpu);
    check_decode(t, dim, n, cpu);
  }
  random_entries(t, dim, n, cpu);
  check_decode(t, dim, n, cpu);
}

// ---- hadamard ----

// elementwise.cu's hadamard_kernel, tile by tile, on the host.
void hadamard_tiles(float* x, int64_t rows, int block) {
  constexpr int kTile = 2048;
  const int64_t total = rows * block;
  const float norm = 1.0f / std::sqrt(float(block));
  static float tile[kTile];
  for (int64_t base = 0; base < total; base += kTile) {
    const int count = int(total - base < kTile ? total - base : kTile);
    std::memcpy(tile, x + base, size_t(count) * 4);
    for (int h = 1; h < block; h *= 2)
      for (int p = 0; p < count / 2; p++) cuda::had::butterfly(tile, p, h);
    for (int i = 0; i < count; i++) x[base + i] = tile[i] * norm;
  }
}

void check_hadamard(int block) {
  std::normal_distribution<float> nd(0, 1);
  for (int64_t rows : {1, 3, 2048 / block + 1, 5 * 2048 / block + 3}) {
    std::vector<float> x(size_t(rows * block)), fast, slow;
    for (auto& v : x) v = nd(rng) * (rng() % 8 ? 1.0f : 40.0f);
    fast = slow = x;
    std::vector<float> got = x;
    hadamard_tiles(got.data(), rows, block);
    kv::hadamard(fast.data(), block, rows);
    kv::hadamard_reference(slow.data(), block, rows);
    int bad = 0;
    for (size_t i = 0; i < x.size(); i++) {
      const bool ok = same_bits(got[i], fast[i]) && std::fabs(got[i] - slow[i]) <= 1e-5f * (1 + std::fabs(slow[i]));
      if (!report(ok, "hadamard block %d rows %lld element %zu: %.9g, kv::hadamard %.9g, reference %.9g", block,
                  (long long)rows, i, got[i], fast[i], slow[i]) &&
          ++bad > 2)
        break;
    }
  }
}

}  // namespace

int main() {
  // f16 conversions first: the stored scales and F16 entries rest on them.
  for (int i = 0; i < 1 << 20; i++) {
    uint32_t u = uint32_t(rng());
    if ((u & 0x7f800000u) == 0x7f800000u) u &= 0xbfffffffu;  // finite (NaN payloads are not the point)
    float f;
    std::memcpy(&f, &u, 4);
    report(ce::half_bits(f) == f32_to_fp16(f), "f16 of %.9g: %04x, engine %04x", f, ce::half_bits(f), f32_to_fp16(f));
  }
  const int dims[] = {8, 16, 32, 64, 80, 128, 256, 2, 6, 42, 96};  // 2, 6, 42: Q4_0 entries of odd sizes
  const int odd_dims[] = {7, 33};                                  // Q8_0 (and plain) entries of odd sizes
  for (int32_t t : {ce::kF32, ce::kF16, ce::kQ8_0, ce::kQ4_0}) {
    for (int dim : dims) check_type(t, dim);
    if (t != ce::kQ4_0)
      for (int dim : odd_dims) check_type(t, dim);
  }
  for (int block = 2; block <= 1024; block *= 2) check_hadamard(block);
  std::printf("cuda kv-entry self-test (host): %d checks, %d failures, %d q off by one at rounding ties\n", g_checks,
              g_failures, g_ties);
  return g_failures ? 1 : 0;
}
