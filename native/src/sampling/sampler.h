// Token sampling: repetition penalty, then top-k, top-p, min-p, temperature and a seeded draw; greedy
// (argmax, lowest id on ties) when the temperature is 0. The order is llama.cpp's default chain.
#pragma once
#include <cstdint>
#include <vector>

namespace folio {

struct SamplingParams {
  float temperature = 0.8f;     // <= 0: greedy
  int32_t top_k = 40;           // <= 0: off
  float top_p = 0.95f;          // >= 1: off
  float min_p = 0.05f;          // <= 0: off
  float repeat_penalty = 1.0f;  // 1: off
  int32_t repeat_last_n = 64;   // how many recent tokens the penalty looks at
  uint64_t seed = 0;
};

// A small, portable PRNG (xoshiro256**, seeded through splitmix64) so a seed gives the same tokens on
// every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  double uniform();  // [0, 1)

 private:
  uint64_t s_[4];
};

class Sampler {
 public:
  Sampler(const SamplingParams& params, int32_t n_vocab);
  // Picks the next token from `logits` ([n_vocab]); `history` is the sequence so far (for the penalty).
  int32_t sample(const float* logits, const std::vector<int32_t>& history);
  const SamplingParams& params() const { return p_; }

 private:
  SamplingParams p_;
  int32_t n_vocab_;
  Rng rng_;
  std::vector<std::pair<float, int32_t>> cand_;  // (logit, id)
};

// Index of the largest value; the lowest index wins ties.
int32_t argmax(const float* x, int32_t n);

}  // namespace folio
