// A session: a context over a model plus what a conversation needs around it: the tokens the cache
// holds, the logits to sample the next token from, prefill, compression, generation, truncate, fork and
// save/load.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kv/stats.h"
#include "session/context.h"
#include "model/model.h"
#include "sampling/sampler.h"

namespace folio {

struct GenerateParams {
  int32_t n = 128;  // exactly this many tokens unless stopped
  SamplingParams sampling;
  bool stop_at_eog = false;  // stop at an end-of-generation token
  // Add up the attention the answer pays what the cache held before it (the citations, docs/citations.md):
  // GenerateResult::attention. Off, the pass does none of that work.
  bool collect_attention = false;
};

struct GenerateResult {
  std::vector<int32_t> tokens;
  std::string text;
  std::string stop_reason;  // length, eog, cancelled, context
  double seconds = 0;
  // With collect_attention: [layer][position] for the positions before the answer, the attention the queries
  // of the answer's tokens (each fed back) gave the entries that came from that position, summed over the
  // tokens and the query heads and divided by their number: each layer's row sums to at most 1 (the share
  // the answer's attention paid what came before it; the rest went to the answer itself). Empty when not
  // collected or when no token was fed back.
  std::vector<std::vector<float>> attention;
};

// A saved session as its file holds it (session-file.cc), checked against the model: SESSION_FILE_* errors for
// a damaged file, one of another model or cache layout, or one of more positions than n_ctx (n_ctx 0: not
// checked, the heads' spare room the usual).
struct SavedSession {
  int32_t n_past = 0;
  std::vector<int32_t> tokens;
  std::vector<float> logits;
  std::string meta;
  FlatKvCache cache;      // with room for the spare entries a context of n_ctx positions gives after n_past
  kv::KeptScores scores;  // its entries' kept scores (Context::kept_scores); empty when it has none
};
SavedSession read_saved_session(const Model& model, const std::string& path, int32_t n_ctx);

// Called for every generated token with the complete UTF-8 text it finished (may be empty).
using TokenFn = std::function<void(int32_t id, const std::string& text)>;

class Session {
 public:
  Session(std::shared_ptr<const Model> model, const ContextParams& params);

  const Model& model() const { return *model_; }
  std::shared_ptr<const Model> model_ptr() const { return model_; }
  Context& context() { return *ctx_; }
  const Context& context() const { return *ctx_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  const std::vector<float>& last_logits() const { return last_logits_; }

  // A copy sharing nothing mutable: a new chat from the same compressed document.
  std::unique_ptr<Session> fork() const;

  void prefill(const std::vector<int32_t>& tokens, bool all_logits, std::vector<float>& logits,
               const ProgressFn& progress, const std::atomic<bool>* cancel);
  // With read.checkpoint, a chunked read saves where it stands there (a session file whose meta holds the
  // read's key and state) and starts from a checkpoint of the same read when there is one; the file is removed
  // when the read completes. A damaged or foreign checkpoint is ignored (the read starts over).
  kv::CompressionStats compress(const std::vector<int32_t>& tokens, const kv::CompressOptions& opts,
                                const ProgressFn& progress, const std::atomic<bool>* cancel,
                                const ReadOptions& read = {});
  // Samples from the last logits, feeds each token back; needs a prefill first (NO_PROMPT).
  GenerateResult generate(const GenerateParams& params, const TokenFn& on_token, const std::atomic<bool>* cancel);
  // Forgets every position from n on; the logits to sample from are gone until the next prefill. (After a
  // re-based read the document's tokens outnumber its positions; the tokens after position n are dropped.)
  void truncate(int32_t n);

  // Forgets positions [from, to) and their tokens; what follows moves back to `from`. The logits to sample
  // from are gone until the next prefill.
  void forget(int32_t from, int32_t to);
  // Compresses positions [from, to) by the attention of `window` (the next question) instead of dropping them
  // (Context::compress_span); returns the new n_past. The span's positions keep the span's last tokens, one
  // per position as truncate and forget expect (each head kept entries of its own). The logits to sample
  // from are gone until the next prefill.
  int32_t compress_span(int32_t from, int32_t to, double keep_ratio, const std::vector<int32_t>& window,
                        const std::atomic<bool>* cancel);

  // Packs positions [from, to) (Context::pack_span); the span's positions keep its last tokens, as after
  // compress_span. The logits to sample from are gone until the next prefill. Returns the new n_past.
  int32_t pack_span(int32_t from, int32_t to);

  // Writes the session to `path` atomically (a temporary file renamed into place), with a checksum;
  // `meta` is kept as given (the app stores the compression statistics there).
  void save(const std::string& path, const std::string& meta) const;
  // Appends the entries of a saved session whose positions are in [from, to) (to < 0: all it holds) after
  // what this session holds, with their tokens: a document placed beside others (docs/compression.md, "Many
  // documents"). Their keys are rotated to their new positions: the span's own spacing, or packed
  // (Context::append_part), when it takes as many positions as its fullest head keeps and its last tokens.
  // Refused (NOT_SUPPORTED) for a session saved with re-based or packed positions; CONTEXT_FULL when they do
  // not fit. The logits to sample from are gone until the next prefill. Returns the new n_past.
  int32_t append_saved(const std::string& path, int32_t from, int32_t to, bool pack = false);
  // One budget over the set's documents, at positions `spans` (Context::reselect); the tokens and positions stay.
  // Returns the entries each span holds after, [span][layer · n_head_kv + head].
  std::vector<std::vector<int32_t>> reselect(const std::vector<std::pair<int32_t, int32_t>>& spans, double keep_ratio,
                                             double alpha, bool across_layers) {
    return ctx_->reselect(spans, keep_ratio, alpha, across_layers);
  }

  // Reads a saved session. Throws SESSION_FILE_* errors for damaged files, files of another model or
  // another cache layout; `meta` receives what was saved with it.
  static std::unique_ptr<Session> load(std::shared_ptr<const Model> model, const std::string& path,
                                       const ContextParams& params, std::string* meta);

 private:
  // The tokens' bookkeeping after a span starting at `from` took fewer positions (n_past went from before to after).
  void squeezed(int32_t from, int32_t before, int32_t after);

  std::shared_ptr<const Model> model_;
  std::unique_ptr<Context> ctx_;
  std::vector<int32_t> tokens_;
  std::vector<float> last_logits_;
};

}  // namespace folio
