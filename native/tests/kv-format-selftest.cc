// The cache's entry formats (kv/entry-format.h) and rotation (kv/hadamard.h) against slow references:
//  - the fast Hadamard transform equals the matrix product with H's entries, and applied twice gives the row
//    back (H is its own inverse), for head sizes that are powers of two and not (96: blocks of 32);
//  - encode equals the block-by-block reference byte for byte, and decode its element-by-element reading, for
//    every type, whole blocks and the short last block of a head size that is no multiple of 32;
//  - a round trip stays within the type's bound: Q8_0 half a step, Q4_0 one step (the clamp at 15), each plus
//    what rounding d to f16 moves the largest quant by (127 or 8 times 2^-11 of a step);
//  - rotation cuts Q4_0's error on keys with an outlier channel (what it is for), and leaves it unbiased;
//  - attention over a quantized cache stays within a bound set by the type of attention over the floats it
//    was made from (the f32 reference attention), with and without rotation;
//  - compaction keeps each kept entry's bytes (blocks moved whole), and so does a clone.
//   kv-format-selftest [SEED]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu-ops.h"
#include "core/fp16.h"
#include "kv/entry-format.h"
#include "kv/flat-cache.h"
#include "kv/hadamard.h"

using namespace folio;

namespace {

int failures = 0, cases = 0;

void check(bool ok, const char* what, double got, double bound) {
  cases++;
  if (!ok) {
    failures++;
    std::printf("FAIL %s: %g (bound %g)\n", what, got, bound);
  }
}

// The scale of the block that element i of an entry is in (its f16 d), for the round-trip bounds.
float block_scale(KvType t, const uint8_t* entry, int dim, int i) {
  const size_t whole = t == KvType::Q8_0 ? 34 : 18;
  uint16_t d;
  std::memcpy(&d, entry + size_t(i / 32) * whole, 2);
  (void)dim;
  return std::fabs(fp16_to_f32(d));
}

}  // namespace

