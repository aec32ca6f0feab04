// Saved sessions. Layout (little-endian), every section counted so a reader can check it against the file:
//   "FOLIOKV\0"  u32 version  u64 model fingerprint  u64 model file size
//   u32 kv type  u32 n_layer  u32 n_head_kv  u32 head_dim  u32 head_dim_v  i32 n_past
//   u32 n_tokens  i32 tokens[n_tokens]   (n_tokens >= n_past: more after a re-based read)
//   u32 n_logits  f32 logits[n_logits]
//   u32 meta_len  meta bytes
//   per layer, per KV head: i32 len, i32 pos[len], K entries [len], V entries [len]
//   u8 scored; when 1, per layer, per KV head: f32 score[len]   (version 2 on: the read's kept scores,
//                                                                 kv::KeptScores, +inf for an unscored entry)
//   u64 checksum of every byte before it
// The file is written to a temporary name, flushed to disk, then renamed over the target, so a crash
// leaves either the old file or the new one.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/hash.h"
#include "core/mapped-file.h"
#include "session/session.h"

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <io.h>
#include <process.h>
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace folio {

namespace {

constexpr char kMagic[8] = {'F', 'O', 'L', 'I', 'O', 'K', 'V', '\0'};
// 2 added the kept scores after the entries; 3 the keys' and values' types apart and the rotation (one type
// before, both the same).
constexpr uint32_t kVersion = 3;
constexpr uint32_t kOldestVersion = 1;

class Writer {
 public:
  explicit Writer(const std::string& path) : path_(path) {
#ifdef _WIN32
    f_ = std::fopen(path.c_str(), "wb");
#else
    // The saved cache holds the document's keys and values: readable by the user only, whatever the umask.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::fchmod(fd, 0600);  // a leftover temporary file of the same name keeps its old mode through O_CREAT
      f_ = ::fdopen(fd, "wb");
      if (!f_) ::close(fd);
    }
#endif
    if (!f_) fail("SESSION_FILE_WRITE", strfmt("cannot write %s: %s", path.c_str(), std::strerror(errno)));
  }
  ~Writer() {
    if (f_) std::fclose(f_);
  }
  void bytes(const void* p, size_t n) {
    if (n == 0) return;
    hash_.update(p, n);
    if (std::fwrite(p, 1, n, f_) != n)
      fail("SESSION_FILE_WRITE", strfmt("cannot write %s: %s", path_.c_str(), std::strerror(errno)));
  }
  template <typename T>
  void value(T v) {
    bytes(&v, sizeof v);
  }
  // Appends the checksum and makes the file durable.
  void finish() {
    const uint64_t sum = hash_.digest();
    if (std::fwrite(&sum, 1, 8, f_) != 8 || std::fflush(f_) != 0)
      fail("SESSION_FILE_WRITE", strfmt("cannot write %s: %s", path_.c_str(), std::strerror(errno)));
#ifdef _WIN32
    _commit(_fileno(f_));
#else
    fsync(fileno(f_));
#endif
    std::fclose(f_);
    f_ = nullptr;
  }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  Hash64 hash_;
};

class Reader {
 public:
  Reader(const uint8_t* p, size_t n, const std::string& path) : p_(p), n_(n), path_(path) {}
  const uint8_t* take(size_t n, const char* what) {
    if (n > n_ - pos_) fail("SESSION_FILE_CORRUPT", strfmt("%s is damaged: it ends inside %s", path_.c_str(), what));
    const uint8_t* p = p_ + pos_;
    pos_ += n;
    return p;
  }
  template <typename T>
  T value(const char* what) {
    T v;
    std::memcpy(&v, take(sizeof v, what), sizeof v);
    return v;
  }
  // A count of elements of `elem` bytes each that must fit in what is left of the file.
  uint32_t count(size_t elem, const char* what) {
    const uint32_t c = value<uint32_t>(what);
    if (size_t(c) * elem > n_ - pos_)
      fail("SESSION_FILE_CORRUPT", strfmt("%s is damaged: %s is larger than the file", path_.c_str(), what));
    return c;
  }
  size_t pos() const { return pos_; }

 private:
  const uint8_t* p_;
  size_t n_, pos_ = 0;
  const std::string& path_;
};

void replace_file(const std::string& from, const std::string& to) {
#ifdef _WIN32
  if (!MoveFileExA(from.c_str(), to.c_str(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
    fail("SESSION_FILE_WRITE", strfmt("cannot move %s into place (Windows error %lu)", to.c_str(), GetLastError()));
#else
  if (std::rename(from.c_str(), to.c_str()) != 0)
    fail("SESSION_FILE_WRITE", strfmt("cannot move %s into place: %s", to.c_str(), std::strerror(errno)));
#endif
}

}  // namespace

void Session::save(const std::string& path, const std::string& meta) const {
#ifdef _WIN32
  const std::string tmp = path + ".tmp-" + std::to_string(_getpid());
#else
  const std::string tmp = path + ".tmp-" + std::to_string(getpid());
#endif
  try {
    Writer w(tmp);
    const FlatKvCache& c = ctx_->cache();
    w.bytes(kMagic, 8);
    w.value<uint32_t>(kVersion);
    w.value<uint64_t>(model_->fingerprint());
    w.value<uint64_t>(model_->file().file_size());
    w.value<uint32_t>(uint32_t(c.format().k));
    w.value<uint32_t>(uint32_t(c.format().v));
    w.value<uint32_t>(uint32_t(c.format().rotate_k()) | uint32_t(c.format().rotate_v()) << 1);
    w.value<uint32_t>(uint32_t(c.n_layer()));
    w.value<uint32_t>(uint32_t(c.n_head_kv()));
    w.value<uint32_t>(uint32_t(c.head_dim()));
    w.value<uint32_t>(uint32_t(c.head_dim_v()));
    w.value<int32_t>(ctx_->n_past());
    w.value<uint32_t>(uint32_t(tokens_.size()));
    w.bytes(tokens_.data(), tokens_.size() * 4);
    w.value<uint32_t>(uint32_t(last_logits_.size()));
    w.bytes(last_logits_.data(), last_logits_.size() * 4);
    w.value<uint32_t>(uint32_t(meta.size()));
    w.bytes(meta.data(), meta.size());
    for (int l = 0; l < c.n_layer(); l++) {
      const LayerKv& L = c.layer(l);
      for (int h = 0; h < c.n_head_kv(); h++) {
        const HeadSegment& s = L.heads[size_t(h)];
        w.value<int32_t>(s.len);
        w.bytes(L.positions(h), size_t(s.len) * 4);
        w.bytes(L.k.data() + size_t(s.offset) * c.k_entry_bytes(), size_t(s.len) * c.k_entry_bytes());
        w.bytes(L.v.data() + size_t(s.offset) * c.v_entry_bytes(), size_t(s.len) * c.v_entry_bytes());
      }
    }
    const kv::KeptScores& scores = ctx_->kept_scores();
    w.value<uint8_t>(scores.empty() ? 0 : 1);
    std::vector<float> row;
    for (int l = 0; l < c.n_layer() && !scores.empty(); l++)
      for (int h = 0; h < c.n_head_kv(); h++) {
        // A score for every entry: those the row has none for (appended after the read) unscored.
        row = scores[size_t(l)][size_t(h)];
        row.resize(size_t(c.len(l, h)), std::numeric_limits<float>::infinity());
        w.bytes(row.data(), row.size() * 4);
      }
    w.finish();
    replace_file(tmp, path);
  } catch (...) {
    std::remove(tmp.c_str());  // whatever was there before stays untouched
    throw;
  }
}

SavedSession read_saved_session(const Model& model, const std::string& path, int32_t n_ctx) {
  MappedFile file(path);
  const uint8_t* data = file.data();
  const size_t size = file.size();
  if (size < 8 || std::memcmp(data, kMagic, 8) != 0) fail("SESSION_FILE_FORMAT", path + " is not a Folio session file");
  if (size < 8 + 4 + 8) fail("SESSION_FILE_CORRUPT", path + " is damaged: it is truncated");
  uint64_t stored;
  std::memcpy(&stored, data + size - 8, 8);
  Hash64 h;
  h.update(data, size - 8);
  Reader r(data, size - 8, path);
  r.take(8, "the magic");
  const uint32_t version = r.value<uint32_t>("the version");
  if (version < kOldestVersion || version > kVersion)
    fail("SESSION_FILE_VERSION",
         strfmt("%s was written by another version of Folio (format %u, this one reads %u to %u)", path.c_str(),
                version, kOldestVersion, kVersion));
  if (h.digest() != stored)
    fail("SESSION_FILE_CORRUPT", path + " is damaged: its checksum does not match its contents");

  const uint64_t fingerprint = r.value<uint64_t>("the model fingerprint");
  r.value<uint64_t>("the model size");
  if (fingerprint != model.fingerprint())
    fail("SESSION_FILE_MODEL", path + " was saved with another model file: it has to be rebuilt for this one");
  const HParams& hp = model.hparams();
  const uint32_t type_k = r.value<uint32_t>("the cache type");
  const uint32_t type_v = version >= 3 ? r.value<uint32_t>("the values' type") : type_k;
  const uint32_t rotation = version >= 3 ? r.value<uint32_t>("the rotation") : 0;
  const uint32_t n_layer = r.value<uint32_t>("the layer count");
  const uint32_t n_head_kv = r.value<uint32_t>("the head count");
  const uint32_t head_dim = r.value<uint32_t>("the head size");
  const uint32_t head_dim_v = r.value<uint32_t>("the value head size");
  // Rotation flags: bit 0 the keys, bit 1 the values; only a quantized type is rotated, and both or none.
  const bool rotated = rotation != 0;
  const KvFormat format{KvType(type_k), KvType(type_v), rotated};
  if (!kv_type_valid(type_k) || !kv_type_valid(type_v) || rotation > 3 ||
      rotation != (uint32_t(format.rotate_k()) | uint32_t(format.rotate_v()) << 1))
    fail("SESSION_FILE_CORRUPT", path + " is damaged: its cache type is not one this version of Folio knows");
  if (n_layer != uint32_t(hp.n_layer) || n_head_kv != uint32_t(hp.n_head_kv) || head_dim != uint32_t(hp.head_dim) ||
      head_dim_v != uint32_t(hp.head_dim_v))
    fail("SESSION_FILE_MODEL", path + " does not match the model's cache layout");
  SavedSession s;
  s.n_past = r.value<int32_t>("the position");
  if (s.n_past < 0 || (n_ctx > 0 && s.n_past > n_ctx))
    fail("SESSION_FILE_CONTEXT",
         strfmt("%s holds %d positions, more than this context's %d", path.c_str(), s.n_past, n_ctx));
  const uint32_t n_tokens = r.count(4, "the token list");
  s.tokens.resize(n_tokens);
  std::memcpy(s.tokens.data(), r.take(size_t(n_tokens) * 4, "the token list"), size_t(n_tokens) * 4);
  const uint32_t n_logits = r.count(4, "the logits");
  // As many tokens as positions, or more after a re-based read (docs/compression.md).
  if (n_tokens < uint32_t(s.n_past) || (n_logits != 0 && n_logits != uint32_t(hp.n_vocab)))
    fail("SESSION_FILE_CORRUPT", path + " is damaged: its token list, position and logits disagree");
  s.logits.resize(n_logits);
  std::memcpy(s.logits.data(), r.take(size_t(n_logits) * 4, "the logits"), size_t(n_logits) * 4);
  const uint32_t meta_len = r.count(1, "the metadata");
  const uint8_t* m = r.take(meta_len, "the metadata");
  s.meta.assign(reinterpret_cast<const char*>(m), meta_len);

  s.cache = FlatKvCache{int(n_layer), int(n_head_kv), int(head_dim), int(head_dim_v), format};
  FlatKvCache& cache = s.cache;
  const size_t kb = cache.k_entry_bytes(), vb = cache.v_entry_bytes();
  for (int l = 0; l < int(n_layer); l++) {
    // Read the head lengths and data positions first, then lay the layer out once.
    std::vector<int32_t> lens(n_head_kv);
    std::vector<const uint8_t*> at(n_head_kv);
    for (uint32_t g = 0; g < n_head_kv; g++) {
      const int32_t len = r.value<int32_t>("a head length");
      if (len < 0 || len > s.n_past)
        fail("SESSION_FILE_CORRUPT", path + " is damaged: a head holds more entries than positions");
      lens[g] = len;
      at[g] = r.take(size_t(len) * (4 + kb + vb), "the cache entries");
    }
    for (uint32_t g = 0; g < n_head_kv; g++) {
      const int32_t* pos = reinterpret_cast<const int32_t*>(at[g]);
      for (int32_t j = 0; j < lens[g]; j++)
        if (pos[j] < 0 || pos[j] >= s.n_past || (j && pos[j] <= pos[j - 1]))
          fail("SESSION_FILE_CORRUPT", path + " is damaged: cache positions out of order");
    }
    std::vector<int32_t> caps(n_head_kv);
    const int32_t spare = n_ctx > 0 ? std::min(FlatKvCache::kSpare, n_ctx - s.n_past) : FlatKvCache::kSpare;
    for (uint32_t g = 0; g < n_head_kv; g++) caps[g] = lens[g] + spare;
    cache.reserve_heads(l, caps);
    for (uint32_t g = 0; g < n_head_kv; g++) {
      const uint8_t* p = at[g];
      const int32_t len = lens[g];
      cache.append_raw(l, int(g), reinterpret_cast<const int32_t*>(p), p + size_t(len) * 4, p + size_t(len) * (4 + kb),
                       len);
    }
  }
  if (version >= 2 && r.value<uint8_t>("the scores' flag") != 0) {
    s.scores.assign(n_layer, std::vector<std::vector<float>>(n_head_kv));
    for (int l = 0; l < int(n_layer); l++)
      for (uint32_t g = 0; g < n_head_kv; g++) {
        std::vector<float>& row = s.scores[size_t(l)][g];
        row.resize(size_t(cache.len(l, int(g))));
        std::memcpy(row.data(), r.take(row.size() * 4, "the kept scores"), row.size() * 4);
        for (float x : row)
          if (std::isnan(x)) fail("SESSION_FILE_CORRUPT", path + " is damaged: a kept score is not a number");
      }
  }
  if (r.pos() != size - 8) fail("SESSION_FILE_CORRUPT", path + " is damaged: it has trailing bytes");
  return s;
}

std::unique_ptr<Session> Session::load(std::shared_ptr<const Model> model, const std::string& path,
                                       const ContextParams& params, std::string* meta) {
  // The context's positions are known once it is made (params.n_ctx 0: the model's default), and it is made
  // with the saved cache's element type: the file is checked against them after.
  SavedSession saved = read_saved_session(*model, path, 0);
  ContextParams cp = params;
  cp.kv = saved.cache.format();  // the saved cache decides its format
  auto s = std::make_unique<Session>(model, cp);
  if (saved.n_past > s->ctx_->n_ctx())
    fail("SESSION_FILE_CONTEXT",
         strfmt("%s holds %d positions, more than this context's %d", path.c_str(), saved.n_past, s->ctx_->n_ctx()));
  s->tokens_ = std::move(saved.tokens);
  s->last_logits_ = std::move(saved.logits);
  if (meta) *meta = std::move(saved.meta);
  s->ctx_->restore(std::move(saved.cache), saved.n_past, std::move(saved.scores));
  return s;
}

int32_t Session::append_saved(const std::string& path, int32_t from, int32_t to, bool pack) {
  SavedSession saved = read_saved_session(*model_, path, ctx_->n_ctx());
  // Positions must be tokens: a re-based (or packed) read's entries no longer say which token they are.
  if (saved.tokens.size() != size_t(saved.n_past))
    fail("NOT_SUPPORTED", path +
                              " was read with re-based (or packed) positions: read the document again at its "
                              "own positions to put it beside others");
  if (to < 0) to = saved.n_past;
  if (from < 0 || to < from || to > saved.n_past)
    fail("INVALID_ARGUMENT",
         strfmt("positions %d to %d are not within the %d positions of %s", from, to, saved.n_past, path.c_str()));
  const int32_t before = ctx_->n_past();
  const int32_t n_past = ctx_->append_part(saved.cache, from, to, pack, &saved.scores);
  // Positions count the last n_past tokens (as after compress_span): packed, the span's last ones.
  tokens_.insert(tokens_.end(), saved.tokens.begin() + (to - (n_past - before)), saved.tokens.begin() + to);
  last_logits_.clear();  // the next prefill computes them
  return n_past;
}

}  // namespace folio
