// KVzip (arXiv 2505.23416; docs/compression.md, "Scorers"): after a chunk is read, the model is asked to repeat it
// and re-reads its tokens; an entry scores the largest attention any of those queries gave it (max over the
// query group and the re-reading's positions), kept across chunks as the largest seen. The driver runs the
// re-reading (Context::reread, session/context.cc) and hands the result in as LayerView::seen.
#include "kv/scorers/scorers.h"

namespace folio::kv {

EntryScores kvzip_scores(ThreadPool&, const LayerView& v) {
  const WindowShape& s = v.shape;
  EntryScores out;
  out.score.resize(size_t(s.n_head_kv));
  for (int g = 0; g < s.n_head_kv; g++) {
    const std::vector<float>& seen = (*v.seen)[size_t(g)];
    out.score[size_t(g)].assign(seen.begin(), seen.begin() + (s.len(g) - s.w));
  }
  return out;
}

}  // namespace folio::kv
