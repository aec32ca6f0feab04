// libfolio-reference-gpu: the GPU table of backend/gpu-abi.h implemented on the host, each operation in
// the plainest way (from the engine's scalar and reference code), "device" memory being host memory. It
// is no backend for users: it lets the engine's GPU path (the device cache, the forward pass, compression
// on the device, save/load across backends) run and be tested on machines without a GPU, so that a real
// GPU run has only the kernels left to prove. Load it with FOLIO_GPU_LIBRARY=.../libfolio-reference-gpu.so.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu-ops.h"
#include "backend/gpu-abi.h"
#include "backend/sliding-window.h"
#include "core/error.h"
#include "kv/allocator.h"
#include "kv/entry-format.h"
#include "kv/hadamard.h"
#include "kv/scorer.h"
#include "quant/quant.h"

using namespace folio;

namespace {

std::string g_error;
ThreadPool& pool() {
  static ThreadPool p(1);
  return p;
}
const quant::Kernels& scalar(int32_t type) { return quant::kernels(TensorType(type), quant::Isa::Scalar); }

int guarded(const char* what, const std::function<void()>& f) {
  try {
    f();
    return 0;
  } catch (const std::exception& e) {
    g_error = std::string(what) + ": " + e.what();
    return 1;
  }
}

// Entry j of KV head g as the floats stored (number by number, by the formulas of kv/entry-format.h).
void read_entry(const folio_gpu_kv_layer& L, bool values, int g, int64_t j, float* out) {
  const int dim = values ? L.head_dim_v : L.head_dim;
  const size_t eb = size_t(values ? L.v_bytes : L.k_bytes);
  const uint8_t* e = static_cast<const uint8_t*>(values ? L.v : L.k) + size_t(L.offset[g] + j) * eb;
  for (int i = 0; i < dim; i++) out[i] = kv::decode_reference(KvType(values ? L.v_type : L.k_type), e, dim, i);
}

const char* last_error() { return g_error.c_str(); }

// A device's largest allocation, to test the engine's splitting of large weights: FOLIO_REFERENCE_GPU_MAX_ALLOC
// bytes, or none (0).
uint64_t max_alloc() {
  static const uint64_t limit = [] {
    const char* env = std::getenv("FOLIO_REFERENCE_GPU_MAX_ALLOC");
    return env ? uint64_t(std::strtoull(env, nullptr, 10)) : uint64_t(0);
  }();
  return limit;
}
int device_info(folio_gpu_device_info* o) {
  std::memset(o, 0, sizeof *o);
  std::snprintf(o->name, sizeof o->name, "host reference backend (no GPU)");
  std::snprintf(o->runtime, sizeof o->runtime, "none");
  o->compute_major = 0;
  o->total_bytes = o->free_bytes = uint64_t(1) << 34;
  o->device_type = FOLIO_GPU_DEVICE_CPU;
  o->max_alloc_bytes = max_alloc();
  return 0;
}
void close_() {}
int alloc(size_t bytes, void** out) {
  *out = nullptr;
  if (max_alloc() && bytes > max_alloc()) {
    g_error = "alloc: " + std::to_string(bytes) + " bytes is more than FOLIO_REFERENCE_GPU_MAX_ALLOC allows";
    return 1;
  }
  *out = std::calloc(1, bytes ? bytes : 1);
  if (!*out) g_error = "alloc: out of memory";
  return *out ? 0 : 1;
}
int free_(void* p) {
  std::free(p);
  return 0;
}
int move(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
  return 0;
}
int zero(void* dst, size_t bytes) {
  if (bytes) std::memset(dst, 0, bytes);
  return 0;
}
int sync() { return 0; }

int matmul(const void* w, int32_t type, int64_t rows, int64_t cols, size_t ldw, const float* x, int64_t n, float* y) {
  return guarded("matmul", [&] {
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; r++) {
      scalar(type).dequantize_row(static_cast<const uint8_t*>(w) + size_t(r) * ldw, row.data(), cols);
      for (int64_t t = 0; t < n; t++) {
        double s = 0;
        for (int64_t c = 0; c < cols; c++) s += double(row[size_t(c)]) * double(x[t * cols + c]);
        y[t * rows + r] = float(s);
      }
    }
  });
}

