// Compression methods and budgets (docs/compression.md). A method combines a selection (keep all, keep sinks and
// the recent tokens, or keep what a scorer ranks highest), a layer schedule, a head allocator and a
// scorer. The methods are the rows of one table (method_table(), kv/method.cc): full, streaming, and every
// scorer of kv/scorers/ under every allocator and schedule, named [ada-]<scorer>[-pyramid|-global]. The
// app's copy, electron/shared/kv/methods.ts, derives the same rows and is held equal by test/kv-schema.test.ts.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace folio::kv {

enum class Selection { Full, Streaming, Scored };
// Global: one top-k over every layer's heads decides each layer's budget (KVzip's, Layer-DefensiveKV's).
enum class Schedule { Flat, Pyramid, Global };
enum class Allocator { Uniform, Ada };
// None: the selection ranks nothing (full, streaming). The others are the rows of kv/scorers/scorers.h.
enum class Scorer { None, SnapkvWindow, Critical, Defensive, Expected, Kvzip };

// The names the engine reports (methods()) and the app's table uses for each value.
const char* selection_name(Selection s);  // "full", "streaming", "scored"
const char* schedule_name(Schedule s);    // "flat", "pyramid", "global"
const char* allocator_name(Allocator a);  // "uniform", "ada"
const char* scorer_name(Scorer s);        // "none", "snapkv", "critical", "defensive", "expected", "kvzip"

struct MethodSpec {
  std::string name;
  Selection selection = Selection::Full;
  Schedule schedule = Schedule::Flat;
  Allocator allocator = Allocator::Uniform;
  Scorer scorer = Scorer::None;
  std::string label;        // for people, e.g. "Ada-SnapKV"
  std::string description;  // one line for the method's choice in the UI
};

// Every method, in the order the UI and error messages list them.
const std::vector<MethodSpec>& method_table();

// The row named `name`. Throws Error INVALID_METHOD naming the known methods.
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

// The one reading of a budget as the app gives it, a single number: a kept ratio r in (0, 1], or whole
// tokens per head when > 1 (so 1 is "keep everything", 2 is two tokens per head). Sets budget_ratio or
// budget_tokens; throws INVALID_ARGUMENT for anything else (<= 0, not finite, a fraction above 1).
void set_budget(CompressOptions& o, double budget);

// Checks the options that do not depend on the prefix. Throws INVALID_ARGUMENT / BUDGET_TOO_SMALL.
void validate(const CompressOptions& o);

// The per-head budget for a prefix of L tokens. electron/shared/kv/budget.ts follows the same steps for the
// memory estimate (which runs before a model is loaded); test/kv-schema.test.ts compares the two.
struct Budget {
  bool compress = false;  // false: everything is kept
  std::string reason;     // why nothing is compressed: "full", "prefix within the window", "budget covers the prefix"
  int32_t B = 0;          // per-head budget, window included
  int32_t b = 0;          // selectable per-head budget, B − w
  bool clamped = false;   // a ratio gave B <= w and was raised to w + 1
};
Budget resolve_budget(const CompressOptions& o, int32_t L);

}  // namespace folio::kv
