// Compression methods and budgets (ADAKV.md). A method is a selection (full, streaming, or scored by the
// SnapKV window scorer, the only scorer), and for scored selection a layer schedule and a head allocator:
// snapkv = flat + uniform, pyramidkv = pyramid + uniform, ada-snapkv = flat + ada, ada-pyramidkv =
// pyramid + ada; full and streaming select no tokens by score.
#pragma once
#include <cstdint>
#include <string>

namespace folio::kv {

enum class Selection { Full, Streaming, Scored };
enum class Schedule { Flat, Pyramid };
enum class Allocator { Uniform, Ada };

struct MethodSpec {
  std::string name;
  Selection selection = Selection::Full;
  Schedule schedule = Schedule::Flat;
  Allocator allocator = Allocator::Uniform;
};

// Throws Error INVALID_METHOD naming the known methods.
MethodSpec parse_method(const std::string& name);

struct CompressOptions {
  MethodSpec method;
  double budget_ratio = 0;    // kept ratio of the prefix in (0, 1]; used when budget_tokens == 0
  int32_t budget_tokens = 0;  // per-head budget B in tokens, the window included
  double alpha = 0.2;         // ada safeguard
  int32_t window = 32;        // observation window w
  int32_t kernel = 7;         // max-pool kernel (odd; 1 = no pooling)
  int32_t beta = 20;          // pyramid steepness
  int32_t sinks = 4;          // streaming: attention sinks kept at the start
  bool measure_loss = false;  // compute the L1 loss of the window queries' attention output per layer
};

// Checks the options that do not depend on the prefix. Throws INVALID_ARGUMENT / BUDGET_TOO_SMALL.
void validate(const CompressOptions& o);

// The per-head budget for a prefix of L tokens.
struct Budget {
  bool compress = false;   // false: everything is kept
  std::string reason;      // why nothing is compressed: "full", "prefix within the window", "budget covers the prefix"
  int32_t B = 0;           // per-head budget, window included
  int32_t b = 0;           // selectable per-head budget, B − w
  bool clamped = false;    // a ratio gave B <= w and was raised to w + 1
};
Budget resolve_budget(const CompressOptions& o, int32_t L);

}  // namespace folio::kv
