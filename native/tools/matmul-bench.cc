// matmul-bench: times one matrix product of random weights, for work on the kernels without a model.
//
//   matmul-bench [--type q8_0] [--rows 2048] [--cols 2048] [--tokens 512] [--threads N] [--isa avx2]
//                [--path auto|blocked|vecdot] [--reps 5] [--hot 1] [--repack 0] [--pages 4k|huge|both]
//
// Prints the median time, the arithmetic rate (2·rows·cols·tokens per second) and the weight bytes read
// per second (what bounds a matrix-vector product). The weights are 256 MiB or more worth of copies of
// the matrix, used in turn, so that a matrix-vector product reads from memory and not from the cache;
// --hot 1 keeps one copy, read from the cache when it fits there: the kernel's own speed. The matrix is
// repacked into the layout the engine gives it on this ISA (quant/repack.h), unless --repack 0. --pages
// puts the weights in 4 KiB pages or asks for huge ones (as the engine's copies do); `both` keeps one set
// of each and alternates them run by run, so that a machine whose bandwidth swings slows both alike.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/large-buffer.h"
#include "core/thread-pool.h"
#include "quant/matmul.h"
#include "quant/quant.h"
#include "quant/repack.h"

using namespace folio;

int main(int argc, char** argv) {
  std::string type_name_arg = "q8_0", isa_name_arg, path_arg = "auto";
  int64_t rows = 2048, cols = 2048, n = 512;
  int threads = ThreadPool::default_threads(), reps = 5;
  bool hot = false, repack = true;
  std::string pages_arg = "huge";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--type") type_name_arg = v;
    else if (a == "--rows") rows = std::atoll(v.c_str());
    else if (a == "--cols") cols = std::atoll(v.c_str());
    else if (a == "--tokens") n = std::atoll(v.c_str());
    else if (a == "--threads") threads = std::atoi(v.c_str());
    else if (a == "--isa") isa_name_arg = v;
    else if (a == "--path") path_arg = v;
    else if (a == "--reps") reps = std::atoi(v.c_str());
    else if (a == "--hot") hot = v == "1";
    else if (a == "--repack") repack = v != "0";
    else if (a == "--pages") pages_arg = v;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  TensorType type = TensorType::F32;
  bool found = false;
  for (uint32_t id = 0; id < 40; ++id) {
    const TypeInfo* ti = type_info(id);
    if (!ti || !quant::weight_type_supported(TensorType(id))) continue;
    std::string lower = ti->name;
    for (char& c : lower) c = char(std::tolower(c));
    if (lower == type_name_arg) type = TensorType(id), found = true;
  }
  if (!found) {
    std::fprintf(stderr, "unknown type %s\n", type_name_arg.c_str());
    return 2;
  }
  quant::Isa isa = quant::best_isa();
  for (int k = 0; k < quant::kIsaCount; ++k)
    if (isa_name_arg == quant::isa_name(quant::Isa(k))) isa = quant::Isa(k);
  const quant::MatmulPath path = path_arg == "blocked"  ? quant::MatmulPath::Blocked
                                 : path_arg == "vecdot" ? quant::MatmulPath::VecDot
                                                        : quant::MatmulPath::Auto;
  try {
    const quant::Kernels& k = quant::kernels(type, isa);
    const TensorType layout = repack ? quant::cpu_layout(type, rows, isa) : type;
    const size_t rb = row_bytes(type, cols), ldw = row_bytes(layout, cols), matrix = ldw * size_t(rows);
    const int copies = hot ? 1 : int(std::max<size_t>(1, ((256u << 20) + matrix - 1) / matrix));
    if (pages_arg != "4k" && pages_arg != "huge" && pages_arg != "both") {
      std::fprintf(stderr, "--pages is 4k, huge or both, not %s\n", pages_arg.c_str());
      return 2;
    }
    using Pages = LargeBuffer::Pages;
    std::vector<Pages> page_kinds;  // one set of weights per kind, used in turn
    if (pages_arg != "huge") page_kinds.push_back(Pages::Small);
    if (pages_arg != "4k") page_kinds.push_back(Pages::Huge);
    std::vector<uint8_t> file(rb * size_t(rows));
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0, 1);
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (auto& v : row) v = nd(rng);
      k.quantize_row(row.data(), file.data() + size_t(r) * rb, cols);
    }
    std::vector<LargeBuffer> weights;
    for (const Pages kind : page_kinds) {
      weights.emplace_back(matrix * size_t(copies), kind);
      uint8_t* w = weights.back().data();
      if (layout != type)
        quant::repack_groups(type, layout, file.data(), rb, cols, 0, rows / quant::row_group(layout), w);
      else std::memcpy(w, file.data(), matrix);
      for (int c = 1; c < copies; ++c) std::memcpy(w + size_t(c) * matrix, w, matrix);
    }
    std::vector<float> x(static_cast<size_t>(n * cols)), y(static_cast<size_t>(n * rows));
    for (auto& v : x) v = nd(rng);
    ThreadPool pool(threads);
    std::vector<uint8_t> act;
    const size_t kinds = page_kinds.size();
    std::vector<std::vector<double>> times(kinds);
    const int runs = std::max(reps, n == 1 ? std::max(copies * 4, 20) : reps);
    for (int r = 0; r <= runs; ++r)
      for (size_t pk = 0; pk < kinds; ++pk) {
        quant::MatrixRef m;
        m.data = weights[pk].data() + size_t(r % copies) * matrix;
        m.type = layout;
        m.rows = rows;
        m.cols = cols;
        m.ldw = ldw;
        const auto t0 = std::chrono::steady_clock::now();
        quant::matmul(pool, m, x.data(), n, y.data(), act, isa, path);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (r > 0) times[pk].push_back(s);
      }
    std::vector<double> medians;
    for (size_t pk = 0; pk < kinds; ++pk) {
      std::sort(times[pk].begin(), times[pk].end());
      const double med = times[pk][times[pk].size() / 2];
      medians.push_back(med);
      std::printf(
          "%s %s %s rows=%lld cols=%lld tokens=%lld threads=%d pages=%s: %.3f ms, %.1f GFLOP/s, %.1f GB/s of weights\n",
          type_name(layout), quant::isa_name(isa), path_arg.c_str(), (long long)rows, (long long)cols, (long long)n,
          threads, page_kinds[pk] == Pages::Huge ? "huge" : "4k", med * 1e3,
          2.0 * double(rows) * double(cols) * double(n) / med / 1e9, double(matrix) / med / 1e9);
    }
    if (kinds == 2) std::printf("huge pages / 4k pages: %.3fx the speed\n", medians[0] / medians[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "matmul-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
