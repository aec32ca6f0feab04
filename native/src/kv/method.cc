#include "kv/method.h"

#include <cmath>

#include "core/error.h"
#include "kv/scorers/scorers.h"

namespace folio::kv {

const char* selection_name(Selection s) {
  switch (s) {
    case Selection::Full: return "full";
    case Selection::Streaming: return "streaming";
    case Selection::Scored: return "scored";
  }
  return "?";
}

const char* schedule_name(Schedule s) {
  switch (s) {
    case Schedule::Flat: return "flat";
    case Schedule::Pyramid: return "pyramid";
    case Schedule::Global: return "global";
  }
  return "?";
}
const char* allocator_name(Allocator a) { return a == Allocator::Ada ? "ada" : "uniform"; }
const char* scorer_name(Scorer s) { return s == Scorer::None ? "none" : scorer_row(s).name; }

namespace {

// The method the app starts with and the UI recommends (docs/quality.md measures why).
constexpr const char* kRecommended = "ada-snapkv-global";

MethodSpec scored_method(const ScorerRow& sc, Allocator a, Schedule sch) {
  const bool ada = a == Allocator::Ada;
  MethodSpec m;
  m.selection = Selection::Scored;
  m.schedule = sch;
  m.allocator = a;
  m.scorer = sc.id;
  // SnapKV over the pyramid schedule is PyramidKV, by its published name.
  const bool pyramidkv = sc.id == Scorer::SnapkvWindow && sch == Schedule::Pyramid;
  const std::string suffix = sch == Schedule::Flat ? "" : std::string("-") + schedule_name(sch);
  m.name = (ada ? "ada-" : "") + (pyramidkv ? std::string("pyramidkv") : sc.name + suffix);
  const std::string where = sch == Schedule::Pyramid ? " (pyramid)" : sch == Schedule::Global ? " (global)" : "";
  m.label = (ada ? "Ada-" : "") + (pyramidkv ? std::string("PyramidKV") : sc.label + where);
  m.description = std::string(m.name == kRecommended ? "Recommended: ranks by " : "Ranks by ") + sc.ranks + "; " +
                  (ada ? "each layer’s budget shared among its heads by need" : "every head keeps as many") +
                  (sch == Schedule::Pyramid  ? ", more for early layers."
                   : sch == Schedule::Global ? ", the layers’ budgets by one ranking over them all."
                                             : ".");
  return m;
}

}  // namespace

// The one method table, derived from the scorer table: adding a scorer adds its methods.
const std::vector<MethodSpec>& method_table() {
  static const std::vector<MethodSpec> table = [] {
    std::vector<MethodSpec> t = {
        {"full", Selection::Full, Schedule::Flat, Allocator::Uniform, Scorer::None, "Full cache",
         "No compression: the whole cache (most memory)."},
        {"streaming", Selection::Streaming, Schedule::Flat, Allocator::Uniform, Scorer::None, "StreamingLLM",
         "Keeps the first tokens and the most recent ones only."},
    };
    for (const ScorerRow& sc : scorer_table())
      for (Allocator a : {Allocator::Uniform, Allocator::Ada})
        for (Schedule sch : {Schedule::Flat, Schedule::Pyramid, Schedule::Global})
          t.push_back(scored_method(sc, a, sch));
    return t;
  }();
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
