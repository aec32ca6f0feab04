// exports.ops: the quant kernels one call at a time, for the tests (OpsBinding in electron/engine/binding.ts).
// Every argument is checked before a kernel runs; inputs are copied into aligned native buffers and
// results copied into fresh JS arrays.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/large-buffer.h"
#include "core/thread-pool.h"
#include "backend/gpu-buffer.h"
#include "napi/common.h"
#include "quant/matmul.h"
#include "quant/quant.h"

namespace folio::napi {
namespace {

using quant::Isa;

[[noreturn]] void invalid(const std::string& message) { fail("INVALID_ARGUMENT", message); }

// A ggml type id with kernels; unknown ids and types without kernels are UNSUPPORTED_TYPE.
TensorType arg_type(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || !info[i].IsNumber()) invalid("type must be a ggml type id (a number)");
  const double v = info[i].As<Napi::Number>().DoubleValue();
  if (!(v >= 0 && v < 4294967296.0 && v == std::floor(v))) invalid("type must be a non-negative integer");
  const TensorType type = TensorType(uint32_t(v));
  const TypeInfo* ti = type_info(uint32_t(v));
  if (ti && ti->internal) fail("UNSUPPORTED_TYPE", strfmt("%s is Folio's own layout, not a ggml type", ti->name));
  quant::kernels(type, Isa::Scalar);  // throws UNSUPPORTED_TYPE
  return type;
}

// Element count: a non-negative integer, a multiple of the type's block size.
int64_t arg_count(const Napi::CallbackInfo& info, size_t i, TensorType type) {
  if (info.Length() <= i || !info[i].IsNumber()) invalid("n must be a number");
  const double v = info[i].As<Napi::Number>().DoubleValue();
  if (!(v >= 0 && v <= 9007199254740991.0 && v == std::floor(v))) invalid("n must be a non-negative integer");
  const int64_t n = int64_t(v);
  const TypeInfo& ti = type_info(type);
  if (n % ti.block_size != 0) {
    invalid(strfmt("n = %lld is not a multiple of the %s block size %u", (long long)n, ti.name, ti.block_size));
  }
  return n;
}

// Optional ISA name; absent or undefined means the engine's default.
Isa arg_isa(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || info[i].IsUndefined()) return quant::best_isa();
  if (!info[i].IsString()) invalid("isa must be a string ('scalar', 'avx2', 'avx512' or 'neon')");
  const std::string name = info[i].As<Napi::String>().Utf8Value();
  for (int k = 0; k < quant::kIsaCount; ++k) {
    const Isa isa = Isa(k);
    if (name != quant::isa_name(isa)) continue;
    if (!quant::isa_available(isa)) invalid("ISA " + name + " is not available on this machine");
    return isa;
  }
  invalid("unknown ISA '" + name + "' (scalar, avx2, avx512 or neon)");
}

// A copy of a Uint8Array argument that must hold exactly `expect` bytes.
std::vector<uint8_t> arg_bytes(const Napi::CallbackInfo& info, size_t i, const char* what, size_t expect) {
  if (info.Length() <= i || !info[i].IsTypedArray() ||
      info[i].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    invalid(strfmt("%s must be a Uint8Array", what));
  }
  const Napi::Uint8Array a = info[i].As<Napi::Uint8Array>();
  if (a.ByteLength() != expect) {
    invalid(strfmt("%s holds %zu bytes, expected %zu", what, size_t(a.ByteLength()), expect));
  }
  std::vector<uint8_t> v(expect);
  if (expect) std::memcpy(v.data(), a.Data(), expect);
  return v;
}

Napi::Value isas(const Napi::CallbackInfo& info) {
  Napi::Array out = Napi::Array::New(info.Env());
  uint32_t k = 0;
  for (int i = 0; i < quant::kIsaCount; ++i) {
    if (quant::isa_available(Isa(i))) out.Set(k++, Napi::String::New(info.Env(), quant::isa_name(Isa(i))));
  }
  return out;
}

Napi::Value best_isa(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), quant::isa_name(quant::best_isa()));
}

Napi::Value vec_dot_type(const Napi::CallbackInfo& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    const TensorType type = arg_type(info, 0);
    return Napi::Number::New(info.Env(), double(uint32_t(quant::vec_dot_type(type))));
  });
}

