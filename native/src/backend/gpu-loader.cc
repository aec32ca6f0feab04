#include "backend/gpu-loader.h"

#include <cstdlib>
#include <map>
#include <mutex>

#include "core/error.h"

#if defined(_WIN32)
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace folio::gpu {

namespace {

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
      {"kv_gather", reinterpret_cast<const void*>(a.kv_gather)},
      {"hadamard", reinterpret_cast<const void*>(a.hadamard)},
  };
  std::string missing;
  for (const auto& [name, f] : ops)
    if (!f) missing += (missing.empty() ? "" : ", ") + std::string(name);
  return missing;
}

#if defined(_WIN32)
std::string library_file(Kind k) { return k == Kind::Cuda ? "folio-cuda.dll" : "folio-vulkan.dll"; }
#elif defined(__APPLE__)
std::string library_file(Kind k) { return k == Kind::Cuda ? "libfolio-cuda.dylib" : "libfolio-vulkan.dylib"; }
#else
std::string library_file(Kind k) { return k == Kind::Cuda ? "libfolio-cuda.so" : "libfolio-vulkan.so"; }
#endif

std::string title(Kind k) { return k == Kind::Cuda ? "the CUDA backend" : "the Vulkan backend"; }

bool gpu_turned_off(std::string& why) {
  const char* off = std::getenv("FOLIO_GPU");
  if (off && (std::string(off) == "off" || std::string(off) == "0" || std::string(off) == "cpu")) {
    why = "the GPU is turned off (FOLIO_GPU=" + std::string(off) + ")";
    return true;
  }
  return false;
}

const char* library_override() {
  const char* env = std::getenv("FOLIO_GPU_LIBRARY");
  return env && *env ? env : nullptr;
}

// One library file, opened once whichever kind asked for it (FOLIO_GPU_LIBRARY serves every kind).
struct Library {
  Status st;
  folio_gpu_api api{};
};

void open_library_file(Library& L, Kind k) {
  Status& st = L.st;
  const std::string who = library_override() ? "the GPU library " + st.library : title(k);
  std::string error;
  void* lib = open_library(st.library, error);
  if (!lib) {
    st.reason = who + " could not be loaded: " + error;
    return;
  }
  auto open = reinterpret_cast<folio_gpu_open_fn>(find_symbol(lib, FOLIO_GPU_OPEN_SYMBOL));
  if (!open) {
    st.reason = strfmt("%s has no %s: not a Folio GPU backend", st.library.c_str(), FOLIO_GPU_OPEN_SYMBOL);
    return;
  }
  char err[512] = "";
  const int32_t device = std::getenv("FOLIO_GPU_DEVICE") ? int32_t(std::atoi(std::getenv("FOLIO_GPU_DEVICE"))) : 0;
  if (open(FOLIO_GPU_ABI_VERSION, device, &L.api, err, sizeof err) != 0) {
    st.reason = strfmt("%s present but not usable: %s", who.c_str(), err);
    return;
  }
  if (L.api.device_info(&st.device) != 0) {
    st.reason = strfmt("%s present but the device cannot be read: %s", who.c_str(), L.api.last_error());
    return;
  }
  // A backend still being written leaves operations NULL: the forward pass would fail midway, so it is not
  // used and says so; the op suite asks for the partial table to test what exists (FOLIO_GPU_PARTIAL=1).
  const std::string missing = missing_operations(L.api);
  const char* partial = std::getenv("FOLIO_GPU_PARTIAL");
  const bool allow_partial = partial && std::string(partial) == "1";
  if (!missing.empty() && !allow_partial) {
    st.reason = strfmt("the %s backend (%s) is incomplete, it lacks %s", L.api.backend ? L.api.backend : "GPU",
                       st.device.name, missing.c_str());
    return;
  }
  // The library stays loaded for the life of the process: the table points into it.
  st.available = true;
  st.api = &L.api;
  st.backend = L.api.backend ? L.api.backend : kind_name(k);
  if (st.backend == "cuda")
    st.reason = strfmt("%s (compute %d.%d, %.1f GiB, %s)", st.device.name, st.device.compute_major,
                       st.device.compute_minor, double(st.device.total_bytes) / double(1ull << 30), st.device.runtime);
  else
    st.reason = strfmt("%s (%.1f GiB, %s)", st.device.name, double(st.device.total_bytes) / double(1ull << 30),
                       st.device.runtime);
  if (!missing.empty()) st.reason += "; partial table, lacks " + missing;
}

