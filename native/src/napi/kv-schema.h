// What crosses the binding for KV compression: the options in, the statistics out (both read and written
// by the tables in kv/method.h and kv/stats.h, nowhere else).
#pragma once
#include <napi.h>

#include "kv/method.h"
#include "kv/stats.h"
#include "session/context.h"

namespace folio::napi {

// { method, budget, alpha, window, kernel, beta, measureLoss } → checked options (INVALID_* errors).
// `default_method` when the object names none.
kv::CompressOptions compress_options(Napi::Env env, const Napi::Object& o, const char* default_method);
// How a document is read: { chunk: 'auto' | tokens (0: one pass), rebase, packPositions, room, checkpoint,
// checkpointSeconds }.
ReadOptions read_options(Napi::Env env, const Napi::Object& o);

// The statistics as the app's contract has them (electron/shared/kv/stats.ts), by FOLIO_*_STATS_FIELDS.
Napi::Object stats_to_js(Napi::Env env, const kv::CompressionStats& s);

// exports.methods(): the method table; exports.statsSchema(): { compression, layer, head }, each
// field name → kind.
void init_kv_schema(Napi::Env env, Napi::Object exports);

}  // namespace folio::napi
