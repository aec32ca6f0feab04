// The CUDA backend end to end, for a machine with a GPU but without Node (native/tools/gpu-check.sh runs
// it): the whole engine on the GPU against the same engine on the CPU, which the test suite holds to
// llama.cpp's outputs.
//   gpu-check e2e   --model stories260K.gguf [--expect FILE]
//       logits at every position of a prompt within 1e-4 of the CPU's, 64 greedy tokens identical (and
//       equal to the reference's, from FILE: lines "name: id id id ..." of the prompt then "greedy: ...");
//       each compression method keeps the same entries on both; a session saved on one backend loads on
//       the other; fork and truncate on the device.
//   gpu-check bench --model M [--prompt-tokens 512] [--gen-tokens 128] [--long 16384] [--repeats 3]
//       prefill and decode tokens/s on the GPU, decode as a fraction of the GPU's bandwidth (a device-to-
//       device copy measured in the same run), full vs Ada-compressed decode at a long context.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backend/gpu-buffer.h"
#include "backend/gpu-loader.h"
#include "core/error.h"
#include "session/session.h"

using namespace folio;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::map<std::string, std::string> parse_flags(int argc, char** argv, int from) {
  std::map<std::string, std::string> f;
  for (int i = from; i < argc; i++) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) fail("USAGE", "unexpected argument " + a);
    f[a.substr(2)] = i + 1 < argc ? argv[++i] : "";
  }
  return f;
}

int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("%s  %s\n", ok ? "OK  " : "FAIL", what.c_str());
  std::fflush(stdout);
  if (!ok) failures++;
}

float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  float m = 0;
  for (size_t i = 0; i < a.size(); i++) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

ContextParams params(BackendKind b, int32_t n_ctx) {
  ContextParams p;
  p.n_ctx = n_ctx;
  p.kv = KvType::F32;
  p.backend = b;
  return p;
}

GenerateResult greedy(Session& s, int32_t n) {
  GenerateParams g;
  g.n = n;
  g.sampling.temperature = 0;
  return s.generate(g, nullptr, nullptr);
}

// A story-like prompt of stories260K's vocabulary: the model's own greedy continuation of BOS.
std::vector<int32_t> make_prompt(const std::shared_ptr<const Model>& m, int32_t n) {
  Session s(m, params(BackendKind::Cpu, 512));
  std::vector<float> logits;
  s.prefill({m->vocab().bos()}, false, logits, nullptr, nullptr);
  std::vector<int32_t> t{m->vocab().bos()};
  const GenerateResult r = greedy(s, n - 1);
  t.insert(t.end(), r.tokens.begin(), r.tokens.end());
  return t;
}