std::mutex g_mu;

const Status& load(Kind k) {
  // Never destroyed: device memory may still be freed through a table while the process exits (a session's
  // finalizer after static destruction), and the libraries stay loaded until then anyway.
  static auto& files = *new std::map<std::string, Library>;  // by path
  static auto& kinds = *new std::map<Kind, Status>;
  std::lock_guard<std::mutex> lock(g_mu);
  if (auto it = kinds.find(k); it != kinds.end()) return it->second;
  Status& st = kinds[k];
  if (gpu_turned_off(st.reason)) return st;
  const char* override_path = library_override();
#if defined(__APPLE__)
  if (k == Kind::Cuda && !override_path) {
    st.reason = "no CUDA on macOS";
    return st;
  }
#endif
  const std::string path = override_path ? std::string(override_path) : own_folder() + "/" + library_file(k);
  st.library = path;
  if (!file_exists(path)) {
    st.reason =
        strfmt("%s is not installed: %s is missing (this build or platform has none)", title(k).c_str(), path.c_str());
    return st;
  }
  auto [it, fresh] = files.try_emplace(path);
  Library& L = it->second;
  if (fresh) {
    L.st.library = path;
    open_library_file(L, k);
  }
  if (L.st.available && L.st.backend != kind_name(k)) {
    // FOLIO_GPU_LIBRARY names another kind's library: that kind has it, this one has none
    st.reason =
        strfmt("FOLIO_GPU_LIBRARY=%s is the %s backend, not %s", path.c_str(), L.st.backend.c_str(), kind_name(k));
    return st;
  }
  st = L.st;
  if (!st.available) st.backend = "cpu";
  return st;
}

const char* device_type_name(int32_t t) {
  switch (t) {
    case FOLIO_GPU_DEVICE_DISCRETE: return "a discrete GPU";
    case FOLIO_GPU_DEVICE_INTEGRATED: return "an integrated GPU";
    case FOLIO_GPU_DEVICE_VIRTUAL: return "a virtual GPU";
    default: return "a software device on the CPU";
  }
}

// Whether `auto` runs on this Vulkan device: a discrete GPU is faster than the CPU cores beside it; an
// integrated one reads the same memory as the CPU and is not reliably faster, except Apple's.
bool auto_takes(const folio_gpu_device_info& d) {
#if defined(__APPLE__)
  if (d.device_type == FOLIO_GPU_DEVICE_INTEGRATED) return true;
#endif
  return d.device_type == FOLIO_GPU_DEVICE_DISCRETE;
}

Status choose_automatic() {
  const Status& cuda = load(Kind::Cuda);
  if (cuda.available) return cuda;
  const Status& vk = load(Kind::Vulkan);
  if (vk.available && (library_override() || auto_takes(vk.device))) return vk;
  Status cpu;
  if (gpu_turned_off(cpu.reason)) return cpu;
  if (library_override()) {  // the one library named did not open: its outcome is the reason
    cpu.library = library_override();
    cpu.reason = cuda.reason;
    return cpu;
  }
  const std::string vk_reason = vk.available
                                    ? strfmt("%s is %s, which auto leaves to the CPU (backend 'vulkan' uses it)",
                                             vk.device.name, device_type_name(vk.device.device_type))
                                    : vk.reason;
  cpu.reason = "the CPU runs: " + cuda.reason + "; " + vk_reason;
  return cpu;
}

}  // namespace

const char* kind_name(Kind k) { return k == Kind::Cuda ? "cuda" : "vulkan"; }

bool kind_from_name(const std::string& name, Kind& out) {
  for (Kind k : kKinds)
    if (name == kind_name(k)) {
      out = k;
      return true;
    }
  return false;
}

const Status& status(Kind k) { return load(k); }

const Status& status() {
  static const Status& chosen = *new Status(choose_automatic());
  return chosen;
}

const folio_gpu_api& require(Kind k) {
  const Status& st = status(k);
  if (!st.available) fail("GPU_UNAVAILABLE", st.reason);
  return *st.api;
}

const folio_gpu_api& require() {
  const Status& st = status();
  if (!st.available) fail("GPU_UNAVAILABLE", st.reason);
  return *st.api;
}

void check(const folio_gpu_api& api, int rc, const char* what) {
  if (rc != 0) fail("GPU_ERROR", strfmt("%s: %s", what, api.last_error ? api.last_error() : "unknown GPU error"));
}

}  // namespace folio::gpu
