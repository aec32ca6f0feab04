// libfolio-cuda's export: opens a device, owns the stream, the error text and the scratch buffers, and
// fills the operation table of backend/gpu-abi.h.
#include <cstdio>
#include <cstring>
#include <mutex>

#include "ops.h"

#if defined(_WIN32)
#define FOLIO_EXPORT extern "C" __declspec(dllexport)
#else
#define FOLIO_EXPORT extern "C" __attribute__((visibility("default")))
#endif

// The table below is ABI 5's (backend/gpu-abi.h): a header that moves on must move this library with it.
static_assert(FOLIO_GPU_ABI_VERSION == 5, "libfolio-cuda implements GPU ABI 5: update it with backend/gpu-abi.h");

namespace folio::cuda {

namespace {

cudaStream_t g_stream = nullptr;
int g_device = -1;
thread_local char g_error[512] = "";  // the calling thread's last failure (sessions run on several threads)
// The engine runs different sessions' jobs on different threads at the same time, and everything here is
// shared: the one stream, on which an operation's kernels must follow one another with no other
// operation's kernels in between (they hand intermediate results over in the scratch buffers), and the
// scratch buffers themselves. So each operation runs under this lock (OnDevice).
std::mutex g_mutex;
struct ScratchBuf {
  void* p = nullptr;
  size_t bytes = 0;
};
ScratchBuf g_scratch[int(Scratch::Count)];

const char* api_last_error() { return g_error; }

int api_device_info(folio_gpu_device_info* out) {
  std::memset(out, 0, sizeof *out);
  cudaDeviceProp prop;
  cudaError_t e = cudaGetDeviceProperties(&prop, g_device);
  if (e != cudaSuccess) return fail("device_info", e);
  std::snprintf(out->name, sizeof out->name, "%s", prop.name);
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  std::snprintf(out->runtime, sizeof out->runtime, "CUDA runtime %d.%d, driver %d.%d", rt / 1000, rt % 1000 / 10,
                drv / 1000, drv % 1000 / 10);
  out->compute_major = prop.major;
  out->compute_minor = prop.minor;
  out->multiprocessors = prop.multiProcessorCount;
  out->device_type = prop.integrated ? FOLIO_GPU_DEVICE_INTEGRATED : FOLIO_GPU_DEVICE_DISCRETE;
  out->max_alloc_bytes = 0;  // cudaMalloc takes what the memory holds
  size_t free_b = 0, total_b = 0;
  e = cudaMemGetInfo(&free_b, &total_b);
  if (e != cudaSuccess) return fail("device_info", e);
  out->free_bytes = free_b;
  out->total_bytes = total_b;
  return 0;
}

void api_close() {
  for (auto& s : g_scratch) {
    if (s.p) cudaFree(s.p);
    s = ScratchBuf{};
  }
  if (g_stream) cudaStreamDestroy(g_stream);
  g_stream = nullptr;
}

int api_alloc(size_t bytes, void** out) {
  *out = nullptr;
  cudaError_t e = cudaMalloc(out, bytes ? bytes : 1);  // cudaMalloc aligns to at least 256 bytes
  if (e != cudaSuccess) {
    char what[96];
    std::snprintf(what, sizeof what, "alloc of %zu bytes", bytes);
    return fail(what, e);
  }
  return 0;
}

int api_free(void* p) {
  if (!p) return 0;
  cudaError_t e = cudaFree(p);
  return e == cudaSuccess ? 0 : fail("free", e);
}

int api_upload(void* dst, const void* src, size_t bytes) {
  if (!bytes) return 0;
  // In stream order, and complete on return: from pageable memory an asynchronous copy may still be
  // reading the source after the call, which the caller is free to reuse. The engine uploads only
  // between forward passes (tokens, positions) and at layout changes, so the wait costs little.
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g_stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(g_stream);
  return e == cudaSuccess ? 0 : fail("upload", e);
}

int api_download(void* dst, const void* src, size_t bytes) {
  if (!bytes) return 0;
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, g_stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(g_stream);
  return e == cudaSuccess ? 0 : fail("download", e);
}

int api_copy(void* dst, const void* src, size_t bytes) {
  if (!bytes) return 0;
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, g_stream);
  return e == cudaSuccess ? 0 : fail("copy", e);
}

int api_zero(void* dst, size_t bytes) {
  if (!bytes) return 0;
  cudaError_t e = cudaMemsetAsync(dst, 0, bytes, g_stream);
  return e == cudaSuccess ? 0 : fail("zero", e);
}

int api_synchronize() {
  cudaError_t e = cudaStreamSynchronize(g_stream);
  return e == cudaSuccess ? 0 : fail("synchronize", e);
}

}  // namespace

cudaStream_t stream() { return g_stream; }

int multiprocessors() {
  int count = 0;
  if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, g_device) != cudaSuccess) count = 0;
  return count > 0 ? count : 16;
}