int get_rows(const void* w, int32_t type, int64_t cols, size_t ldw, const int32_t* ids, int64_t n, float* out) {
  return guarded("get_rows", [&] {
    for (int64_t t = 0; t < n; t++)
      scalar(type).dequantize_row(static_cast<const uint8_t*>(w) + size_t(ids[t]) * ldw, out + t * cols, cols);
  });
}

int rms_norm(const float* x, const float* g, float* y, int64_t n, int64_t width, float eps) {
  return guarded("rms_norm", [&] { cpu::rms_norm(pool(), x, g, y, n, width, eps); });
}

int rope(float* x, int64_t n, int32_t n_heads, int32_t head_dim, const int32_t* pos, const folio_gpu_rope* p,
         const float* ff) {
  backend::RopeParams rp;
  rp.rope_dim = p->rope_dim;
  rp.neox = p->neox != 0;
  rp.base = p->base;
  rp.freq_scale = p->freq_scale;
  rp.mscale = p->mscale;
  return guarded("rope", [&] { cpu::rope(pool(), x, n, n_heads, head_dim, pos, rp, ff); });
}

int geglu(const float* g, const float* u, float* h, int64_t count) {
  return guarded("geglu", [&] { cpu::geglu(pool(), g, u, h, 1, count); });
}
int scale(float* x, float s, int64_t count) {
  return guarded("scale", [&] { cpu::scale(x, s, count); });
}
int swiglu(const float* g, const float* u, float* h, int64_t count) {
  return guarded("swiglu", [&] { cpu::swiglu(pool(), g, u, h, 1, count); });
}
int add(float* x, const float* y, int64_t count) {
  for (int64_t i = 0; i < count; i++) x[i] += y[i];
  return 0;
}
int add_bias(float* x, const float* b, int64_t n, int64_t width) {
  for (int64_t t = 0; t < n; t++)
    for (int64_t i = 0; i < width; i++) x[t * width + i] += b[i];
  return 0;
}

int kv_append(const folio_gpu_kv_layer* L, const float* k, const float* v, const int32_t* pos, int32_t n) {
  for (int g = 0; g < L->n_head_kv; g++) {
    for (int32_t t = 0; t < n; t++) {
      const int64_t e = L->offset[g] + L->len[g] + t;
      const float* kr = k + (int64_t(t) * L->n_head_kv + g) * L->head_dim;
      const float* vr = v + (int64_t(t) * L->n_head_kv + g) * L->head_dim_v;
      kv::encode_reference(KvType(L->k_type), kr, static_cast<uint8_t*>(L->k) + size_t(e) * size_t(L->k_bytes),
                           L->head_dim);
      kv::encode_reference(KvType(L->v_type), vr, static_cast<uint8_t*>(L->v) + size_t(e) * size_t(L->v_bytes),
                           L->head_dim_v);
      L->pos[e] = pos[t];
    }
    L->len[g] += n;
  }
  return 0;
}

int attention(const float* q, const folio_gpu_kv_layer* L, int32_t m, int32_t n_head, int32_t n_swa, float* out) {
  const int G = n_head / L->n_head_kv, D = L->head_dim, Dv = L->head_dim_v;
  std::vector<float> kk(static_cast<size_t>(D)), vv(static_cast<size_t>(Dv));
  for (int h = 0; h < n_head; h++) {
    const int g = h / G;
    for (int32_t t = 0; t < m; t++) {
      const int32_t visible = L->len[g] - m + t + 1;
      const float* qr = q + (int64_t(t) * n_head + h) * D;
      const int32_t* kpos = L->pos + L->offset[g];  // [len] the entries' positions
      const int32_t q_pos = kpos[visible - 1];      // the query's own entry
      std::vector<double> p(static_cast<size_t>(std::max(visible, 0)), -INFINITY);
      double mx = -INFINITY;
      for (int32_t j = 0; j < visible; j++) {
        if (!backend::in_window(q_pos, kpos[j], n_swa)) continue;  // stays −inf: exp gives 0
        read_entry(*L, false, g, j, kk.data());
        double s = 0;
        for (int d = 0; d < D; d++) s += double(qr[d]) * kk[size_t(d)];
        p[size_t(j)] = s / std::sqrt(double(D));
        mx = std::max(mx, p[size_t(j)]);
      }
      double sum = 0;
      for (double& x : p) sum += x = std::exp(x - mx);
      std::vector<double> o(static_cast<size_t>(Dv), 0.0);
      for (int32_t j = 0; j < visible; j++) {
        read_entry(*L, true, g, j, vv.data());
        for (int d = 0; d < Dv; d++) o[size_t(d)] += p[size_t(j)] / sum * vv[size_t(d)];
      }
      for (int d = 0; d < Dv; d++) out[(int64_t(t) * n_head + h) * Dv + d] = float(o[size_t(d)]);
    }
  }
  return 0;
}