// dequantize(type, data, n, isa?)
Napi::Value dequantize(const Napi::CallbackInfo& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    const TensorType type = arg_type(info, 0);
    const int64_t n = arg_count(info, 2, type);
    const Isa isa = arg_isa(info, 3);
    const std::vector<uint8_t> data = arg_bytes(info, 1, "data", row_bytes(type, n));
    const quant::Kernels& k = quant::kernels(type, isa);
    std::vector<float> out(static_cast<size_t>(n));
    if (n) k.dequantize_row(data.data(), out.data(), n);
    return copy_floats(info.Env(), out.data(), out.size());
  });
}

// quantize(type, x, isa?)
Napi::Value quantize(const Napi::CallbackInfo& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    const TensorType type = arg_type(info, 0);
    if (info.Length() <= 1 || !info[1].IsTypedArray() ||
        info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
      invalid("x must be a Float32Array");
    }
    const Napi::Float32Array xa = info[1].As<Napi::Float32Array>();
    const int64_t n = int64_t(xa.ElementLength());
    const TypeInfo& ti = type_info(type);
    if (n % ti.block_size != 0) {
      invalid(
          strfmt("x has %lld elements, not a multiple of the %s block size %u", (long long)n, ti.name, ti.block_size));
    }
    const Isa isa = arg_isa(info, 2);
    const quant::Kernels& k = quant::kernels(type, isa);
    if (!k.quantize_row) fail("UNSUPPORTED_TYPE", strfmt("no quantizer for %s", ti.name));
    std::vector<float> x(static_cast<size_t>(n));
    if (n) std::memcpy(x.data(), xa.Data(), size_t(n) * sizeof(float));
    std::vector<uint8_t> out(row_bytes(type, n));
    if (n) k.quantize_row(x.data(), out.data(), n);
    return copy_bytes(info.Env(), out.data(), out.size());
  });
}

// vecDot(type, w, x, n, isa?)
Napi::Value vec_dot(const Napi::CallbackInfo& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    const TensorType type = arg_type(info, 0);
    const TensorType xtype = quant::vec_dot_type(type);  // throws UNSUPPORTED_TYPE for activation types
    const int64_t n = arg_count(info, 3, type);
    const Isa isa = arg_isa(info, 4);
    const std::vector<uint8_t> w = arg_bytes(info, 1, "w", row_bytes(type, n));
    const std::vector<uint8_t> x = arg_bytes(info, 2, "x", row_bytes(xtype, n));
    const quant::Kernels& k = quant::kernels(type, isa);
    if (!k.vec_dot) fail("UNSUPPORTED_TYPE", strfmt("no dot product for %s", type_name(type)));
    const float r = n ? k.vec_dot(n, w.data(), x.data()) : 0.0f;
    return Napi::Number::New(info.Env(), double(r));
  });
}

// A positive integer argument (or `def` when absent / undefined), at most `max`.
int64_t arg_int(const Napi::CallbackInfo& info, size_t i, const char* what, int64_t def, int64_t min, int64_t max) {
  if (info.Length() <= i || info[i].IsUndefined()) return def;
  if (!info[i].IsNumber()) invalid(strfmt("%s must be a number", what));
  const double v = info[i].As<Napi::Number>().DoubleValue();
  if (!(v >= double(min) && v <= double(max) && v == std::floor(v))) {
    invalid(strfmt("%s must be an integer from %lld to %lld", what, (long long)min, (long long)max));
  }
  return int64_t(v);
}

