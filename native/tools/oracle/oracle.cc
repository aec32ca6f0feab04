// The reference engine's answer for one model: ik_llama.cpp (its public API, include/llama.h) runs a token
// sequence and prints, as JSON on stdout, the logits at chosen positions and the greedy continuation.
// Not part of Folio's build: make-dumps.sh builds it against a built ik_llama.cpp and writes the dumps
// that test/model-oracle.test.ts compares the engine with.
//
//   oracle MODEL.gguf N_CTX N_GREEDY POSITIONS TOKENS
//     POSITIONS: comma-separated prompt positions whose whole logit rows are printed (-1: the last)
//     TOKENS: the comma-separated prompt token ids
//
// An F32 K cache, as the engine's F32 sessions have, and an F16 V cache: ik_llama.cpp takes a V cache
// other than F16 only with flash attention, whose CPU kernels take no F32 cache. No flash attention, so
// the products of queries and keys are float32 as the engine's; 2 threads.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "llama.h"

static std::vector<int> parse_ints(const char* s) {
  std::vector<int> out;
  std::string cur;
  for (const char* p = s;; p++) {
    if (*p == ',' || *p == 0) {
      if (!cur.empty()) out.push_back(std::atoi(cur.c_str()));
      cur.clear();
      if (*p == 0) break;
    } else {
      cur += *p;
    }
  }
  return out;
}

static int argmax(const float* x, int n) {
  int best = 0;
  for (int i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return best;
}

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: oracle MODEL.gguf N_CTX N_GREEDY POSITIONS TOKENS\n");
    return 2;
  }
  const int n_ctx = std::atoi(argv[2]), n_greedy = std::atoi(argv[3]);
  std::vector<int> positions = parse_ints(argv[4]);
  std::vector<llama_token> tokens;
  for (int t : parse_ints(argv[5])) tokens.push_back(t);
  const int n = int(tokens.size());
  if (n == 0 || n + n_greedy > n_ctx) {
    std::fprintf(stderr, "oracle: %d tokens and %d greedy steps do not fit a context of %d\n", n, n_greedy, n_ctx);
    return 2;
  }
  for (int& p : positions)
    if (p < 0) p = n - 1;

  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) {
    std::fprintf(stderr, "oracle: cannot load %s\n", argv[1]);
    return 1;
  }
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = uint32_t(n_ctx);
  cp.n_batch = cp.n_ubatch = uint32_t(n_ctx);
  cp.n_threads = cp.n_threads_batch = 2;
  cp.type_k = GGML_TYPE_F32;
  cp.type_v = GGML_TYPE_F16;
  cp.flash_attn = false;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) {
    std::fprintf(stderr, "oracle: cannot create a context\n");
    return 1;
  }
  const int n_vocab = llama_n_vocab(model);

  // the prompt in one batch, logits at every position
  llama_batch batch = llama_batch_init(n, 0, 1);
  batch.n_tokens = n;
  for (int i = 0; i < n; i++) {
    batch.token[i] = tokens[size_t(i)];
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  if (llama_decode(ctx, batch) != 0) {
    std::fprintf(stderr, "oracle: llama_decode failed on the prompt\n");
    return 1;
  }
  std::printf("{\n  \"model\": \"%s\",\n  \"n_ctx\": %u,\n  \"n_vocab\": %d,\n  \"tokens\": [", argv[1],
              llama_n_ctx(ctx), n_vocab);
  for (int i = 0; i < n; i++) std::printf("%s%d", i ? ", " : "", tokens[size_t(i)]);
  std::printf("],\n  \"argmax_per_position\": [");
  for (int i = 0; i < n; i++) std::printf("%s%d", i ? ", " : "", argmax(llama_get_logits_ith(ctx, i), n_vocab));
  std::printf("],\n  \"logits\": [");
  for (size_t k = 0; k < positions.size(); k++) {
    const float* row = llama_get_logits_ith(ctx, positions[k]);
    std::printf("%s\n    {\"position\": %d, \"row\": [", k ? "," : "", positions[k]);
    for (int v = 0; v < n_vocab; v++) std::printf("%s%.7g", v ? ", " : "", double(row[v]));
    std::printf("]}");
  }
  std::printf("\n  ],\n  \"greedy\": [");
  llama_token next = argmax(llama_get_logits_ith(ctx, n - 1), n_vocab);
  for (int s = 0; s < n_greedy; s++) {
    std::printf("%s%d", s ? ", " : "", next);
    if (s + 1 == n_greedy) break;
    llama_batch one = llama_batch_get_one(&next, 1, n + s, 0);
    if (llama_decode(ctx, one) != 0) {
      std::fprintf(stderr, "oracle: llama_decode failed at greedy step %d\n", s);
      return 1;
    }
    next = argmax(llama_get_logits_ith(ctx, 0), n_vocab);  // a one-token batch: its only row
  }
  std::printf("]\n}\n");
  llama_batch_free(batch);
  llama_free(ctx);
  llama_free_model(model);
  llama_backend_free();
  return 0;
}
