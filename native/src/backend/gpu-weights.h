// A model's weights on the GPU: uploaded once per model, in their GGUF types, and shared by every
// context (chat) over that model; freed when the last of those contexts goes.
#pragma once
#include <memory>
#include <vector>

#include "backend/gpu-buffer.h"
#include "model/model.h"

namespace folio::gpu {

struct DeviceWeight {
  const void* data = nullptr;  // into a Buffer of Weights
  int32_t type = 0;            // ggml type id
  int64_t rows = 0, cols = 0;
  size_t ldw = 0;              // bytes per row
  explicit operator bool() const { return data != nullptr; }
  const float* f32() const { return static_cast<const float*>(data); }
};

struct DeviceLayer {
  DeviceWeight attn_norm, wq, wk, wv, bq, bk, bv, q_norm, k_norm, wo, ffn_norm, w_gate, w_up, w_down;
};

class Weights {
 public:
  // The weights of `model` on the device, uploading them the first time.
  static std::shared_ptr<const Weights> of(const Model& model);

  DeviceWeight tok_embd, output_norm, output, rope_freqs;
  std::vector<DeviceLayer> layers;
  size_t bytes = 0;  // device memory they take

 private:
  DeviceWeight upload(const Weight& w);
  std::vector<Buffer> buffers_;
  std::vector<std::pair<const uint8_t*, DeviceWeight>> uploaded_;  // by host data: tied tensors share one copy
};

}  // namespace folio::gpu
