// An inference context over a model: the parameters, the backend the forward pass runs on, the KV store
// in that backend's memory and the next position. The forward pass itself is forward/forward.h.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/kv-store.h"
#include "core/thread-pool.h"
#include "forward/forward.h"
#include "forward/weights.h"
#include "kv/flat-cache.h"
#include "kv/method.h"
#include "kv/stats.h"
#include "model/model.h"

namespace folio {

using forward::ProgressFn;

// Where the forward pass runs. A GPU kind needs its library (libfolio-cuda, libfolio-vulkan) and a device
// (backend/gpu-loader.h).
enum class BackendKind { Cpu, Cuda, Vulkan };
const char* backend_name(BackendKind b);  // "cpu", "cuda", "vulkan"
// The kind a name names (backend_name's inverse); false for any other text.
bool backend_from_name(const std::string& name, BackendKind& out);
// What `auto` runs on (gpu::status()), the CPU where no GPU is chosen.
BackendKind automatic_backend();

// Positions a context holds when neither the caller nor a smaller model says otherwise.
constexpr int32_t kDefaultContext =
    8192;  // electron/api/contract.ts DEFAULT_CONTEXT_TOKENS, held equal by test/default-context.test.ts

struct ContextParams {
  int32_t n_ctx = 0;                 // positions the context can hold; 0: the model's, capped at kDefaultContext
  int32_t n_batch = 512;             // tokens per step of a prefill
  int n_threads = 0;                 // 0: all hardware threads
  KvFormat kv;                       // how the cached keys and values are stored (f16 by default)
  bool reference_attention = false;  // the slow reference attention and window scores (tests; CPU only)
  BackendKind backend = BackendKind::Cpu;
};

// What `auto` runs a context on: automatic_backend(), but the CPU for the reference attention (CPU-only).
BackendKind automatic_backend(const ContextParams& p);

// How compress() reads a prefix (docs/compression.md, "Reading a long document").
struct ReadOptions {
  // Tokens per chunk, each compressed back to the budget; 0: the whole prefix in one pass; kAutoChunk: the
  // engine's choice for the budget (kv::default_chunk).
  static constexpr int32_t kAutoChunk = -1;
  int32_t chunk = 0;
  bool rebase = false;  // beyond the context's positions: give the kept entries contiguous positions
  int32_t room = 0;     // positions a re-based read keeps free after the document for the conversation
  // After the read, give the kept entries contiguous positions even where the document fits: it then takes as
  // many positions as the most entries a head keeps, not its length, and the conversation gets the rest.
  bool pack_positions = false;
  // A chunked read saves its state here (Session::compress) at most every checkpoint_seconds, and a read of
  // the same tokens with the same options picks it up from there; empty: no checkpoints.
  std::string checkpoint;
  double checkpoint_seconds = 30;
};

// Where a chunked read stands after a chunk, to pick it up again after a crash or a quit: the context's cache
// (saved beside this) and the compressor's state.
struct ReadResume {
  int32_t chunks_done = 0;
  bool rebased = false;
  std::string state;  // kv::Compressor::save_state()
};
// Called after every chunk but the last of a chunked read, with the chunks done, the token the next starts
// at, and the state to resume from.
using ChunkHook = std::function<void(int32_t chunks_done, int32_t next_token, const ReadResume& at)>;

class Context {
 public:
  Context(const Model& model, const ContextParams& params);
  // A copy with the same cache contents (a chat forked from a compressed document).
  std::unique_ptr<Context> fork() const;

  const Model& model() const { return model_; }
  const ContextParams& params() const { return params_; }
  int32_t n_ctx() const { return params_.n_ctx; }
  // The position the next token takes. After compression the heads hold fewer entries than this; new
  // tokens still continue the prefix's positions.
  int32_t n_past() const { return n_past_; }
  int n_threads() const { return pool_.size(); }
  BackendKind backend() const { return params_.backend; }
  // The cache (on the GPU backend, a host copy made when asked for).
  const FlatKvCache& cache() const;
  // Replaces the cache (loading a saved session); n_past is the next position, scores its entries' (or none).
  void restore(FlatKvCache cache, int32_t n_past, kv::KeptScores scores = {});
  // The score each entry had when a read kept it (kv::KeptScores), in step with the cache: set by compress(),
  // carried by append_part, fork, truncate and pack_span; gone (empty) once entries in the middle are dropped
  // (forget, compress_span), where nothing re-selects by them any more.
  const kv::KeptScores& kept_scores() const { return scores_; }

  // Runs `tokens` at positions n_past, n_past + 1, ... and appends them to the cache. Writes the logits of
  // every position ([n, n_vocab]) when all_logits, else of the last one ([n_vocab]).
  // Throws CONTEXT_FULL when they do not fit, INVALID_TOKEN for an id outside the vocabulary, CANCELLED
  // when *cancel becomes true; the cache is then rolled back to where it was.
  // With a watch (watch_entries()), the attention the tokens' queries pay each watched entry is added to it.
  void eval(const std::vector<int32_t>& tokens, bool all_logits, std::vector<float>& logits,
            const ProgressFn& progress = nullptr, const std::atomic<bool>* cancel = nullptr,
            forward::AttentionWatch* watch = nullptr);

  // A watch over every entry the cache holds now, [layer][KV head][entry], all zero.
  forward::AttentionWatch watch_entries() const;
  // A watch's values moved to the positions their entries came from: [layer][position] for the positions
  // [0, positions), the values of entries sharing a position added (a head's oldest after a re-based read).
  std::vector<std::vector<float>> by_position(const forward::AttentionWatch& watch, int32_t positions) const;