int window_scores(const float* qw, const folio_gpu_kv_layer* L, int32_t n_head, int32_t Ln, int32_t w, int32_t kernel,
                  float* attn, float* score) {
  return guarded("window_scores", [&] {
    kv::WindowShape s;
    s.n_head = n_head;
    s.n_head_kv = L->n_head_kv;
    s.head_dim = L->head_dim;
    s.head_dim_v = L->head_dim_v;
    s.L = Ln;
    s.w = w;
    kv::EntryReader keys = [&](int g, float* o) {
      for (int32_t j = 0; j < Ln; j++) read_entry(*L, false, g, j, o + int64_t(j) * L->head_dim);
    };
    const kv::WindowScores ws = kv::snapkv_scores(pool(), s, qw, keys, kernel);
    for (int g = 0; g < L->n_head_kv; g++) {
      std::copy(ws.attn[size_t(g)].begin(), ws.attn[size_t(g)].end(), attn + int64_t(g) * Ln);
      std::copy(ws.score[size_t(g)].begin(), ws.score[size_t(g)].end(), score + int64_t(g) * (Ln - w));
    }
  });
}

int kv_gather(const folio_gpu_kv_layer* src, const folio_gpu_kv_layer* dst, const int32_t* keep, const int64_t* start) {
  const size_t kb = size_t(src->k_bytes), vb = size_t(src->v_bytes);
  for (int g = 0; g < src->n_head_kv; g++)
    for (int64_t i = 0; i < start[g + 1] - start[g]; i++) {
      const int64_t from = src->offset[g] + keep[start[g] + i], to = dst->offset[g] + i;
      std::memcpy(static_cast<uint8_t*>(dst->k) + size_t(to) * kb,
                  static_cast<const uint8_t*>(src->k) + size_t(from) * kb, kb);
      std::memcpy(static_cast<uint8_t*>(dst->v) + size_t(to) * vb,
                  static_cast<const uint8_t*>(src->v) + size_t(from) * vb, vb);
      dst->pos[to] = src->pos[from];
    }
  return 0;
}

// The engine's butterfly, not its matrix reference: a device that makes its passes in the same order rounds
// exactly as the CPU does, so the rotated rows it quantizes are the CPU's bit for bit (a value on the edge of
// two Q4_0 steps would otherwise go one way here and the other there).
int hadamard(float* x, int64_t rows, int32_t block) {
  return guarded("hadamard", [&] {
    if (block < 2 || block > 1024 || (block & (block - 1))) fail("INVALID_ARGUMENT", "block must be a power of two");
    kv::hadamard(x, block, rows);
  });
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int folio_gpu_open(uint32_t abi_version, int32_t, folio_gpu_api* api,
                                                                     char* err, size_t err_len) {
  if (abi_version != FOLIO_GPU_ABI_VERSION) {
    std::snprintf(err, err_len, "reference backend speaks GPU ABI %d, the engine %u", FOLIO_GPU_ABI_VERSION,
                  abi_version);
    return 1;
  }
  std::memset(api, 0, sizeof *api);
  api->abi_version = FOLIO_GPU_ABI_VERSION;
  api->backend = "cuda";  // it stands in for the CUDA backend, through the same engine path
  api->last_error = last_error;
  api->device_info = device_info;
  api->close = close_;
  api->alloc = alloc;
  api->free = free_;
  api->upload = move;
  api->download = move;
  api->copy = move;
  api->zero = zero;
  api->synchronize = sync;
  api->matmul = matmul;
  api->get_rows = get_rows;
  api->rms_norm = rms_norm;
  api->rope = rope;
  api->swiglu = swiglu;
  api->geglu = geglu;
  api->scale = scale;
  api->add = add;
  api->add_bias = add_bias;
  api->kv_append = kv_append;
  api->attention = attention;
  api->window_scores = window_scores;
  api->kv_gather = kv_gather;
  api->hadamard = hadamard;
  return 0;
}
