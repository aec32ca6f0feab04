// A model's weights where a backend reads them. On the CPU: the host copies (Model::cpu_weights),
// nothing uploaded. On a GPU: the file's tensors uploaded once per model, in their GGUF types, and shared
// by every context (chat) over that model on that backend; freed when the last of those contexts goes. A
// weight larger than the device allocates at once is uploaded in parts (quant/weight.h).
#pragma once
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "core/thread-pool.h"
#include "model/model.h"

namespace folio::forward {

class BackendWeights {
 public:
  // `pool` does the CPU's repacking (the first pass over a model on the CPU).
  static std::shared_ptr<const BackendWeights> of(const Model& model, backend::Backend& be, ThreadPool& pool);

  // The same structure as the model's, every Weight's data in the backend's memory.
  const ModelWeights& get() const { return *w_; }
  size_t device_bytes() const { return bytes_; }  // what the uploads take

 private:
  // Uploads w (once per host tensor: tied tensors share one copy); in parts of whole multiples of
  // `row_unit` rows where it is larger than the device's largest allocation.
  Weight upload(backend::Backend& be, const Weight& w, int64_t row_unit = 1);

  const ModelWeights* w_ = nullptr;  // the model's (host) or own_ (device)
  ModelWeights own_;
  std::vector<backend::Buffer> buffers_;
  std::vector<std::unique_ptr<std::vector<WeightPart>>> parts_;  // of the split weights (Weight::parts)
  std::vector<std::pair<const uint8_t*, Weight>> uploaded_;      // by host data: tied tensors share one copy
  size_t bytes_ = 0;
};

}  // namespace folio::forward
