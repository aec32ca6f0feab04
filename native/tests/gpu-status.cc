// gpu-status: which GPU backend the engine would use, and why, without loading a model: the loader's
// outcome (backend/gpu-loader.h) as one line,
//   gpu-status: available=0|1 backend=NAME reason=TEXT
// FOLIO_GPU_LIBRARY, FOLIO_GPU and FOLIO_GPU_PARTIAL are honoured as in the engine. Exit status 0.
#include <cstdio>

#include "backend/gpu-loader.h"

int main() {
  const folio::gpu::Status& s = folio::gpu::status();
  std::printf("gpu-status: available=%d backend=%s reason=%s\n", s.available ? 1 : 0, s.backend.c_str(),
              s.reason.c_str());
  return 0;
}
