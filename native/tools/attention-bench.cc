// attention-bench: times the CPU attention (backend/attention.cc) of a chunk of queries over a cache, for
// work on the kernel without a model. The default shape is Llama-3.2-1B's layer (8 KV heads of 64, 4
// query heads each) reading a 512-token chunk after 2,048 cached entries, with F16 entries as the engine
// keeps them.
//
//   attention-bench [--keys 2048] [--queries 512] [--heads-kv 8] [--group 4] [--dim 64] [--threads N]
//                   [--type f16|f32|q8_0|q4_0] [--rotate 0] [--reps 5] [--reference 0] [--swa 0]
//
// Prints the median time and the arithmetic rate: each query head's scores and weighted sum over the
// keys it sees take 4·D flops a key (2·D for q·k, 2·D for p·v). --swa N: a sliding window of N positions
// (gemma3's sliding layers, phi3), where a query sees at most N keys.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu-ops.h"
#include "kv/flat-cache.h"

using namespace folio;

int main(int argc, char** argv) {
  int32_t keys = 2048, m = 512;
  int hk = 8, group = 4, dim = 64, threads = ThreadPool::default_threads(), reps = 5;
  KvType type = KvType::F16;
  bool reference = false, rotate = false;
  int32_t swa = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--keys") keys = std::atoi(v.c_str());
    else if (a == "--queries") m = std::atoi(v.c_str());
    else if (a == "--heads-kv") hk = std::atoi(v.c_str());
    else if (a == "--group") group = std::atoi(v.c_str());
    else if (a == "--dim") dim = std::atoi(v.c_str());
    else if (a == "--threads") threads = std::atoi(v.c_str());
    else if (a == "--reps") reps = std::atoi(v.c_str());
    else if (a == "--reference") reference = v == "1";
    else if (a == "--swa") swa = std::atoi(v.c_str());
    else if (a == "--type" && kv_type_from_name(v, &type)) continue;
    else if (a == "--rotate") rotate = v == "1";
    else {
      std::fprintf(stderr, "unknown argument %s %s\n", a.c_str(), v.c_str());
      return 2;
    }
  }
  if (keys < 0 || m < 1 || hk < 1 || group < 1 || dim < 1 || threads < 1 || reps < 1 || swa < 0) {
    std::fprintf(stderr, "sizes must be positive\n");
    return 2;
  }
  const int H = hk * group;
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const KvFormat format(type, type, rotate);
  FlatKvCache cache(1, hk, dim, dim, format);
  cache.reserve(0, keys + m, 0);
  std::vector<int32_t> pos(size_t(keys + m));
  for (int32_t j = 0; j < keys + m; j++) pos[size_t(j)] = j;
  std::vector<float> k(size_t(keys + m) * size_t(hk) * size_t(dim)), v(k.size());
  for (auto& x : k) x = nd(rng);
  for (auto& x : v) x = nd(rng);
  cache.append(0, k.data(), v.data(), pos.data(), keys + m);  // [keys + m, Hk·D]: the chunk's own last
  std::vector<float> q(size_t(m) * size_t(H) * size_t(dim)), out(q.size());
  for (auto& x : q) x = nd(rng);

  ThreadPool pool(threads);
  cpu::Scratch scratch;
  std::vector<double> ms;
  for (int r = 0; r <= reps; r++) {  // the first run is a warm-up
    const auto t0 = std::chrono::steady_clock::now();
    if (reference) cpu::attention_reference(pool, scratch, q.data(), cache, 0, m, H, swa, out.data());
    else cpu::attention(pool, scratch, q.data(), cache, 0, m, H, swa, out.data());
    const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  double seen = 0;  // key visits per query head: query t sees keys + t + 1, at most the window
  for (int32_t t = 0; t < m; t++) seen += double(swa > 0 ? std::min(swa, keys + t + 1) : keys + t + 1);
  const double flops = 4.0 * double(dim) * seen * double(H);
  std::printf("attention %s keys=%d queries=%d Hk=%d G=%d D=%d threads=%d swa=%d%s: %.2f ms, %.1f GFLOP/s\n",
              kv_format_name(format).c_str(), keys, m, hk, group, dim, threads, swa, reference ? " (reference)" : "",
              median, flops / median * 1e-6);
  return 0;
}
