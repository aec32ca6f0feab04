// What a compression did (ADAKV.md, "Statistics"): these numbers drive the inspector.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kv/method.h"

namespace folio::kv {

struct HeadStats {
  int32_t kept = 0;             // entries kept, the window included
  double retained_mass = 1;     // Σ_kept Ā / Σ_all Ā, Ā = the window's mean attention (before pooling)
  double concentration = 1;     // fraction of the prefix tokens that hold 90% of the head's Ā
};

struct LayerStats {
  int32_t budget = 0;           // per-head budget B_l of this layer (window included)
  size_t bytes_full = 0;        // K + V bytes of the whole prefix in this layer
  size_t bytes_kept = 0;        // K + V bytes of the kept entries
  double eps_over_c = 0;        // the paper's normalised bound: 2 · (Hk − Σ_h retained_mass_h)
  double attn_l1 = -1;          // L1 change of the window queries' attention output; -1 when not measured
  double ms_score = 0, ms_select = 0, ms_compact = 0;
  std::vector<HeadStats> heads;
};

struct CompressionStats {
  std::string method;
  int32_t prefix_tokens = 0;    // L
  int32_t window = 0;
  int32_t kernel = 0;
  double alpha = 0;
  Budget budget;                // the resolved per-head budget
  std::string kv_type;
  std::vector<LayerStats> layers;
  std::vector<int32_t> token_retention;  // [L]: how many (layer, head) slots kept each prefix token
  size_t kv_bytes_full = 0;
  size_t kv_bytes_kept = 0;
  double ms_prefill = 0;        // the whole prefill, compression included
  double ms_compress = 0;       // scoring, selection and compaction summed over layers
};

}  // namespace folio::kv
