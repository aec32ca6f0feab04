#include "kv/scorers/scorers.h"

#include "core/error.h"

namespace folio::kv {

// The one scorer table: a new scorer is a file in kv/scorers/ and a row here; the methods over it (every
// allocator and layer schedule) follow from it (kv/method.cc).
const std::vector<ScorerRow>& scorer_table() {
  static const std::vector<ScorerRow> table = {
      {Scorer::SnapkvWindow, "snapkv", "SnapKV", "the attention of the document’s last tokens", nullptr, false, false,
       false},
      {Scorer::Critical, "critical", "CriticalKV", "attention weighted by how far each token moves the output",
       critical_scores, true, false, false},
      {Scorer::Defensive, "defensive", "DefensiveKV", "the largest attention any recent token gives, not the average",
       defensive_scores, true, false, false},
      {Scorer::Expected, "expected", "ExpectedAttention", "the attention questions to come are expected to give",
       expected_scores, false, true, false},
      {Scorer::Kvzip, "kvzip", "KVzip", "the attention while the model repeats the document (reads it twice)",
       kvzip_scores, false, false, true},
  };
  return table;
}

const ScorerRow& scorer_row(Scorer s) {
  for (const ScorerRow& r : scorer_table())
    if (r.id == s) return r;
  fail("INTERNAL", "a scorer without a row in the scorer table");
}

}  // namespace folio::kv
