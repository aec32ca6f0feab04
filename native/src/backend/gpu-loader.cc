#include "backend/gpu-loader.h"

#include <cstdlib>
#include <mutex>

#include "core/error.h"

#if defined(_WIN32)
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace folio::gpu {

namespace {

#if defined(_WIN32)
constexpr const char* kLibraryName = "folio-cuda.dll";
#else
constexpr const char* kLibraryName = "libfolio-cuda.so";
#endif

folio_gpu_api g_api{};
Status g_status;

// The folder of the module this code is linked into (folio.node, or a test executable).
std::string own_folder() {
#if defined(_WIN32)
  HMODULE self = nullptr;
  char path[MAX_PATH] = "";
  if (!GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                          reinterpret_cast<LPCSTR>(&own_folder), &self) ||
      !GetModuleFileNameA(self, path, MAX_PATH))
    return "";
  std::string p(path);
#else
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&own_folder), &info) || !info.dli_fname) return "";
  std::string p(info.dli_fname);
#endif
  const size_t slash = p.find_last_of("/\\");
  return slash == std::string::npos ? std::string(".") : p.substr(0, slash);
}

void* open_library(const std::string& path, std::string& error) {
#if defined(_WIN32)
  HMODULE h = LoadLibraryA(path.c_str());
  if (!h) error = strfmt("cannot load %s (error %lu)", path.c_str(), (unsigned long)GetLastError());
  return reinterpret_cast<void*>(h);
#else
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) error = dlerror();
  return h;
#endif
}

void* find_symbol(void* lib, const char* name) {
#if defined(_WIN32)
  return reinterpret_cast<void*>(GetProcAddress(reinterpret_cast<HMODULE>(lib), name));
#else
  return dlsym(lib, name);
#endif
}

bool file_exists(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f) std::fclose(f);
  return f != nullptr;
}

// "the CUDA backend" for libfolio-cuda (the default), else the library's file name.
std::string backend_title(const std::string& library) {
  if (library.find("folio-cuda") != std::string::npos) return "the CUDA backend";
  const size_t slash = library.find_last_of("/\\");
  return "the GPU backend " + (slash == std::string::npos ? library : library.substr(slash + 1));
}

// The operations the table lacks, comma-separated ("" when it is complete).
std::string missing_operations(const folio_gpu_api& a) {
  const std::pair<const char*, const void*> ops[] = {
      {"alloc", reinterpret_cast<const void*>(a.alloc)},
      {"free", reinterpret_cast<const void*>(a.free)},
      {"upload", reinterpret_cast<const void*>(a.upload)},
      {"download", reinterpret_cast<const void*>(a.download)},
      {"copy", reinterpret_cast<const void*>(a.copy)},
      {"zero", reinterpret_cast<const void*>(a.zero)},
      {"synchronize", reinterpret_cast<const void*>(a.synchronize)},
      {"matmul", reinterpret_cast<const void*>(a.matmul)},
      {"get_rows", reinterpret_cast<const void*>(a.get_rows)},
      {"rms_norm", reinterpret_cast<const void*>(a.rms_norm)},
      {"rope", reinterpret_cast<const void*>(a.rope)},
      {"swiglu", reinterpret_cast<const void*>(a.swiglu)},
      {"add", reinterpret_cast<const void*>(a.add)},
      {"add_bias", reinterpret_cast<const void*>(a.add_bias)},
      {"kv_append", reinterpret_cast<const void*>(a.kv_append)},
      {"attention", reinterpret_cast<const void*>(a.attention)},
      {"window_scores", reinterpret_cast<const void*>(a.window_scores)},
      {"topk_per_head", reinterpret_cast<const void*>(a.topk_per_head)},
      {"top_tokens", reinterpret_cast<const void*>(a.top_tokens)},
      {"kv_gather", reinterpret_cast<const void*>(a.kv_gather)},
  };
  std::string missing;
  for (const auto& [name, f] : ops)
    if (!f) missing += (missing.empty() ? "" : ", ") + std::string(name);
  return missing;
}

