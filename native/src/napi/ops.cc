#include "napi/common.h"

namespace folio::napi {

void init_ops(Napi::Env env, Napi::Object exports) {}

}  // namespace folio::napi