int run_e2e(const std::map<std::string, std::string>& f) {
  std::shared_ptr<const Model> m = Model::load(f.at("model"));
  const float tol = 1e-4f;

  // The reference's prompts, when given: tokens, then llama.cpp's greedy continuation.
  if (f.count("expect")) {
    std::ifstream in(f.at("expect"));
    std::string line;
    std::vector<std::pair<std::string, std::vector<int32_t>>> rows;
    while (std::getline(in, line)) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::istringstream ids(line.substr(colon + 1));
      std::vector<int32_t> v;
      for (int32_t x; ids >> x;) v.push_back(x);
      rows.emplace_back(line.substr(0, colon), v);
    }
    for (size_t i = 0; i + 1 < rows.size(); i += 2) {
      Session s(m, params(automatic_backend(), 512));
      std::vector<float> logits;
      s.prefill(rows[i].second, false, logits, nullptr, nullptr);
      const GenerateResult r = greedy(s, int32_t(rows[i + 1].second.size()));
      check(r.tokens == rows[i + 1].second, rows[i].first + ": greedy tokens on the GPU equal llama.cpp's");
    }
  }

  const std::vector<int32_t> prompt = make_prompt(m, 300);
  {
    Session c(m, params(BackendKind::Cpu, 512)), g(m, params(automatic_backend(), 512));
    std::vector<float> lc, lg;
    auto t0 = Clock::now();
    c.prefill(prompt, true, lc, nullptr, nullptr);
    const double tc = seconds_since(t0);
    t0 = Clock::now();
    g.prefill(prompt, true, lg, nullptr, nullptr);
    const double tg = seconds_since(t0);
    const float d = max_diff(lc, lg);
    check(d <= tol, "logits at all " + std::to_string(prompt.size()) + " positions: max |Δ| " + std::to_string(d) +
                        " (cpu " + std::to_string(tc) + " s, gpu " + std::to_string(tg) + " s)");
    check(greedy(c, 64).tokens == greedy(g, 64).tokens, "64 greedy tokens identical");
  }
  {
    // One token at a time on the GPU: the decode kernels against the batched prefill.
    Session a(m, params(automatic_backend(), 512)), b(m, params(automatic_backend(), 512));
    std::vector<float> all, one;
    const std::vector<int32_t> head(prompt.begin(), prompt.begin() + 40);
    a.prefill(head, true, all, nullptr, nullptr);
    float worst = 0;
    const size_t V = all.size() / head.size();
    for (size_t t = 0; t < head.size(); t++) {
      b.prefill({head[t]}, false, one, nullptr, nullptr);
      worst = std::max(worst, max_diff(one, std::vector<float>(all.begin() + t * V, all.begin() + (t + 1) * V)));
    }
    check(worst <= tol, "decode step by step equals the batched prefill: max |Δ| " + std::to_string(worst));
  }
  for (const kv::MethodSpec& spec : kv::method_table()) {
    const std::string& method = spec.name;
    kv::CompressOptions o;
    o.method = spec;
    o.budget_ratio = 0.3;
    Session c(m, params(BackendKind::Cpu, 512)), g(m, params(automatic_backend(), 512));
    const kv::CompressionStats sc = c.compress(prompt, o, nullptr, nullptr);
    const kv::CompressionStats sg = g.compress(prompt, o, nullptr, nullptr);
    bool same_kept = sc.token_retention == sg.token_retention && sc.kv_bytes_kept == sg.kv_bytes_kept;
    double mass = 0;
    for (size_t l = 0; l < sc.layers.size(); l++)
      for (size_t h = 0; h < sc.layers[l].heads.size(); h++) {
        same_kept = same_kept && sc.layers[l].heads[h].kept == sg.layers[l].heads[h].kept;
        mass = std::max(mass, std::fabs(sc.layers[l].heads[h].retained_mass - sg.layers[l].heads[h].retained_mass));
      }
    check(same_kept, std::string(method) + ": the same kept counts and token retention on both backends");
    check(mass < 1e-4, std::string(method) + ": retained attention mass within 1e-4 (" + std::to_string(mass) + ")");
    const float d = max_diff(c.last_logits(), g.last_logits());
    check(d <= tol, std::string(method) + ": logits after compression, max |Δ| " + std::to_string(d));
    check(greedy(c, 24).tokens == greedy(g, 24).tokens, std::string(method) + ": 24 greedy tokens identical");
  }
  {
    // Save on the GPU, load on the CPU, and back.
    kv::CompressOptions o;
    o.method = kv::parse_method("ada-snapkv");
    o.budget_ratio = 0.25;
    Session g(m, params(automatic_backend(), 512));
    g.compress(prompt, o, nullptr, nullptr);
    const std::filesystem::path tmp = std::filesystem::temp_directory_path();
    const std::string a = (tmp / "folio-gpu-check-a.session").string(),
                      b = (tmp / "folio-gpu-check-b.session").string();
    g.save(a, "{}");
    auto on_cpu = Session::load(m, a, params(BackendKind::Cpu, 512), nullptr);
    on_cpu->save(b, "{}");
    auto on_gpu = Session::load(m, b, params(automatic_backend(), 512), nullptr);
    const auto x = greedy(g, 16).tokens, y = greedy(*on_cpu, 16).tokens, z = greedy(*on_gpu, 16).tokens;
    check(x == y && x == z, "a session saved on the GPU continues the same on the CPU, and back");
    // Fork and truncate on the device.
    auto fork = on_gpu->fork();
    GenerateParams gp;
    gp.n = 10;
    gp.sampling.temperature = 0.9f;
    gp.sampling.seed = 3;
    fork->generate(gp, nullptr, nullptr);
    const int32_t n = on_gpu->context().n_past();
    const auto more = greedy(*on_gpu, 8).tokens;
    on_gpu->truncate(n - 16);
    on_cpu->truncate(n - 16);
    std::vector<float> l1, l2;
    on_gpu->prefill({more[0]}, false, l1, nullptr, nullptr);
    on_cpu->prefill({more[0]}, false, l2, nullptr, nullptr);
    check(max_diff(l1, l2) <= tol, "fork leaves the origin alone; truncate then a token gives the CPU's logits");
  }
  std::printf("gpu-check e2e: %d failed\n", failures);
  return failures ? 1 : 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double copy_bandwidth() {
  const folio_gpu_api& g = gpu::require();
  const size_t bytes = size_t(2) << 30;
  gpu::Buffer a(g, bytes), b(g, bytes);
  gpu::check(g, g.zero(a.get(), bytes), "zero");
  double best = 1e9;
  for (int p = 0; p < 6; p++) {
    gpu::check(g, g.synchronize(), "sync");
    const auto t0 = Clock::now();
    gpu::check(g, g.copy(b.get(), a.get(), bytes), "copy");
    gpu::check(g, g.synchronize(), "sync");
    if (p > 0) best = std::min(best, seconds_since(t0));
  }
  return double(2 * bytes) / best;
}

