/* The C interface between the engine and a GPU backend library (libfolio-cuda), which the addon loads
 * with dlopen when it is present (backend/gpu-loader.h). Plain C so that the two sides share no C++ ABI:
 * the library is built by nvcc with its own static runtime.
 *
 * The library exports one function, `folio_gpu_open`, which fills a table of operations. All pointers
 * the operations take are device pointers unless stated (names ending in `_host` are host memory).
 * Operations are queued in order on the library's one stream and return at once; `synchronize` waits for
 * them. Every function returns 0 on success, or a nonzero code with `last_error` describing the failure
 * (an asynchronous kernel failure is reported by the next call that notices it, at the latest by
 * `synchronize`).
 *
 * Layouts are the CPU engine's (backend/cpu-ops.h, kv/flat-cache.h): activations row-major float32,
 * [n tokens, width]; weights in their GGUF types, `rows` rows of `cols` elements, `ldw` bytes apart.
 */
#ifndef FOLIO_GPU_ABI_H
#define FOLIO_GPU_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2: folio_gpu_rope.mscale; geglu and scale. 3: attention's n_swa; device_type, max_alloc_bytes.
 * 5: the cache's key and value types apart, quantized entries (Q8_0, Q4_0) and their sizes; hadamard */
#define FOLIO_GPU_ABI_VERSION 5

typedef struct {
  char name[256];   /* e.g. "NVIDIA H200" */
  char runtime[64]; /* e.g. "CUDA runtime 13.0, driver 13.0" */
  int32_t compute_major, compute_minor;
  int32_t multiprocessors;
  uint64_t total_bytes, free_bytes;
  int32_t device_type;      /* FOLIO_GPU_DEVICE_*: what `auto` weighs (a discrete GPU beats the CPU) */
  uint64_t max_alloc_bytes; /* the largest single allocation the device makes (0: no limit below its memory) */
} folio_gpu_device_info;

#define FOLIO_GPU_DEVICE_DISCRETE 0
#define FOLIO_GPU_DEVICE_INTEGRATED 1 /* shares the host's memory */
#define FOLIO_GPU_DEVICE_VIRTUAL 2
#define FOLIO_GPU_DEVICE_CPU 3 /* a software device (lavapipe, the test library) */

/* One layer of the flat per-head KV cache on the device (kv/flat-cache.h): KV head g's entries are
 * k[offset[g] .. offset[g] + len[g]) (entries of k_bytes bytes, each head_dim numbers of k_type), the same
 * entries of v (head_dim_v numbers of v_type) and pos (the source position of each entry). `offset` and
 * `len` are device arrays of n_head_kv.
 *
 * The entry types (kv/entry-format.h): F32 and F16 hold the numbers as they are. Q8_0 and Q4_0 hold them in
 * blocks of 32, byte for byte GGUF's, each an f16 scale d and then
 *   Q8_0 (34 bytes): 32 int8 q;                                            x = d·q
 *   Q4_0 (18 bytes): 16 bytes, element j the low nibble of byte j, element j + 16 the high one; x = d·(q − 8)
 * An entry whose size is no multiple of 32 ends in a shorter block of the same kind, of len = dim mod 32
 * numbers: d, then len int8 (Q8_0), or len/2 bytes with element j low and element j + len/2 high (Q4_0).
 * Entries and blocks are packed without padding: a block starts at any even byte (a Q4_0 entry whose short
 * block has an odd number of bytes, at any byte), so the kernels read them as bytes or 16-bit words.
 * Quantizing a block of n numbers x (kv_append), as the CPU does (kv/entry-format.cc, quant/quant-scalar.cc):
 *   Q8_0: amax = max |x_i|; d = amax / 127; id = d ≠ 0 ? 1/d : 0; q_i = round(x_i·id), halves away from 0
 *   Q4_0: m = the x_i of largest magnitude (the first of equals), with its sign; d = m / −8;
 *         id = d ≠ 0 ? 1/d : 0; q_i = min(15, int(x_i·id + 8.5)) (truncation toward 0)
 * d is stored as f16, rounded to nearest even; the q use the float d, before that rounding.
 * Quantized entries may have been rotated (kv/hadamard.h) before they were stored: the table's operations
 * never rotate them; the engine rotates what goes in and comes out (hadamard below). */
