#include "forward/moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace folio::forward {

Routing route_tokens(const float* logits, int64_t m, int n_expert, int k) {
  Routing r;
  r.tokens.resize(size_t(n_expert));
  r.weights.resize(size_t(n_expert));
  std::vector<double> p(static_cast<size_t>(n_expert));
  std::vector<int> order(static_cast<size_t>(n_expert));
  for (int64_t t = 0; t < m; t++) {
    const float* l = logits + t * n_expert;  // [n_expert]
    const float mx = *std::max_element(l, l + n_expert);
    // The softmax's denominator cancels in the renormalisation: the picked experts' exp(l − max) suffice.
    for (int e = 0; e < n_expert; e++) p[size_t(e)] = std::exp(double(l[e]) - double(mx));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
      return p[size_t(a)] > p[size_t(b)] || (p[size_t(a)] == p[size_t(b)] && a < b);
    });
    double sum = 0;
    for (int i = 0; i < k; i++) sum += p[size_t(order[size_t(i)])];
    for (int i = 0; i < k; i++) {
      const int e = order[size_t(i)];
      r.tokens[size_t(e)].push_back(int32_t(t));
      r.weights[size_t(e)].push_back(float(p[size_t(e)] / sum));
    }
  }
  return r;
}

namespace {
float* floats(backend::Backend& be, backend::Buffer& b, int64_t count) {
  b.ensure(be, size_t(std::max<int64_t>(count, 1)) * sizeof(float));
  return b.as<float>();
}
}  // namespace

void moe_ffn(backend::Backend& be, const HParams& hp, const LayerWeights& L, const float* xn, int64_t m, float* x,
             float* ffa, float* ffb, MoeScratch& s, Control& ctl) {
  const int64_t E = hp.n_embd, F = hp.n_ff_exp, X = hp.n_expert;
  float* router = floats(be, s.router, m * X);  // [m, n_expert]
  be.matmul(L.ffn_gate_inp, xn, m, router);
  s.router_host.resize(size_t(m * X));
  be.download(s.router_host.data(), router, size_t(m * X) * sizeof(float));
  const Routing r = route_tokens(s.router_host.data(), m, hp.n_expert, hp.n_expert_used);
  float* xg = floats(be, s.xg, m * E);  // [c, E] the rows routed to one expert
  float* yg = floats(be, s.yg, m * E);  // [c, E] that expert's outputs
  for (int e = 0; e < hp.n_expert; e++) {
    const std::vector<int32_t>& tok = r.tokens[size_t(e)];
    const int64_t c = int64_t(tok.size());
    if (c == 0) continue;  // never read
    ctl.check();
    for (int64_t i = 0; i < c; i++) be.copy(xg + i * E, xn + tok[size_t(i)] * E, size_t(E) * sizeof(float));
    be.matmul(expert_rows(L.gate_exps, e, F), xg, c, ffa);  // ffa [c, F]
    be.matmul(expert_rows(L.up_exps, e, F), xg, c, ffb);    // ffb [c, F]
    be.swiglu(ffa, ffb, ffa, c, F);
    be.matmul(expert_rows(L.down_exps, e, E), ffa, c, yg);  // yg [c, E]
    for (int64_t i = 0; i < c; i++) {                       // x[token] += weight · y
      be.scale(yg + i * E, r.weights[size_t(e)][size_t(i)], E);
      be.add(x + tok[size_t(i)] * E, yg + i * E, E);
    }
  }
}

}  // namespace folio::forward
