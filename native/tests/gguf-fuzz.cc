// Random-mutation fuzzing of the GGUF reader and the model loader: takes valid GGUF files, corrupts them
// (byte flips, cuts, hostile 64-bit values at random offsets), parses each variant and, where that works,
// loads it as a model, tokenizes and runs two tokens. Any outcome but success or a folio::Error is a
// failure; build with -DFOLIO_SANITIZE=ON so memory errors abort.
//   gguf-fuzz ITERATIONS SEED FILE.gguf...
// The structured fuzzer (typed mutations of keys, lengths, counts and offsets, through the addon's entry
// points and the TypeScript header reader) is test/helpers/gguf-fuzz-run.ts: `npm run fuzz`, docs/fuzzing.md.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf.h"
#include "session/context.h"
#include "model/model.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s ITERATIONS SEED FILE.gguf...\n", argv[0]);
    return 2;
  }
  const long iterations = std::atol(argv[1]);
  std::mt19937_64 rng(std::strtoull(argv[2], nullptr, 10));
  const std::string tmp = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/folio-gguf-fuzz.gguf";
  long parsed = 0, loaded = 0, refused = 0;
  for (int f = 3; f < argc; f++) {
    std::ifstream in(argv[f], std::ios::binary);
    std::vector<uint8_t> orig((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (orig.empty()) {
      std::fprintf(stderr, "cannot read %s\n", argv[f]);
      return 2;
    }
    // Mutate mostly the header, where the structure is.
    size_t header = orig.size();
    try {
      header = folio::gguf::File::open(argv[f])->data_offset();
    } catch (...) {}
    for (long i = 0; i < iterations; i++) {
      std::vector<uint8_t> b = orig;
      const int kind = int(rng() % 4);
      const size_t span = std::max<size_t>(1, std::min(header, b.size()));
      if (kind == 0) {  // flip a few bytes
        for (int k = 0, n = 1 + int(rng() % 8); k < n; k++) b[rng() % span] = uint8_t(rng());
      } else if (kind == 1) {  // cut the file
        b.resize(rng() % b.size());
      } else {  // write a hostile 64-bit value somewhere in the header
        static const uint64_t hostile[] = {0,
                                           1,
                                           0xffffffffffffffffull,
                                           0x7fffffffffffffffull,
                                           0x8000000000000000ull,
                                           0xffffffffull,
                                           0x100000000ull,
                                           1ull << 40,
                                           1ull << 62};
        uint64_t v = kind == 2 ? hostile[rng() % (sizeof(hostile) / sizeof(hostile[0]))] : rng();
        size_t at = rng() % span;
        std::memcpy(b.data() + at, &v, std::min<size_t>(8, b.size() - at));
      }
      std::ofstream(tmp, std::ios::binary | std::ios::trunc)
          .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
      try {
        auto file = folio::gguf::File::open(tmp);
        // Touch what a model loader would touch.
        for (const auto& t : file->tensors()) {
          volatile uint8_t x = t.n_bytes ? t.data[t.n_bytes - 1] : 0;
          (void)x;
        }
        parsed++;
        auto model = folio::Model::load(tmp);
        auto ids = model->vocab().tokenize("Once upon a time, a \xf0\x9f\x98\x80 <s>", true, true);
        for (int32_t id : ids) model->vocab().token_to_piece(id, true);
        folio::ContextParams cp;
        cp.n_ctx = 8;
        cp.n_threads = 1;
        folio::Context ctx(*model, cp);
        std::vector<float> logits;
        ctx.eval({0, 1}, true, logits);
        loaded++;
      } catch (const folio::Error&) { refused++; }
    }
  }
  std::remove(tmp.c_str());
  std::printf(
      "gguf-fuzz: %ld variants refused with an error, %ld parsed, %ld of those loaded and ran as models; "
      "no crash\n",
      refused, parsed, loaded);
  return 0;
}
