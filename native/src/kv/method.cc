#include "kv/method.h"

#include <cmath>

#include "core/error.h"

namespace folio::kv {

MethodSpec parse_method(const std::string& name) {
  MethodSpec m;
  m.name = name;
  if (name == "full") m.selection = Selection::Full;
  else if (name == "streaming") m.selection = Selection::Streaming;
  else if (name == "snapkv") m.selection = Selection::Scored;
  else if (name == "pyramidkv") m.selection = Selection::Scored, m.schedule = Schedule::Pyramid;
  else if (name == "ada-snapkv") m.selection = Selection::Scored, m.allocator = Allocator::Ada;
  else if (name == "ada-pyramidkv") m.selection = Selection::Scored, m.schedule = Schedule::Pyramid, m.allocator = Allocator::Ada;
  else
    fail("INVALID_METHOD", "unknown compression method '" + name +
                               "': use full, streaming, snapkv, pyramidkv, ada-snapkv or ada-pyramidkv");
  return m;
}

void validate(const CompressOptions& o) {
  if (o.window < 1) fail("INVALID_ARGUMENT", "the observation window must be at least 1 token");
  if (o.kernel < 1 || o.kernel % 2 == 0) fail("INVALID_ARGUMENT", strfmt("the pooling kernel must be odd, not %d", o.kernel));
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
