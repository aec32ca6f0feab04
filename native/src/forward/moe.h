// The mixture-of-experts feed-forward block (qwen3moe): a router picks n_expert_used of n_expert SwiGLU
// experts per token, and the token's output is their outputs weighted by the router's renormalised softmax.
// The routing is decided on the host (a few floats per token come back); each expert then runs on the rows
// of the tokens routed to it, so an expert no token picked is never read (on the CPU its matrices stay in the
// mapped file).
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "forward/control.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace folio::forward {

// Which tokens each expert gets, and with what weight.
struct Routing {
  std::vector<std::vector<int32_t>> tokens;  // [n_expert] the chunk's token indices, ascending
  std::vector<std::vector<float>> weights;   // [n_expert] the weight of each of those tokens
};

// From the router's logits [m, n_expert] (host): per token the softmax over the experts, its k largest
// probabilities (ties: the lower expert), divided by their sum (llama.cpp's softmax gating with norm_w).
Routing route_tokens(const float* logits, int64_t m, int n_expert, int k);

// Buffers the block reuses across calls.
struct MoeScratch {
  backend::Buffer router, xg, yg;  // [C, n_expert], [C, n_embd] the routed rows, [C, n_embd] their outputs
  std::vector<float> router_host;  // [C, n_expert]
};

// x [m, E] += Σ_experts weight · down(silu(gate(xn)) · up(xn)) over the routed experts, xn [m, E] the
// normed input. ffa, ffb: [m, n_ff_exp] at least.
void moe_ffn(backend::Backend& be, const HParams& hp, const LayerWeights& L, const float* xn, int64_t m, float* x,
             float* ffa, float* ffb, MoeScratch& s, Control& ctl);

}  // namespace folio::forward
