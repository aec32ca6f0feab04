#include "kv/method.h"

#include <cmath>

#include "core/error.h"

namespace folio::kv {

const char* selection_name(Selection s) {
  switch (s) {
    case Selection::Full: return "full";
    case Selection::Streaming: return "streaming";
    case Selection::Scored: return "scored";
  }
  return "?";
}

const char* schedule_name(Schedule s) { return s == Schedule::Pyramid ? "pyramid" : "flat"; }
const char* allocator_name(Allocator a) { return a == Allocator::Ada ? "ada" : "uniform"; }
const char* scorer_name(Scorer s) { return s == Scorer::SnapkvWindow ? "snapkv" : "none"; }

// The one method table: adding a method is a row here (and its copy in electron/kv/methods.ts).
const std::vector<MethodSpec>& method_table() {
  static const std::vector<MethodSpec> table = {
      {"full", Selection::Full, Schedule::Flat, Allocator::Uniform, Scorer::None, "Full cache",
       "No compression: the whole cache (most memory)."},
      {"streaming", Selection::Streaming, Schedule::Flat, Allocator::Uniform, Scorer::None, "StreamingLLM",
       "Keeps the first tokens and the most recent ones only."},
      {"snapkv", Selection::Scored, Schedule::Flat, Allocator::Uniform, Scorer::SnapkvWindow, "SnapKV",
       "Every head keeps the same number of tokens."},
      {"pyramidkv", Selection::Scored, Schedule::Pyramid, Allocator::Uniform, Scorer::SnapkvWindow, "PyramidKV",
       "Uniform heads, more budget for early layers."},
      {"ada-snapkv", Selection::Scored, Schedule::Flat, Allocator::Ada, Scorer::SnapkvWindow, "Ada-SnapKV",
       "Recommended: each layer’s budget shared among its heads by need."},
      {"ada-pyramidkv", Selection::Scored, Schedule::Pyramid, Allocator::Ada, Scorer::SnapkvWindow, "Ada-PyramidKV",
       "Ada’s sharing with more budget for early layers."},
  };
  return table;
}

MethodSpec parse_method(const std::string& name) {
  std::string known;
  const auto& table = method_table();
  for (size_t i = 0; i < table.size(); i++) {
    if (table[i].name == name) return table[i];
    known += (i == 0 ? "" : i + 1 == table.size() ? " or " : ", ") + table[i].name;
  }
  fail("INVALID_METHOD", "unknown compression method '" + name + "': use " + known);
}

void set_budget(CompressOptions& o, double budget) {
  o.budget_ratio = 0;
  o.budget_tokens = 0;
  if (!(budget > 0) || !std::isfinite(budget))
    fail("INVALID_ARGUMENT", "give the budget as a kept ratio in (0, 1] or as tokens per head");
  if (budget <= 1) {
    o.budget_ratio = budget;
    return;
  }
  if (budget != std::floor(budget) || budget > double(INT32_MAX))
    fail("INVALID_ARGUMENT", "a budget above 1 is tokens per head and must be whole");
  o.budget_tokens = int32_t(budget);
}

void validate(const CompressOptions& o) {
  if (o.window < 1) fail("INVALID_ARGUMENT", "the observation window must be at least 1 token");
  if (o.kernel < 1 || o.kernel % 2 == 0)
    fail("INVALID_ARGUMENT", strfmt("the pooling kernel must be odd, not %d", o.kernel));
  if (!(o.alpha >= 0 && o.alpha <= 1)) fail("INVALID_ARGUMENT", "alpha must be between 0 and 1");
  if (o.beta < 1) fail("INVALID_ARGUMENT", "beta must be at least 1");
  if (o.method.selection == Selection::Full) return;
  if (o.budget_tokens < 0) fail("INVALID_ARGUMENT", "the budget must be positive");
  if (o.budget_tokens == 0 && !(o.budget_ratio > 0 && o.budget_ratio <= 1))
    fail("INVALID_ARGUMENT", "give the budget as a kept ratio in (0, 1] or as tokens per head");
  if (o.budget_tokens > 0 && o.budget_tokens <= o.window)
    fail("BUDGET_TOO_SMALL", strfmt("a budget of %d tokens per head does not exceed the observation window of %d "
                                    "tokens: give more than %d",
                                    o.budget_tokens, o.window, o.window));
}

Budget resolve_budget(const CompressOptions& o, int32_t L) {
  Budget r;
  if (o.method.selection == Selection::Full) {
    r.reason = "full";
    r.B = L;
    return r;
  }
  if (L <= o.window) {
    r.reason = "prefix within the window";
    r.B = L;
    return r;
  }
  int64_t B = o.budget_tokens > 0 ? o.budget_tokens : std::llround(o.budget_ratio * double(L));
  if (B <= o.window) {  // only a ratio can get here
    B = o.window + 1;
    r.clamped = true;
  }
  if (B >= L) {
    r.reason = "budget covers the prefix";
    r.B = L;
    return r;
  }
  r.compress = true;
  r.B = int32_t(B);
  r.b = r.B - o.window;
  return r;
}

}  // namespace folio::kv