int main(int argc, char** argv) {
  std::mt19937 rng(argc > 1 ? unsigned(std::atoi(argv[1])) : 1u);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  char what[160];

  // The transform.
  for (int dim : {2, 8, 16, 64, 96, 128, 256, 6}) {
    std::vector<float> x(size_t(4) * size_t(dim));
    for (auto& v : x) v = nd(rng);
    std::vector<float> fast = x, ref = x;
    kv::hadamard(fast.data(), dim, 4);
    kv::hadamard_reference(ref.data(), dim, 4);
    double err = 0, back = 0;
    for (size_t i = 0; i < x.size(); i++) err = std::max(err, double(std::fabs(fast[i] - ref[i])));
    kv::hadamard(fast.data(), dim, 4);
    for (size_t i = 0; i < x.size(); i++) back = std::max(back, double(std::fabs(fast[i] - x[i])));
    std::snprintf(what, sizeof what, "hadamard dim %d: |fast - reference|", dim);
    check(err < 1e-5, what, err, 1e-5);
    std::snprintf(what, sizeof what, "hadamard dim %d: |H·H·x - x|", dim);
    check(back < 1e-5, what, back, 1e-5);
  }

  // Encoding and decoding against the references, and the round trip's bound.
  for (KvType t : {KvType::F32, KvType::F16, KvType::Q8_0, KvType::Q4_0})
    for (int dim : {8, 16, 24, 40, 64, 96, 128, 136}) {
      const int n = 7;
      std::vector<float> x(size_t(n) * size_t(dim));
      for (auto& v : x) v = 3.0f * nd(rng);
      x[5] = 0.0f;  // an exact zero, and a block of zeros (d = 0)
      if (dim >= 64) std::fill(x.begin() + dim, x.begin() + dim + 32, 0.0f);
      const size_t eb = kv::entry_bytes(t, dim);
      std::vector<uint8_t> fast(size_t(n) * eb), ref(fast.size());
      kv::encode(t, false, x.data(), fast.data(), dim, n);
      for (int e = 0; e < n; e++)
        kv::encode_reference(t, x.data() + size_t(e) * size_t(dim), ref.data() + size_t(e) * eb, dim);
      const bool same = fast == ref;
      std::snprintf(what, sizeof what, "%s dim %d: encode equals the reference byte for byte", kv_type_name(t), dim);
      check(same, what, same ? 0 : 1, 0);
      std::vector<float> y(x.size());
      kv::decode_stored(t, ref.data(), y.data(), dim, n);
      double mismatch = 0, worst = 0;
      for (int e = 0; e < n; e++)
        for (int i = 0; i < dim; i++) {
          const uint8_t* entry = ref.data() + size_t(e) * eb;
          const float r = kv::decode_reference(t, entry, dim, i), got = y[size_t(e) * size_t(dim) + size_t(i)];
          mismatch = std::max(mismatch, double(std::fabs(r - got)));
          const float err = std::fabs(got - x[size_t(e) * size_t(dim) + size_t(i)]);
          // f32 exact; f16 half a unit in the last place; Q8_0 half a step + 127·2^-11 d; Q4_0 a step + 8·2^-11 d
          const float bound = t == KvType::F32    ? 0.0f
                              : t == KvType::F16  ? std::fabs(x[size_t(e) * size_t(dim) + size_t(i)]) * 4.9e-4f
                              : t == KvType::Q8_0 ? block_scale(t, entry, dim, i) * (0.5f + 127.0f / 2048 + 1e-4f)
                                                  : block_scale(t, entry, dim, i) * (1.0f + 8.0f / 2048 + 1e-4f);
          worst = std::max(worst, double(err - bound));
        }
      std::snprintf(what, sizeof what, "%s dim %d: decode equals the reference", kv_type_name(t), dim);
      check(mismatch == 0, what, mismatch, 0);
      std::snprintf(what, sizeof what, "%s dim %d: round trip beyond its bound by", kv_type_name(t), dim);
      check(worst <= 0, what, worst, 0);
      std::snprintf(what, sizeof what, "%s dim %d: entry bytes", kv_type_name(t), dim);
      const size_t expect = t == KvType::F32    ? 4 * size_t(dim)
                            : t == KvType::F16  ? 2 * size_t(dim)
                            : t == KvType::Q8_0 ? size_t(dim) + 2 * size_t((dim + 31) / 32)
                                                : size_t(dim) / 2 + 2 * size_t((dim + 31) / 32);
      check(eb == expect, what, double(eb), double(expect));
    }

  // Rotation on keys with an outlier channel (as real models' keys have): Q4_0's mean squared error falls.
  for (int dim : {64, 128}) {
    const int n = 256;
    std::vector<float> x(size_t(n) * size_t(dim));
    for (int e = 0; e < n; e++)
      for (int i = 0; i < dim; i++) x[size_t(e) * size_t(dim) + size_t(i)] = nd(rng) * (i == 3 ? 20.0f : 1.0f);
    double mse[2] = {0, 0};
    for (int rot = 0; rot < 2; rot++) {
      std::vector<uint8_t> b(size_t(n) * kv::entry_bytes(KvType::Q4_0, dim));
      std::vector<float> y(x.size());
      kv::encode(KvType::Q4_0, rot, x.data(), b.data(), dim, n);
      kv::decode(KvType::Q4_0, rot, b.data(), y.data(), dim, n);
      for (size_t i = 0; i < x.size(); i++) mse[rot] += double(y[i] - x[i]) * double(y[i] - x[i]) / double(x.size());
    }
    std::printf("q4_0 dim %d, an outlier channel: mean squared error %.4f unrotated, %.4f rotated\n", dim, mse[0],
                mse[1]);
    std::snprintf(what, sizeof what, "q4_0 dim %d: rotation lowers the error on an outlier channel (ratio)", dim);
    check(mse[1] < 0.5 * mse[0], what, mse[1] / mse[0], 0.5);
  }

  // Attention over a quantized cache against the f32 reference over the same floats.
  ThreadPool pool(2);
  cpu::Scratch scratch;
  struct Bound {
    KvFormat f;
    double bound;  // max |output − f32 output|, for N(0,1) keys and values and queries of scale 1
  };
  // Q8_0's steps are ~1/100 of a block's largest number, Q4_0's ~1/8: the outputs (convex combinations of the
  // values) move by about the values' error plus what the keys' error does to the weights.
  // Seen (seed 1): f16 2e-4, q8_0 3.5e-3, q4_0 0.065 at worst over 2,400 outputs; the bounds leave twice that.
  const Bound bounds[] = {{KvType::F16, 1e-3},
                          {KvType::Q8_0, 0.01},
                          {KvType::Q4_0, 0.15},
                          {KvFormat(KvType::Q8_0, KvType::Q8_0, true), 0.01},
                          {KvFormat(KvType::Q4_0, KvType::Q4_0, true), 0.15},
                          {KvFormat(KvType::Q8_0, KvType::Q4_0, false), 0.15}};
  for (const Bound& b : bounds)
    for (int dim : {16, 64, 128}) {
      const int Hk = 2, G = 4, H = Hk * G;
      const int32_t n = 300, m = 3;
      double worst = 0, mean = 0;
      FlatKvCache exact(1, Hk, dim, dim, KvType::F32), quant(1, Hk, dim, dim, b.f);
      std::vector<float> k(size_t(n) * size_t(Hk) * size_t(dim)), v(k.size()), q(size_t(m) * size_t(H) * size_t(dim));
      for (auto& x : k) x = nd(rng);
      for (auto& x : v) x = nd(rng);
      for (auto& x : q) x = nd(rng);
      std::vector<int32_t> pos(static_cast<size_t>(n));
      for (int32_t j = 0; j < n; j++) pos[size_t(j)] = j;
      for (FlatKvCache* c : {&exact, &quant}) {
        c->reserve(0, n, 0);
        c->append(0, k.data(), v.data(), pos.data(), n);
      }
      std::vector<float> want(size_t(m) * size_t(H) * size_t(dim)), got(want.size());
      cpu::attention_reference(pool, scratch, q.data(), exact, 0, m, H, 0, want.data());
      cpu::attention(pool, scratch, q.data(), quant, 0, m, H, 0, got.data());
      for (size_t i = 0; i < got.size(); i++) {
        worst = std::max(worst, double(std::fabs(got[i] - want[i])));
        mean += double(std::fabs(got[i] - want[i])) / double(got.size());
      }
      std::printf("attention %s dim %d: max |quantized - f32| %.4f, mean %.5f\n", kv_format_name(b.f).c_str(), dim,
                  worst, mean);
      std::snprintf(what, sizeof what, "attention %s dim %d: max |quantized - f32|", kv_format_name(b.f).c_str(), dim);
      check(worst < b.bound, what, worst, b.bound);
    }

  // Compaction and clone keep each kept entry's bytes.
  for (KvType t : {KvType::Q8_0, KvType::Q4_0})
    for (int dim : {16, 64}) {
      const int Hk = 3;
      const int32_t n = 50;
      FlatKvCache c(1, Hk, dim, dim, KvFormat(t, t, true));
      std::vector<float> k(size_t(n) * size_t(Hk) * size_t(dim)), v(k.size());
      for (auto& x : k) x = nd(rng);
      for (auto& x : v) x = nd(rng);
      std::vector<int32_t> pos(static_cast<size_t>(n));
      for (int32_t j = 0; j < n; j++) pos[size_t(j)] = 2 * j;
      c.reserve(0, n, 0);
      c.append(0, k.data(), v.data(), pos.data(), n);
      const FlatKvCache before = c.clone();
      std::vector<std::vector<int32_t>> keep(Hk);
      for (int g = 0; g < Hk; g++)
        for (int32_t j = 0; j < n; j++)
          if (rng() % 3 == 0 || j == g) keep[size_t(g)].push_back(j);
      c.compact(0, keep, 4);
      const size_t kb = c.k_entry_bytes(), vb = c.v_entry_bytes();
      bool same = true;
      for (int g = 0; g < Hk; g++) {
        const LayerKv &A = before.layer(0), &B = c.layer(0);
        for (size_t i = 0; i < keep[size_t(g)].size(); i++) {
          const int32_t j = keep[size_t(g)][i];
          const size_t from = size_t(A.heads[size_t(g)].offset + j), to = size_t(B.heads[size_t(g)].offset) + i;
          same = same && std::memcmp(A.k.data() + from * kb, B.k.data() + to * kb, kb) == 0 &&
                 std::memcmp(A.v.data() + from * vb, B.v.data() + to * vb, vb) == 0 &&
                 A.positions(g)[j] == B.positions(g)[i];
        }
        same = same && c.len(0, g) == int32_t(keep[size_t(g)].size());
      }
      std::snprintf(what, sizeof what, "%s dim %d: compaction keeps the kept entries' bytes", kv_type_name(t), dim);
      check(same, what, same ? 0 : 1, 0);
    }

  std::printf("kv-format-selftest: %d cases, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}