int run_bench(const std::map<std::string, std::string>& f) {
  auto num = [&](const char* k, int def) { return f.count(k) ? std::atoi(f.at(k).c_str()) : def; };
  const int P = num("prompt-tokens", 512), G = num("gen-tokens", 128), R = num("repeats", 3), LONG = num("long", 16384);
  auto t0 = Clock::now();
  std::shared_ptr<const Model> m = Model::load(f.at("model"));
  const HParams& hp = m->hparams();
  std::vector<int32_t> prompt(static_cast<size_t>(std::max(P, LONG)));
  for (size_t i = 0; i < prompt.size(); i++) prompt[i] = int32_t(256 + (i * 7919 + 104729) % size_t(hp.n_vocab - 300));
  ContextParams cp;
  cp.backend = automatic_backend();
  cp.n_ctx = std::min(hp.n_ctx_train, std::max(P + G + 8, LONG + G + 8));
  {
    Session warm(m, cp);  // uploads the weights
    std::vector<float> l;
    warm.prefill(std::vector<int32_t>(prompt.begin(), prompt.begin() + 16), false, l, nullptr, nullptr);
  }
  std::printf("model %s: loaded and uploaded in %.1f s\n", f.at("model").c_str(), seconds_since(t0));
  std::vector<double> pp, tg;
  for (int r = 0; r < R; r++) {
    Session s(m, cp);
    std::vector<float> l;
    auto t = Clock::now();
    s.prefill(std::vector<int32_t>(prompt.begin(), prompt.begin() + P), false, l, nullptr, nullptr);
    pp.push_back(P / seconds_since(t));
    Session d(m, cp);
    d.prefill({m->vocab().bos() >= 0 ? m->vocab().bos() : 0}, false, l, nullptr, nullptr);
    t = Clock::now();
    greedy(d, G);
    tg.push_back(G / seconds_since(t));
  }
  const double bw = copy_bandwidth();
  size_t weights = m->weights().total_bytes;
  const double kv = double(hp.n_layer) * (1 + (G + 1) / 2.0) * hp.n_head_kv * (hp.head_dim + hp.head_dim_v) * 2;
  const double bound = bw / (double(weights) + kv);
  std::printf("prefill pp%d: %.1f tokens/s   decode tg%d: %.1f tokens/s (median of %d)\n", P, median(pp), G, median(tg),
              R);
  std::printf("device-to-device copy: %.0f GB/s; decode reads %.2f GB/token: bound %.1f tokens/s; reached %.0f%%\n",
              bw / 1e9, (double(weights) + kv) / 1e9, bound, 100 * median(tg) / bound);

  if (LONG > 0 && LONG + G + 8 <= hp.n_ctx_train) {
    const std::vector<int32_t> doc(prompt.begin(), prompt.begin() + LONG);
    for (const char* method : {"full", "ada-snapkv"}) {
      Session s(m, cp);
      std::vector<float> l;
      auto t = Clock::now();
      size_t kv_bytes = 0;
      if (std::string(method) == "full") {
        s.prefill(doc, false, l, nullptr, nullptr);
        kv_bytes = s.context().cache().bytes_used();
      } else {
        kv::CompressOptions o;
        o.method = kv::parse_method(method);
        o.budget_ratio = 0.2;
        kv_bytes = s.compress(doc, o, nullptr, nullptr).kv_bytes_kept;
      }
      const double t_pre = seconds_since(t);
      t = Clock::now();
      greedy(s, G);
      std::printf("long context %d tokens, %s: prefill %.2f s (%.0f tokens/s), KV %.1f MiB, decode %.1f tokens/s\n",
                  LONG, method, t_pre, LONG / t_pre, double(kv_bytes) / 1048576.0, G / seconds_since(t));
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd != "e2e" && cmd != "bench") {
    std::fprintf(stderr, "usage: gpu-check e2e --model M [--expect FILE] | bench --model M [...]\n");
    return 2;
  }
  const gpu::Status& st = gpu::status();
  if (!st.available) {
    std::printf("gpu-check: SKIP: %s\n", st.reason.c_str());
    return 0;
  }
  std::printf("gpu-check: %s\n", st.reason.c_str());
  try {
    const auto f = parse_flags(argc, argv, 2);
    if (!f.count("model")) fail("USAGE", "--model is required");
    return cmd == "e2e" ? run_e2e(f) : run_bench(f);
  } catch (const Error& e) {
    std::printf("gpu-check: error %s: %s\n", e.code().c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::printf("gpu-check: error: %s\n", e.what());
    return 1;
  }
}