typedef struct {
  void* k;               /* [capacity] entries of k_bytes */
  void* v;               /* [capacity] entries of v_bytes */
  int32_t* pos;          /* [capacity] */
  const int64_t* offset; /* [n_head_kv] */
  int32_t* len;          /* [n_head_kv] */
  int32_t n_head_kv, head_dim, head_dim_v;
  int32_t k_type, v_type;   /* 0: F32, 1: F16, 8: Q8_0, 2: Q4_0 (the ggml type ids, as KvType) */
  int32_t k_bytes, v_bytes; /* the bytes of one entry of keys and of values (kv::entry_bytes) */
} folio_gpu_kv_layer;

typedef struct {
  int32_t rope_dim; /* leading dims of each head that rotate */
  int32_t neox;     /* 0: pairs (2i, 2i+1); 1: pairs (i, i + rope_dim/2) */
  float base;       /* angle of pair i = freq_scale · pos · base^(−2i/rope_dim) / freq_factors[i] */
  float freq_scale;
  float mscale; /* the pair is multiplied by cos·mscale and sin·mscale (LongRoPE's attn_factor; else 1) */
} folio_gpu_rope;

typedef struct {
  uint32_t abi_version; /* FOLIO_GPU_ABI_VERSION */
  const char* backend;  /* "cuda" */

  const char* (*last_error)(void);
  int (*device_info)(folio_gpu_device_info* out_host);
  void (*close)(void);

  /* memory */
  int (*alloc)(size_t bytes, void** out_host); /* *out_host = a device pointer, 256-byte aligned */
  int (*free)(void* p);
  int (*upload)(void* dst, const void* src_host, size_t bytes);   /* returns when the copy is done */
  int (*download)(void* dst_host, const void* src, size_t bytes); /* waits for the queued work first */
  int (*copy)(void* dst, const void* src, size_t bytes);
  int (*zero)(void* dst, size_t bytes);
  int (*synchronize)(void);

  /* y[t, r] = Σ_c W[r, c] · x[t, c]     W: rows × cols of `type` (ggml type id), ldw bytes per row;
   * x: [n, cols]; y: [n, rows]. */
  int (*matmul)(const void* w, int32_t type, int64_t rows, int64_t cols, size_t ldw, const float* x, int64_t n,
                float* y);
  /* out[t, :] = the cols values of row ids[t] of W    ids: [n] (device); out: [n, cols]. */
  int (*get_rows)(const void* w, int32_t type, int64_t cols, size_t ldw, const int32_t* ids, int64_t n, float* out);
  /* y[t, i] = x[t, i] / sqrt(mean_i x[t, i]² + eps) · g[i]     x, y: [n, width] (may alias); g: [width]. */
  int (*rms_norm)(const float* x, const float* g, float* y, int64_t n, int64_t width, float eps);
  /* Rotates x [n, n_heads, head_dim] in place; pos: [n]; freq_factors: [rope_dim/2] or NULL. */
  int (*rope)(float* x, int64_t n, int32_t n_heads, int32_t head_dim, const int32_t* pos, const folio_gpu_rope* p_host,
              const float* freq_factors);
  /* h[i] = silu(g[i]) · u[i] for i < count (h may alias g). */
  int (*swiglu)(const float* g, const float* u, float* h, int64_t count);
  /* x[i] += y[i] for i < count. */
  int (*add)(float* x, const float* y, int64_t count);
  /* x[t, i] += b[i]     x: [n, width]. */
  int (*add_bias)(float* x, const float* b, int64_t n, int64_t width);

  /* Appends n tokens to every head of the layer, after each head's current len entries: head g takes
   * k[t, g·head_dim ..], v[t, g·head_dim_v ..] and pos[t] for t < n (k: [n, Hk·head_dim], v: [n, Hk·head_dim_v],
   * float32, converted to k_type and v_type), then adds n to every len[g] on the device (so that a decode step
   * needs no upload of the lengths; the caller keeps its host copy in step). The caller has made room. */
  int (*kv_append)(const folio_gpu_kv_layer* layer_host, const float* k, const float* v, const int32_t* pos, int32_t n);
  /* Causal attention of m new queries over the layer, whose len already includes their m entries:
   * query t (0 ≤ t < m) of head h reads KV head g = h / (n_head / Hk) entries [0, len[g] − m + t], and with
   * n_swa > 0 of those only the ones in its sliding window: entry j's pos[j] ≥ the query's own entry's
   * position − n_swa + 1 (backend/sliding-window.h; a head's positions ascend); n_swa = 0: all of them.
   * softmax(q·k / sqrt(head_dim)) in float32, weighted sum of v.   q: [m, n_head·head_dim];
   * out: [m, n_head·head_dim_v]. */
  int (*attention)(const float* q, const folio_gpu_kv_layer* layer_host, int32_t m, int32_t n_head, int32_t n_swa,
                   float* out);
  /* SnapKV window scores (kv/scorer.h) over each head's first L entries: the last w of them are the window,
   * whose queries qw [w, n_head·head_dim] attend causally to all L keys (window query i sees entries
   * [0, L − w + i]); softmax in float32; attn[g, j] = mean over the w queries and the G query heads of g;
   * score[g, :] = max_pool(attn[g, 0 .. L − w), kernel) (stride 1, window [j − kernel/2, j + kernel/2]
   * clipped to the row).     attn: [Hk, L]; score: [Hk, L − w]. */
  int (*window_scores)(const float* qw, const folio_gpu_kv_layer* layer_host, int32_t n_head, int32_t L, int32_t w,
                       int32_t kernel, float* attn, float* score);
  /* Compaction: dst head g's entries [0, cnt) become src head g's entries keep[start[g] .. start[g] + cnt)
   * (k, v and pos), cnt = start[g + 1] − start[g]; keep: device, start_host: host [Hk + 1]. src and dst
   * are different buffers with the same shapes and types. */
  int (*kv_gather)(const folio_gpu_kv_layer* src_host, const folio_gpu_kv_layer* dst_host, const int32_t* keep,
                   const int64_t* start_host);

  /* h[i] = gelu(g[i]) · u[i] for i < count, GELU's tanh form 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
   * (h may alias g). */
  int (*geglu)(const float* g, const float* u, float* h, int64_t count);
  /* x[i] *= s for i < count. */
  int (*scale)(float* x, float s, int64_t count);

  /* x [rows, block] ← each row times the normalised Walsh–Hadamard matrix of order `block`, in place:
   * y_i = Σ_j (−1)^popcount(i & j) · x_j / √block; block a power of two, 2 to 1024. The rotation of
   * quantized entries (kv/hadamard.h): the engine rotates keys and values before kv_append, queries before
   * attention and window_scores, and the attention's output back (H is its own inverse). A library that
   * makes the CPU's passes in the CPU's order (kv/hadamard.cc: for h = 1, 2, 4, … < block, each pair
   * (i, i + h) within a run of 2h becomes (x_i + x_{i+h}, x_i − x_{i+h})), then multiplies by the float
   * 1/√block, rotates bit for bit as the CPU does, so that the rows it quantizes are the CPU's. */
  int (*hadamard)(float* x, int64_t rows, int32_t block);
} folio_gpu_api;

/* The library's one export. Fills *api for device `device` (0: the first). Returns 0, or nonzero with a
 * message in err (no driver, no device, an ABI version it does not speak). */
typedef int (*folio_gpu_open_fn)(uint32_t abi_version, int32_t device, folio_gpu_api* api, char* err, size_t err_len);
#define FOLIO_GPU_OPEN_SYMBOL "folio_gpu_open"

#ifdef __cplusplus
}
#endif

#endif /* FOLIO_GPU_ABI_H */
