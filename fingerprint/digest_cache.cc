// The digest cache's file format and its place on disk: see digest_cache.h.
#include "fingerprint/digest_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <thread>

#include "core/atomic_write.h"
#include "core/syscall.h"
#include "fingerprint/sha256.h"

namespace sealrun {
namespace {

constexpr std::string_view kMagic = "SRDIGEST";
constexpr uint32_t kVersion = 1;
constexpr size_t kDigestBytes = 32;
// Shared-prefix length, suffix length, a 1-byte suffix, kind, mode, uid, gid, fs index, five 64-bit
// fields, digest.
constexpr size_t kMinEntryBytes = 4 + 4 + 1 + 1 + 4 * 4 + 5 * 8 + kDigestBytes;
// What follows an entry's path: kind, mode, uid, gid, fs index, five 64-bit fields, digest.
constexpr size_t kEntryTailBytes = 1 + 4 * 4 + 5 * 8 + kDigestBytes;
constexpr std::array<uint8_t, 32> kNoDigest{};

class Writer {
 public:
  void u8(uint8_t v) { le(v, 1); }
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void i64(int64_t v) { le(static_cast<uint64_t>(v), 8); }
  void bytes(std::string_view b) { out_.append(b); }
  void digest(const std::array<uint8_t, 32>& d) {
    out_.append(reinterpret_cast<const char*>(d.data()), d.size());
  }
  std::string& out() { return out_; }

