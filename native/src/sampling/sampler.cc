#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "core/error.h"

namespace folio {

static uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

Rng::Rng(uint64_t seed) {
  for (auto& s : s_) s = splitmix64(seed);
}

uint64_t Rng::next() {
  auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return double(next() >> 11) * 0x1.0p-53; }

int32_t argmax(const float* x, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return best;
}

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab) : p_(params), n_vocab_(n_vocab), rng_(params.seed) {
  if (!(p_.temperature >= 0) || !std::isfinite(p_.temperature)) fail("INVALID_ARGUMENT", "temperature must be >= 0");
  if (!(p_.top_p > 0)) fail("INVALID_ARGUMENT", "top_p must be > 0");
  if (!(p_.min_p >= 0 && p_.min_p <= 1)) fail("INVALID_ARGUMENT", "min_p must be between 0 and 1");
  if (!(p_.repeat_penalty > 0)) fail("INVALID_ARGUMENT", "repeat_penalty must be > 0");
}

int32_t Sampler::sample(const float* logits, const std::vector<int32_t>& history) {
  cand_.resize(size_t(n_vocab_));
  for (int32_t i = 0; i < n_vocab_; i++) cand_[size_t(i)] = {logits[i], i};

  // Repetition penalty (CTRL-style): each distinct recent token's logit moves towards "less likely".
  if (p_.repeat_penalty != 1.0f && p_.repeat_last_n != 0) {
    const size_t n = p_.repeat_last_n < 0 ? history.size() : std::min(history.size(), size_t(p_.repeat_last_n));
    std::unordered_set<int32_t> seen(history.end() - std::ptrdiff_t(n), history.end());
    for (int32_t id : seen) {
      if (id < 0 || id >= n_vocab_) continue;
      float& l = cand_[size_t(id)].first;
      l = l > 0 ? l / p_.repeat_penalty : l * p_.repeat_penalty;
    }
  }

  // Sorted by logit, descending; equal logits keep the lower id first.
  auto better = [](const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  if (p_.temperature <= 0) return std::min_element(cand_.begin(), cand_.end(), better)->second;

  size_t keep = cand_.size();
  if (p_.top_k > 0 && size_t(p_.top_k) < keep) {
    keep = size_t(p_.top_k);
    std::partial_sort(cand_.begin(), cand_.begin() + std::ptrdiff_t(keep), cand_.end(), better);
  } else {
    std::sort(cand_.begin(), cand_.end(), better);
  }
  cand_.resize(keep);

  // Probabilities at temperature 1 for top-p and min-p (as llama.cpp, the temperature applies last).
  auto probs = [&](float temp) {
    std::vector<double> p(cand_.size());
    double sum = 0;
    for (size_t i = 0; i < cand_.size(); i++) sum += p[i] = std::exp(double(cand_[i].first - cand_[0].first) / temp);
    for (double& v : p) v /= sum;
    return p;
  };
  if (p_.top_p < 1.0f) {
    std::vector<double> p = probs(1.0f);
    double cum = 0;
    size_t n = 0;
    while (n < p.size()) {
      cum += p[n++];
      if (cum >= p_.top_p) break;
    }
    cand_.resize(n);
  }
  if (p_.min_p > 0) {
    const float floor = cand_[0].first + std::log(p_.min_p);
    size_t n = 1;
    while (n < cand_.size() && cand_[n].first >= floor) n++;
    cand_.resize(n);
  }

  std::vector<double> p = probs(p_.temperature);
  double r = rng_.uniform(), cum = 0;
  for (size_t i = 0; i < p.size(); i++) {
    cum += p[i];
    if (r < cum) return cand_[i].second;
  }
  return cand_.back().second;
}

}  // namespace folio