namespace {

// The current device is a per-thread setting of the CUDA runtime, and the engine calls from whichever
// thread runs a session's job: every entry of the table first makes the opened device current, holding
// the library's lock (g_mutex) for the whole operation.
template <typename Sig, Sig* F>
struct OnDevice;
template <typename R, typename... A, R (*F)(A...)>
struct OnDevice<R(A...), F> {
  static R call(A... a) {
    std::lock_guard<std::mutex> lock(g_mutex);
    cudaSetDevice(g_device);
    return F(a...);
  }
};
#define FOLIO_ON_DEVICE(f) (&OnDevice<decltype(f), f>::call)

}  // namespace

int fail(const char* what, cudaError_t e) {
  std::snprintf(g_error, sizeof g_error, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
  return int(e) ? int(e) : 1;
}

int fail(const char* what, const char* message) {
  std::snprintf(g_error, sizeof g_error, "%s: %s", what, message);
  return 1;
}

int check_launch(const char* what) {
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : fail(what, e);
}

void* scratch(Scratch slot, size_t bytes) {
  ScratchBuf& s = g_scratch[int(slot)];
  if (s.bytes >= bytes && s.p) return s.p;
  if (s.p) {
    // The previous buffer may still be read by queued work: wait before freeing it.
    cudaStreamSynchronize(g_stream);
    cudaFree(s.p);
    s = ScratchBuf{};
  }
  const size_t want = bytes + bytes / 4 + 256;  // some headroom so that growing sizes do not reallocate each time
  cudaError_t e = cudaMalloc(&s.p, want);
  if (e != cudaSuccess) {
    s.p = nullptr;
    fail("scratch", e);
    return nullptr;
  }
  s.bytes = want;
  return s.p;
}

}  // namespace folio::cuda

FOLIO_EXPORT int folio_gpu_open(uint32_t abi_version, int32_t device, folio_gpu_api* api, char* err, size_t err_len) {
  using namespace folio::cuda;
  auto say = [&](const char* fmt, auto... args) {
    if (err && err_len) std::snprintf(err, err_len, fmt, args...);
    return 1;
  };
  if (abi_version != FOLIO_GPU_ABI_VERSION)
    return say("libfolio-cuda speaks GPU ABI %d, the engine %u: rebuild them together", FOLIO_GPU_ABI_VERSION,
               abi_version);
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || e != cudaSuccess) {
    if (e == cudaErrorInsufficientDriver)
      return say("no usable NVIDIA driver (%s: the driver is missing or older than CUDA %d.%d)", cudaGetErrorString(e),
                 CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
    return say("no CUDA device: %s", cudaGetErrorString(e));
  }
  if (count == 0) return say("no CUDA device found");
  if (device < 0 || device >= count) return say("CUDA device %d does not exist (%d found)", device, count);
  if ((e = cudaSetDevice(device)) != cudaSuccess)
    return say("cannot use CUDA device %d: %s", device, cudaGetErrorString(e));
  cudaDeviceProp prop;
  if ((e = cudaGetDeviceProperties(&prop, device)) != cudaSuccess)
    return say("cannot read CUDA device %d: %s", device, cudaGetErrorString(e));
  if (prop.major * 10 + prop.minor < 75)
    return say("%s (compute capability %d.%d) is older than CUDA 13 supports (7.5)", prop.name, prop.major, prop.minor);
  if (!g_stream && (e = cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking)) != cudaSuccess)
    return say("cannot create a CUDA stream: %s", cudaGetErrorString(e));
  g_device = device;

  std::memset(api, 0, sizeof *api);
  api->abi_version = FOLIO_GPU_ABI_VERSION;
  api->backend = "cuda";
  api->last_error = api_last_error;
  api->device_info = FOLIO_ON_DEVICE(api_device_info);
  api->close = FOLIO_ON_DEVICE(api_close);
  api->alloc = FOLIO_ON_DEVICE(api_alloc);
  api->free = FOLIO_ON_DEVICE(api_free);
  api->upload = FOLIO_ON_DEVICE(api_upload);
  api->download = FOLIO_ON_DEVICE(api_download);
  api->copy = FOLIO_ON_DEVICE(api_copy);
  api->zero = FOLIO_ON_DEVICE(api_zero);
  api->synchronize = FOLIO_ON_DEVICE(api_synchronize);
  api->matmul = FOLIO_ON_DEVICE(matmul);
  api->get_rows = FOLIO_ON_DEVICE(get_rows);
  api->rms_norm = FOLIO_ON_DEVICE(rms_norm);
  api->rope = FOLIO_ON_DEVICE(rope);
  api->swiglu = FOLIO_ON_DEVICE(swiglu);
  api->add = FOLIO_ON_DEVICE(add);
  api->add_bias = FOLIO_ON_DEVICE(add_bias);
  api->kv_append = FOLIO_ON_DEVICE(kv_append);
  api->attention = FOLIO_ON_DEVICE(attention);
  api->window_scores = FOLIO_ON_DEVICE(window_scores);
  api->kv_gather = FOLIO_ON_DEVICE(kv_gather);
  api->geglu = FOLIO_ON_DEVICE(geglu);
  api->scale = FOLIO_ON_DEVICE(scale);
  api->hadamard = FOLIO_ON_DEVICE(hadamard);
  return 0;
}