// matmul(type, w, rows, cols, x, n, isa?, threads?, path?): Y [n, rows] = X [n, cols] · W [rows, cols]ᵀ,
// W as `rows` rows of `type` (row_bytes apart, packed), X floats. path: 'auto' (what the engine does),
// 'blocked' (the blocked kernel whatever n is) or 'vecdot' (vec_dot per row and token).
Napi::Value matmul(const Napi::CallbackInfo& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    const TensorType type = arg_type(info, 0);
    quant::vec_dot_type(type);  // throws UNSUPPORTED_TYPE for activation types
    const int64_t rows = arg_int(info, 2, "rows", -1, 0, int64_t(1) << 30);
    const int64_t cols = arg_count(info, 3, type);
    const int64_t n = arg_int(info, 5, "n", -1, 0, int64_t(1) << 30);
    if (rows < 0 || n < 0) invalid("rows and n are required");
    const Isa isa = arg_isa(info, 6);
    const int threads = int(arg_int(info, 7, "threads", 1, 1, 256));
    quant::MatmulPath path = quant::MatmulPath::Auto;
    if (info.Length() > 8 && !info[8].IsUndefined()) {
      const std::string p = info[8].IsString() ? info[8].As<Napi::String>().Utf8Value() : std::string();
      if (p == "blocked") path = quant::MatmulPath::Blocked;
      else if (p == "vecdot") path = quant::MatmulPath::VecDot;
      else if (p != "auto") invalid("path must be 'auto', 'blocked' or 'vecdot'");
    }
    const size_t rb = row_bytes(type, cols);
    const std::vector<uint8_t> w = arg_bytes(info, 1, "w", rb * size_t(rows));
    if (info.Length() <= 4 || !info[4].IsTypedArray() ||
        info[4].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
      invalid("x must be a Float32Array");
    }
    const Napi::Float32Array xa = info[4].As<Napi::Float32Array>();
    if (int64_t(xa.ElementLength()) != n * cols) {
      invalid(
          strfmt("x holds %zu floats, expected n · cols = %lld", size_t(xa.ElementLength()), (long long)(n * cols)));
    }
    std::vector<float> x(size_t(n * cols)), y(size_t(n * rows));
    if (!x.empty()) std::memcpy(x.data(), xa.Data(), x.size() * sizeof(float));
    quant::MatrixRef m;
    m.data = w.data();
    m.type = type;
    m.rows = rows;
    m.cols = cols;
    m.ldw = rb;
    ThreadPool pool(threads);
    std::vector<uint8_t> act;
    quant::matmul(pool, m, x.data(), n, y.data(), act, isa, path);
    return copy_floats(info.Env(), y.data(), y.size());
  });
}

// gpuCopyBandwidth(mib?, passes?, backend?): the GPU's memory bandwidth as a device-to-device copy of `mib`
// MiB (default 1024) sees it, counting the bytes read and written; the best of `passes` (default 5) timed
// copies after an untimed one. `backend`: 'cuda' or 'vulkan' (default: the GPU `auto` runs on). Throws
// GPU_UNAVAILABLE without that GPU. Returns { bytesPerSecond, bytes, passes, seconds }.
Napi::Value gpu_copy_bandwidth(const Napi::CallbackInfo& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    const int64_t mib = arg_int(info, 0, "mib", 1024, 16, 1 << 16);
    const int passes = int(arg_int(info, 1, "passes", 5, 1, 100));
    gpu::Kind kind = gpu::Kind::Cuda;
    const bool named = info.Length() > 2 && info[2].IsString();
    if (named && !gpu::kind_from_name(info[2].As<Napi::String>().Utf8Value(), kind))
      invalid("backend must be 'cuda' or 'vulkan'");
    const folio_gpu_api& g = named ? gpu::require(kind) : gpu::require();
    const size_t bytes = size_t(mib) << 20;
    gpu::Buffer a(g, bytes), b(g, bytes);
    gpu::check(g, g.zero(a.get(), bytes), "GPU zero");
    double best = 0;
    for (int p = 0; p <= passes; p++) {
      gpu::check(g, g.synchronize(), "GPU copy");
      const auto t0 = std::chrono::steady_clock::now();
      gpu::check(g, g.copy(b.get(), a.get(), bytes), "GPU copy");
      gpu::check(g, g.synchronize(), "GPU copy");
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (p > 0 && (best == 0 || s < best)) best = s;
    }
    Napi::Object r = Napi::Object::New(info.Env());
    r.Set("bytesPerSecond", double(2 * bytes) / best);
    r.Set("bytes", double(2 * bytes));
    r.Set("passes", passes);
    r.Set("seconds", best);
    return r;
  });
}