  // Prefills `tokens` into an empty context and compresses the cache layer by layer as it goes
  // (docs/compression.md): in one pass, or in chunks after each of which every layer is brought back to
  // its budget, so that the cache never holds more than the budget plus one chunk (checked at every chunk:
  // INTERNAL if not). Writes the last position's logits. Throws NOT_EMPTY when the context holds tokens,
  // CONTEXT_FULL when the prefix does not fit the positions (re-based or not); on any failure the context
  // is empty again. With `resume`, the cache restored into this context is that of resume->chunks_done
  // chunks of the same read, which goes on from there.
  kv::CompressionStats compress(const std::vector<int32_t>& tokens, const kv::CompressOptions& opts,
                                std::vector<float>& logits, const ProgressFn& progress = nullptr,
                                const std::atomic<bool>* cancel = nullptr, const ReadOptions& read = {},
                                const ChunkHook& on_chunk = nullptr, const ReadResume* resume = nullptr);

  // Appends the entries of `part` (another context's cache of the same model and element type) whose positions
  // are in [from, to) at positions n_past + (p − from), their keys rotated by n_past − from (the RoPE
  // composition of re-based positions); packed, at contiguous positions instead, each head's ending at the
  // span's last, the span taking as many positions as its fullest head keeps (rebase_positions' rule). Throws
  // CONTEXT_FULL when the span's positions do not fit. Returns the new n_past.
  // part_scores: the part's kept entries' scores (a saved session's), carried with them; none: kept unscored.
  int32_t append_part(const FlatKvCache& part, int32_t from, int32_t to, bool pack = false,
                      const kv::KeptScores* part_scores = nullptr);

  // One budget over a set (docs/compression.md, "One budget over the set"): of the entries in the spans
  // [from, to) (the set's documents, ascending, apart) that a read scored, keeps about keep_ratio, chosen over
  // all spans at once by their kept scores (kv::keep_over_set: Ada's alpha, across_layers for the global
  // schedule); every other entry stays, and nothing moves. Every head is left with only its spare room (what
  // appending the set reserved ahead is given back), so the app calls it once a set is whole, keep_ratio 1 to only
  // count. Returns span_entries(spans) after.
  std::vector<std::vector<int32_t>> reselect(const std::vector<std::pair<int32_t, int32_t>>& spans, double keep_ratio,
                                             double alpha, bool across_layers);
  // The entries each span holds: [span][layer · n_head_kv + head].
  std::vector<std::vector<int32_t>> span_entries(const std::vector<std::pair<int32_t, int32_t>>& spans) const;

  // Forgets every position from n onwards (regenerate, edit).
  void truncate(int32_t n);
  // Forgets positions [from, to) (a conversation's oldest turns) and moves what follows back to `from`, its
  // keys rotated to the new positions (docs/compression.md, "The conversation").
  void forget(int32_t from, int32_t to);
  // Gives the entries of positions [from, to) contiguous positions, each head's ending at from + R, R the most
  // any head holds there (forward::pack_span), and moves what follows back to it: a document's kept entries on
  // the positions they need (docs/compression.md, "Packed positions"). Returns the new n_past.
  int32_t pack_span(int32_t from, int32_t to);
  // Compresses positions [from, to) (a conversation's older turns) by score instead (docs/compression.md, "The
  // conversation"): the `window` tokens (the next question) run at positions n_past, n_past + 1, ... without
  // staying in the cache, and their attention ranks the span's entries; each layer keeps ceil(keep_ratio · its
  // span entries) of them, no head more than ceil(keep_ratio · (to − from)) (forward::top_of_span). The kept
  // entries end just before from + R, R the most any head kept, and what follows moves back to it, keys rotated.
  // keep_ratio 0 is forget(). Returns the new n_past. Throws CANCELLED when *cancel becomes true; the cache
  // is then as it was.
  int32_t compress_span(int32_t from, int32_t to, double keep_ratio, const std::vector<int32_t>& window,
                        const std::atomic<bool>* cancel = nullptr);

 private:
  void check_tokens(const std::vector<int32_t>& tokens) const;
  void check_ids(const std::vector<int32_t>& tokens) const;
  void run(const std::vector<int32_t>& tokens, bool all_logits, float* logits, const ProgressFn& progress,
           const std::atomic<bool>* cancel, kv::Compressor* comp, forward::AttentionWatch* watch = nullptr);
  // What the compressor's scorer needs of the model (value projections, RoPE).
  void prepare_scorer(kv::Compressor& comp);
  // The host copy of the rope frequency divisors this context's positions use (model/weights.h), or null.
  const float* rope_factors_host() const {
    const Weight& w = rope_factors(model_.weights(), model_.hparams(), params_.n_ctx);
    return w ? w.f32() : nullptr;
  }
  // kvzip: re-reads the document's tokens [first, first + m) after a request to repeat them, the compressor
  // watching the attention; the re-reading leaves nothing in the cache. reread_room: the entries per head it
  // adds meanwhile for a chunk of `chunk` tokens.
  void reread(kv::Compressor& comp, const std::vector<int32_t>& tokens, int32_t first, int32_t m,
              const std::atomic<bool>* cancel, const ProgressFn& progress);
  int32_t reread_room(int32_t chunk) const;

  const Model& model_;
  ContextParams params_;
  ThreadPool pool_;
  std::shared_ptr<backend::Backend> backend_;
  std::shared_ptr<const forward::BackendWeights> weights_;  // made by the first pass (the CPU repacks then)
  std::unique_ptr<backend::KvStore> kv_;
  std::unique_ptr<forward::ForwardPass> pass_;
  mutable FlatKvCache host_;  // where the store is not a host cache: its copy, refreshed by cache() when stale
  mutable bool host_stale_ = true;
  int32_t n_past_ = 0;
  kv::KeptScores scores_;  // kept_scores()
};

}  // namespace folio