 private:
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string out_;
};

// Bounds-checked little-endian reads; the first failure sticks and every later read fails too.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  std::optional<uint64_t> le(int n) {  // n: 1 to 8
    if (remaining() < static_cast<size_t>(n)) return std::nullopt;
    uint64_t v = 0;
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(&v, data_.data() + pos_, static_cast<size_t>(n));  // one load, not n shifts
    } else {
      for (int i = 0; i < n; ++i)
        v |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
    }
    pos_ += n;
    return v;
  }
  std::optional<std::string_view> take(size_t n) {
    if (remaining() < n) return std::nullopt;
    std::string_view v = data_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  size_t remaining() const { return data_.size() - pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

Error corrupt(const std::string& why) { return Error::make("corrupt digest cache: " + why); }

// From this size on the integrity digest is computed on a thread of its own (decode_digest_cache).
constexpr size_t kParallelCheckBytes = 1u << 20;

// Decodes everything between the magic and the integrity digest (decode_digest_cache checks both).
Result<DigestCacheContent> decode_checked_body(std::string_view body);

// The cache file's bytes, mapped read-only from the page cache: no buffer to fault in and no copy
// (reading /usr's 18 MB into fresh memory was a tenth of a cached walk's CPU). Only whole-file
// replacements (write_file_atomic's rename) ever change a cache, never the mapped inode in place;
// the size is fstat's, and the integrity digest at its end covers exactly those bytes.
class FileBytes {
 public:
  FileBytes() = default;
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  ~FileBytes() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  Status map(int fd, size_t size, const std::string& what) {
    if (size == 0) return ok_status();
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) return Error::from_errno(fmt::format("mmap {}", what));
    data_ = p;
    size_ = size;
    return ok_status();
  }
  std::string_view view() const { return std::string_view(static_cast<const char*>(data_), size_); }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

size_t shared_prefix(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// A directory of the cache's path must be owned by root or this euid and writable by no one else;
// an empty string means it is.
std::string untrusted_because(const struct stat& st, const std::string& what) {
  const uid_t euid = ::geteuid();
  if (st.st_uid != 0 && st.st_uid != euid)
    return fmt::format("{} is owned by uid {}, not by root or uid {}", what, st.st_uid, euid);
  if ((st.st_mode & 022) != 0)
    return fmt::format("{} is writable by group or others (mode {:04o})", what, st.st_mode & 07777);
  return {};
}

// Opens STATE/cache/digests without following symlinks below STATE, checking each directory
// (creating missing ones, 0700, when `create`). Failure carries the reason the cache is not used.
Result<UniqueFd> open_cache_dir(const std::string& state_dir, bool create) {
  auto state = SEALRUN_TRY(open_at(AT_FDCWD, state_dir, O_RDONLY | O_DIRECTORY));
  UniqueFd dir = std::move(state);
  std::string shown = state_dir;
  for (const char* name : {"cache", "digests"}) {
    shown += "/";
    shown += name;
    if (create && ::mkdirat(dir.get(), name, 0700) != 0 && errno != EEXIST)
      return Error::from_errno(fmt::format("create {}", shown));
    auto next = SEALRUN_TRY(open_at(dir.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
    auto st = SEALRUN_TRY(fstat_fd(next.get(), shown));
    if (std::string why = untrusted_because(st, "directory " + shown); !why.empty())
      return Error::make(why);
    dir = std::move(next);
  }
  return dir;
}

std::string cache_file_name(const std::string& root) { return sha256_hex(root) + ".sdc"; }

}  // namespace

// A slot: the entry's index + 1 in the low 32 bits (0: empty), the path hash's high bits above.
uint64_t slot_for(size_t hash, uint32_t index) {
  return (static_cast<uint64_t>(hash) & 0xffffffff00000000ull) | (index + 1u);
}

size_t DigestCacheContent::hash_of(std::string_view path) {
  return std::hash<std::string_view>{}(path);
}

void DigestCacheContent::prefetch_slot(size_t hash) const {
  if (!slots_.empty()) __builtin_prefetch(&slots_[hash & (slots_.size() - 1)]);
}

const CachedEntry* DigestCacheContent::find(std::string_view path) const {
  return find_hashed(path, slots_.empty() ? 0 : hash_of(path));
}

const CachedEntry* DigestCacheContent::find_hashed(std::string_view path, size_t hash) const {
  if (slots_.empty()) {
    auto it = std::lower_bound(entries.begin(), entries.end(), path,
                               [](const CachedEntry& e, std::string_view p) { return e.path < p; });
    if (it == entries.end() || it->path != path) return nullptr;
    return &*it;
  }
  const uint64_t tag = slot_for(hash, 0) & 0xffffffff00000000ull;
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const uint64_t slot = slots_[i];
    if (slot == 0) return nullptr;
    if ((slot & 0xffffffff00000000ull) != tag) continue;
    const CachedEntry& e = entries[(slot & 0xffffffffu) - 1];
    if (e.path == path) return &e;
  }
}

void DigestCacheContent::index() {
  size_t size = 16;
  while (size < 2 * entries.size()) size *= 2;  // at most half full: short probe sequences
  slots_.assign(size, 0);
  const size_t mask = size - 1;
  // In batches: hash a few paths and prefetch their slots, then insert them, so that the cache
  // misses of a batch overlap (the table of /usr is 4 MiB; one miss per entry dominated).
  constexpr uint32_t kBatch = 16;
  size_t hashes[kBatch];
  const auto count = static_cast<uint32_t>(entries.size());
  for (uint32_t base = 0; base < count; base += kBatch) {
    const uint32_t n = std::min(kBatch, count - base);
    for (uint32_t j = 0; j < n; ++j) {
      hashes[j] = hash_of(entries[base + j].path);
      __builtin_prefetch(&slots_[hashes[j] & mask], 1);
    }
    for (uint32_t j = 0; j < n; ++j) {
      size_t i = hashes[j] & mask;
      while (slots_[i] != 0) i = (i + 1) & mask;
      slots_[i] = slot_for(hashes[j], base + j);
    }
  }
}

std::string encode_digest_cache(const DigestCacheContent& content) {
  Writer w;
  w.bytes(kMagic);
  w.u32(kVersion);
  w.u32(static_cast<uint32_t>(content.root.size()));
  w.bytes(content.root);
  w.digest(content.tree_sha256);
  w.u32(static_cast<uint32_t>(content.filesystems.size()));
  for (const FsIdentity& fs : content.filesystems) {
    w.u64(fs.dev);
    w.u64(fs.fsid);
    w.u64(fs.type);
  }
  w.u64(content.entries.size());
  std::string_view previous;
  for (const CachedEntry& e : content.entries) {
    const size_t shared = shared_prefix(previous, e.path);
    w.u32(static_cast<uint32_t>(shared));
    w.u32(static_cast<uint32_t>(e.path.size() - shared));
    w.bytes(e.path.substr(shared));
    w.u8(static_cast<uint8_t>(e.kind));
    w.u32(e.mode);
    w.u32(e.uid);
    w.u32(e.gid);
    w.u32(e.fs);
    w.u64(e.stamp.ino);
    w.u64(e.stamp.size);
    w.i64(e.stamp.mtime_ns);
    w.i64(e.stamp.ctime_ns);
    w.i64(e.stamp.hashed_at_ns);
    w.digest(e.sha256);
    previous = e.path;
  }
  auto digest = [&] {
    Sha256 sha;
    sha.update(w.out());
    return sha.finish();
  }();
  w.digest(digest);
  return std::move(w.out());
}

Result<DigestCacheContent> decode_digest_cache(std::string_view bytes) {
  if (bytes.size() > kDigestCacheMaxBytes)
    return corrupt(
        fmt::format("{} bytes, more than the limit of {}", bytes.size(), kDigestCacheMaxBytes));
  if (bytes.size() < kMagic.size() + 4 + kDigestBytes) return corrupt("too short");
  if (bytes.substr(0, kMagic.size()) != kMagic) return corrupt("not a sealrun digest cache");
  const std::string_view body = bytes.substr(0, bytes.size() - kDigestBytes);
  const std::string_view stored_digest = bytes.substr(body.size());
  // The integrity digest is checked on a second thread while this one decodes (and indexes)
  // speculatively; nothing decoded is returned unless the digest matched. Loading is serial work
  // before a cached walk can start: for /usr (18 MB) the digest is about a fifth of it.
  bool intact = false;
  auto check = [&] {
    Sha256 sha;
    sha.update(body);
    const auto digest = sha.finish();
    intact = std::memcmp(digest.data(), stored_digest.data(), kDigestBytes) == 0;
  };
  std::thread checker;
  if (body.size() >= kParallelCheckBytes) {
    try {
      checker = std::thread(check);
    } catch (...) {  // no thread: check on this one
    }
  }
  if (!checker.joinable()) check();
  auto decoded = decode_checked_body(body);
  if (checker.joinable()) checker.join();
  if (!intact) return corrupt("its integrity digest does not match its content");
  return decoded;
}

namespace {

Result<DigestCacheContent> decode_checked_body(std::string_view body) {
  Reader r(body.substr(kMagic.size()));
  const auto version = r.le(4);
  if (version != kVersion)
    return corrupt(
        fmt::format("version {} (this sealrun reads version {})", version.value_or(0), kVersion));
  DigestCacheContent out;
  const auto root_len = r.le(4);
  if (!root_len || *root_len > kDigestCacheMaxRootBytes) return corrupt("bad root length");
  const auto root = r.take(*root_len);
  if (!root) return corrupt("truncated root");
  out.root = std::string(*root);
  const auto tree_sha256 = r.take(kDigestBytes);
  if (!tree_sha256) return corrupt("truncated tree digest");
  std::memcpy(out.tree_sha256.data(), tree_sha256->data(), kDigestBytes);
  const auto fs_count = r.le(4);
  if (!fs_count || *fs_count > kDigestCacheMaxFilesystems || *fs_count * 24 > r.remaining())
    return corrupt("bad file-system count");
  for (uint64_t i = 0; i < *fs_count; ++i) {
    FsIdentity fs;
    fs.dev = *r.le(8);
    fs.fsid = *r.le(8);
    fs.type = *r.le(8);
    out.filesystems.push_back(fs);
  }
  const auto count = r.le(8);
  if (!count || *count > r.remaining() / kMinEntryBytes) return corrupt("bad entry count");
  out.entries.reserve(*count);
  auto paths = std::make_shared<PathArena>();
  for (uint64_t i = 0; i < *count; ++i) {
    const std::string_view previous =
        out.entries.empty() ? std::string_view() : out.entries.back().path;
    const auto shared = r.le(4);
    const auto suffix_len = r.le(4);
    if (!shared || !suffix_len || *shared > previous.size() || *suffix_len == 0)
      return corrupt(fmt::format("bad path lengths in entry {}", i));
    const auto suffix = r.take(*suffix_len);
    if (!suffix) return corrupt(fmt::format("truncated entry {}", i));
    // Canonical and sorted: the shared prefix is the longest one, and the path grows.
    if (*shared < previous.size() && (*suffix)[0] == previous[*shared])
      return corrupt(fmt::format("non-canonical path in entry {}", i));
    if (*shared + suffix->size() > kDigestCacheMaxPathBytes ||
        paths->bytes() > kDigestCacheMaxDecodedBytes)
      return corrupt(fmt::format("entry {}: paths longer than the limits", i));
    CachedEntry e;
    e.path = paths->concat(previous.substr(0, *shared), *suffix);
    if (i > 0 && !(previous < e.path)) return corrupt(fmt::format("entry {} is out of order", i));
    if (e.path.find('\0') != std::string_view::npos)
      return corrupt(fmt::format("entry {} has a NUL byte in its path", i));
    // The fixed-size rest of the entry, bounds-checked once (this loop runs once per file).
    const auto fixed = r.take(kEntryTailBytes);
    if (!fixed) return corrupt(fmt::format("truncated entry {}", i));
    Reader t(*fixed);
    const auto kind = *t.le(1), mode = *t.le(4), uid = *t.le(4), gid = *t.le(4), fs = *t.le(4);
    const auto ino = *t.le(8), size = *t.le(8), mtime = *t.le(8), ctime = *t.le(8), at = *t.le(8);
    const auto sha256 = *t.take(kDigestBytes);
    if (kind > static_cast<uint8_t>(EntryKind::kSymlink) || mode > 07777)
      return corrupt(fmt::format("entry {} has kind {} and mode {:o}", i, kind, mode));
    if (fs >= out.filesystems.size())
      return corrupt(
          fmt::format("entry {} names file system {} of {}", i, fs, out.filesystems.size()));
    e.kind = static_cast<EntryKind>(kind);
    e.mode = static_cast<uint32_t>(mode);
    e.uid = static_cast<uint32_t>(uid);
    e.gid = static_cast<uint32_t>(gid);
    e.fs = static_cast<uint32_t>(fs);
    e.stamp = FileStamp{ino, size, static_cast<int64_t>(mtime), static_cast<int64_t>(ctime),
                        static_cast<int64_t>(at)};
    std::memcpy(e.sha256.data(), sha256.data(), kDigestBytes);
    if (e.kind != EntryKind::kFile && e.sha256 != kNoDigest)
      return corrupt(fmt::format("entry {} is not a file but has a digest", i));
    out.entries.push_back(e);
  }
  if (r.remaining() != 0)
    return corrupt(fmt::format("{} bytes after the last entry", r.remaining()));
  out.storage = std::move(paths);
  out.index();
  return out;
}

}  // namespace

std::string digest_cache_path(const std::string& state_dir, const std::string& root) {
  return fmt::format("{}/cache/digests/{}", state_dir, cache_file_name(root));
}

LoadedDigestCache load_digest_cache(const std::string& state_dir, const std::string& root) {
  LoadedDigestCache out;
  const std::string path = digest_cache_path(state_dir, root);
  auto dir = open_cache_dir(state_dir, false);
  if (!dir.ok()) {
    if (dir.error().err() == ENOENT) return out;  // no cache yet
    out.state = LoadedDigestCache::State::kIgnored;
    out.reason = dir.error().message();
    out.directory_trusted = false;
    return out;
  }
  const std::string name = cache_file_name(root);
  const int fd = retry_eintr([&] {
    return ::openat(dir->get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  });
  if (fd < 0) {
    if (errno == ENOENT) return out;
    out.state = LoadedDigestCache::State::kIgnored;
    out.reason = Error::from_errno(fmt::format("open {}", path)).message();
    return out;
  }
  UniqueFd file(fd);
  struct stat st {};
  std::string why;
  if (::fstat(file.get(), &st) != 0)
    why = Error::from_errno(fmt::format("fstat {}", path)).message();
  else if (!S_ISREG(st.st_mode))
    why = fmt::format("{} is not a regular file", path);
  else
    why = untrusted_because(st, path);
  if (why.empty() && static_cast<uint64_t>(st.st_size) > kDigestCacheMaxBytes)
    why = fmt::format("{} is {} bytes, more than the limit of {}", path, st.st_size,
                      kDigestCacheMaxBytes);
  if (!why.empty()) {
    out.state = LoadedDigestCache::State::kIgnored;
    out.reason = std::move(why);
    return out;
  }
  FileBytes bytes;
  if (Status read = bytes.map(file.get(), static_cast<size_t>(st.st_size), path); !read.ok()) {
    out.state = LoadedDigestCache::State::kIgnored;
    out.reason = read.error().message();
    return out;
  }
  auto content = decode_digest_cache(bytes.view());
  if (!content.ok()) {
    out.state = LoadedDigestCache::State::kCorrupt;
    out.reason = fmt::format("{}: {}", path, content.error().message());
    return out;
  }
  if (content->root != root) {
    out.state = LoadedDigestCache::State::kCorrupt;
    out.reason =
        fmt::format("{}: corrupt digest cache: it describes {}, not {}", path, content->root, root);
    return out;
  }
  out.state = LoadedDigestCache::State::kLoaded;
  out.content = std::move(*content);
  return out;
}

Status store_digest_cache(const std::string& state_dir, const DigestCacheContent& content) {
  std::string bytes = encode_digest_cache(content);
  if (bytes.size() > kDigestCacheMaxBytes)
    return Error::make(fmt::format("the cache of {} would take {} bytes, more than the limit of {}",
                                   content.root, bytes.size(), kDigestCacheMaxBytes));
  SEALRUN_TRY(open_cache_dir(state_dir, true));
  return write_file_atomic(digest_cache_path(state_dir, content.root), bytes, 0600);
}

}  // namespace sealrun