// readBandwidth(threads?, mib?, passes?): the machine's memory read bandwidth as `threads` threads see it,
// reading a buffer of `mib` MiB (default 512, far beyond any cache) from start to end, each thread a
// contiguous slice; the best of `passes` timed passes (default 5) after one untimed one.
// Returns { bytesPerSecond, bytes, threads, passes, seconds }.
uint64_t read_slice(const uint64_t* p, size_t n) {
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    a0 ^= p[i], a1 ^= p[i + 1], a2 ^= p[i + 2], a3 ^= p[i + 3];
    a4 ^= p[i + 4], a5 ^= p[i + 5], a6 ^= p[i + 6], a7 ^= p[i + 7];
  }
  for (; i < n; i++) a0 ^= p[i];
  return a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7;
}

Napi::Value read_bandwidth(const Napi::CallbackInfo& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    const int threads = int(arg_int(info, 0, "threads", ThreadPool::default_threads(), 1, 256));
    const int64_t mib = arg_int(info, 1, "mib", 512, 16, 1 << 16);
    const int passes = int(arg_int(info, 2, "passes", 5, 1, 100));
    const size_t words = size_t(mib) << 17;  // 8-byte words
    // In huge pages where the OS gives them, as the weights' copies are (model/weights.h): in 4 KiB pages
    // it read ~6% less on a Zen 4 VM, a bound below what the weights stream at.
    LargeBuffer storage(words * 8, LargeBuffer::Pages::Huge);
    uint64_t* buf = reinterpret_cast<uint64_t*>(storage.data());
    ThreadPool pool(threads);
    auto slice = [&](int t, int nt, size_t* begin, size_t* count) {
      // cache-line aligned slices
      const size_t lines = words / 8, per = (lines + size_t(nt) - 1) / size_t(nt);
      const size_t b = std::min(lines, per * size_t(t)), e = std::min(lines, b + per);
      *begin = b * 8;
      *count = (e - b) * 8;
    };
    // Each thread first writes its own slice, so that its pages are local to it.
    pool.run_on_all([&](int t, int nt) {
      size_t b, c;
      slice(t, nt, &b, &c);
      for (size_t i = 0; i < c; i++) buf[b + i] = uint64_t(b + i) * 0x9e3779b97f4a7c15ull;
    });
    std::vector<uint64_t> sink(size_t(threads), 0);
    double best = 0;
    for (int p = 0; p <= passes; p++) {
      const auto t0 = std::chrono::steady_clock::now();
      pool.run_on_all([&](int t, int nt) {
        size_t b, c;
        slice(t, nt, &b, &c);
        sink[size_t(t)] ^= read_slice(buf + b, c);
      });
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (p > 0 && (best == 0 || s < best)) best = s;
    }
    uint64_t all = 0;
    for (uint64_t v : sink) all ^= v;
    Napi::Object r = Napi::Object::New(info.Env());
    r.Set("bytesPerSecond", double(words * 8) / best);
    r.Set("bytes", double(words * 8));
    r.Set("threads", threads);
    r.Set("passes", passes);
    r.Set("seconds", best);
    r.Set("checksum", double(all & 0xffff));  // keeps the reads observable
    return r;
  });
}

}  // namespace

void init_ops(Napi::Env env, Napi::Object exports) {
  Napi::Object ops = Napi::Object::New(env);
  ops.Set("isas", Napi::Function::New(env, isas, "isas"));
  ops.Set("bestIsa", Napi::Function::New(env, best_isa, "bestIsa"));
  ops.Set("vecDotType", Napi::Function::New(env, vec_dot_type, "vecDotType"));
  ops.Set("dequantize", Napi::Function::New(env, dequantize, "dequantize"));
  ops.Set("quantize", Napi::Function::New(env, quantize, "quantize"));
  ops.Set("vecDot", Napi::Function::New(env, vec_dot, "vecDot"));
  ops.Set("matmul", Napi::Function::New(env, matmul, "matmul"));
  ops.Set("readBandwidth", Napi::Function::New(env, read_bandwidth, "readBandwidth"));
  ops.Set("gpuCopyBandwidth", Napi::Function::New(env, gpu_copy_bandwidth, "gpuCopyBandwidth"));
  exports.Set("ops", ops);
}

}  // namespace folio::napi
