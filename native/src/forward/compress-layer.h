// The compressor's hook in the forward pass: layer l of a compressing prefill, once every token has passed
// it. The window scores are computed by the backend (where the cache is), downloaded (a few floats per
// entry), the choice of what each head keeps is made on the host by kv::Compressor (one piece of code, so
// every backend keeps the same entries for the same scores), and the store is compacted in place.
#pragma once
#include <cstdint>

#include "backend/backend.h"
#include "backend/kv-store.h"
#include "core/thread-pool.h"
#include "kv/compressor.h"

namespace folio::forward {

// qwin: the window queries of layer l in the backend's memory, [w, n_head·head_dim]; `spare` free entries
// per head remain for the conversation.
void compress_layer(kv::Compressor& comp, backend::Backend& be, backend::KvStore& kv, ThreadPool& pool, int l,
                    const float* qwin, int32_t spare);

}  // namespace folio::forward
