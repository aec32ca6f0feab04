// The numeric options the binding takes: a compression's (budget, alpha, window, kernel, beta) and a
// generation's sampling (temperature, topK, topP, minP, repeatPenalty, repeatLastN, seed), each row with its
// bounds and default. Every such option is read through its row, and the addon exports the rows
// (optionsSchema()), so the app's copy (electron/shared/kv/options.ts), its settings, its contract and its
// command line check values against the engine's own limits; test/kv-schema.test.ts holds the two equal.
#pragma once
#include <napi.h>

#include <vector>

#include "sampling/sampler.h"

namespace folio::napi {

struct OptionRow {
  const char* name;  // as the app's contract spells it
  bool integer;
  double min;
  double max;
  bool min_open;  // min itself excluded
  bool odd;       // an odd integer (the pooling kernel)
  double def;     // NaN: none (the caller must give one)
};

const std::vector<OptionRow>& compress_option_rows();
const std::vector<OptionRow>& sampling_option_rows();
const OptionRow& option_row(const std::vector<OptionRow>& rows, const char* name);

// `o[row.name]` checked against the row (INVALID_ARGUMENT naming the option and its range), or the row's
// default when absent (NaN when it has none).
double read_option(Napi::Env env, const Napi::Object& o, const OptionRow& row);

// { temperature, topK, topP, minP, repeatPenalty, repeatLastN, seed } → checked sampling parameters.
SamplingParams sampling_params(Napi::Env env, const Napi::Object& o);

// exports.optionsSchema(): { compress: rows, sampling: rows }, each row { name, integer, min, max, minOpen,
// odd, default (null when none) }.
void init_options(Napi::Env env, Napi::Object exports);

}  // namespace folio::napi