void load() {
  const char* off = std::getenv("FOLIO_GPU");
  if (off && (std::string(off) == "off" || std::string(off) == "0" || std::string(off) == "cpu")) {
    g_status.reason = "the GPU is turned off (FOLIO_GPU=" + std::string(off) + ")";
    return;
  }
#if defined(__APPLE__)
  g_status.reason = "no CUDA on macOS: the CPU backend runs";
  return;
#endif
  const char* env = std::getenv("FOLIO_GPU_LIBRARY");
  g_status.library = env && *env ? std::string(env) : own_folder() + "/" + kLibraryName;
  if (!file_exists(g_status.library)) {
    g_status.reason =
        strfmt("no CUDA backend: %s is not installed (this build or platform has none)", g_status.library.c_str());
    return;
  }
  std::string error;
  void* lib = open_library(g_status.library, error);
  if (!lib) {
    g_status.reason = "the CUDA backend could not be loaded: " + error;
    return;
  }
  auto open = reinterpret_cast<folio_gpu_open_fn>(find_symbol(lib, FOLIO_GPU_OPEN_SYMBOL));
  if (!open) {
    g_status.reason = strfmt("%s has no %s: not a Folio GPU backend", g_status.library.c_str(), FOLIO_GPU_OPEN_SYMBOL);
    return;
  }
  char err[512] = "";
  const int32_t device = std::getenv("FOLIO_GPU_DEVICE") ? int32_t(std::atoi(std::getenv("FOLIO_GPU_DEVICE"))) : 0;
  if (open(FOLIO_GPU_ABI_VERSION, device, &g_api, err, sizeof err) != 0) {
    g_status.reason = strfmt("%s present but not usable: %s", backend_title(g_status.library).c_str(), err);
    return;
  }
  if (g_api.device_info(&g_status.device) != 0) {
    g_status.reason = strfmt("%s present but the device cannot be read: %s", backend_title(g_status.library).c_str(),
                             g_api.last_error());
    return;
  }
  // A backend still being written (libfolio-vulkan) leaves operations NULL: the forward pass would fail
  // midway, so the engine runs on the CPU and says so; the op suite asks for the partial table to test
  // what exists (FOLIO_GPU_PARTIAL=1).
  const std::string missing = missing_operations(g_api);
  const char* partial = std::getenv("FOLIO_GPU_PARTIAL");
  const bool allow_partial = partial && std::string(partial) == "1";
  if (!missing.empty() && !allow_partial) {
    g_status.reason = strfmt("the %s backend (%s) is incomplete, it lacks %s: the CPU backend runs",
                             g_api.backend ? g_api.backend : "GPU", g_status.device.name, missing.c_str());
    return;
  }
  // The library stays loaded for the life of the process: the table points into it.
  g_status.available = true;
  g_status.backend = g_api.backend ? g_api.backend : "cuda";
  if (g_status.backend == "cuda")
    g_status.reason = strfmt("%s (compute %d.%d, %.1f GiB, %s)", g_status.device.name, g_status.device.compute_major,
                             g_status.device.compute_minor, double(g_status.device.total_bytes) / double(1ull << 30),
                             g_status.device.runtime);
  else
    g_status.reason = strfmt("%s (%.1f GiB, %s)", g_status.device.name,
                             double(g_status.device.total_bytes) / double(1ull << 30), g_status.device.runtime);
  if (!missing.empty()) g_status.reason += "; partial table, lacks " + missing;
}

}  // namespace

const Status& status() {
  static std::once_flag once;
  std::call_once(once, load);
  return g_status;
}

const folio_gpu_api* api() { return status().available ? &g_api : nullptr; }

const folio_gpu_api& require() {
  if (!status().available) fail("GPU_UNAVAILABLE", status().reason);
  return g_api;
}

void check(int rc, const char* what) {
  if (rc != 0) fail("GPU_ERROR", strfmt("%s: %s", what, g_api.last_error ? g_api.last_error() : "unknown GPU error"));
}

}  // namespace folio::gpu
