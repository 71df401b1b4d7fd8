// The digest cache's file format and its place on disk: see digest_cache.h.
#include "fingerprint/digest_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "core/atomic_write.h"
#include "core/syscall.h"
#include "fingerprint/sha256.h"

namespace sealrun {
namespace {

constexpr std::string_view kMagic = "SRDIGEST";
constexpr uint32_t kVersion = 1;
constexpr size_t kDigestBytes = 32;
// Shared-prefix length, suffix length (at least 1 byte), fs index, five 64-bit fields, digest.
constexpr size_t kMinFileBytes = 4 + 4 + 1 + 4 + 5 * 8 + kDigestBytes;

class Writer {
 public:
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void i64(int64_t v) { le(static_cast<uint64_t>(v), 8); }
  void bytes(std::string_view b) { out_.append(b); }
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
  std::optional<uint64_t> le(int n) {
    if (remaining() < static_cast<size_t>(n)) return std::nullopt;
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
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
    return fmt::format("{} is writable by group or others (mode {:04o})", what,
                       st.st_mode & 07777);
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

constexpr uint32_t kEmptySlot = UINT32_MAX;

const CachedFile* DigestCacheContent::find(std::string_view path) const {
  if (slots_.empty()) {
    auto it = std::lower_bound(files.begin(), files.end(), path,
                               [](const CachedFile& f, std::string_view p) { return f.path < p; });
    if (it == files.end() || it->path != path) return nullptr;
    return &*it;
  }
  const size_t mask = slots_.size() - 1;
  for (size_t i = std::hash<std::string_view>{}(path) & mask;; i = (i + 1) & mask) {
    const uint32_t slot = slots_[i];
    if (slot == kEmptySlot) return nullptr;
    if (files[slot].path == path) return &files[slot];
  }
}

void DigestCacheContent::index() {
  size_t size = 16;
  while (size < 2 * files.size()) size *= 2;  // at most half full: short probe sequences
  slots_.assign(size, kEmptySlot);
  const size_t mask = size - 1;
  for (uint32_t k = 0; k < files.size(); ++k) {
    size_t i = std::hash<std::string_view>{}(files[k].path) & mask;
    while (slots_[i] != kEmptySlot) i = (i + 1) & mask;
    slots_[i] = k;
  }
}

std::string encode_digest_cache(const DigestCacheContent& content) {
  Writer w;
  w.bytes(kMagic);
  w.u32(kVersion);
  w.u32(static_cast<uint32_t>(content.root.size()));
  w.bytes(content.root);
  w.u32(static_cast<uint32_t>(content.filesystems.size()));
  for (const FsIdentity& fs : content.filesystems) {
    w.u64(fs.dev);
    w.u64(fs.fsid);
    w.u64(fs.type);
  }
  w.u64(content.files.size());
  std::string_view previous;
  for (const CachedFile& f : content.files) {
    const size_t shared = shared_prefix(previous, f.path);
    w.u32(static_cast<uint32_t>(shared));
    w.u32(static_cast<uint32_t>(f.path.size() - shared));
    w.bytes(std::string_view(f.path).substr(shared));
    w.u32(f.fs);
    w.u64(f.stamp.ino);
    w.u64(f.stamp.size);
    w.i64(f.stamp.mtime_ns);
    w.i64(f.stamp.ctime_ns);
    w.i64(f.stamp.hashed_at_ns);
    w.bytes(std::string_view(reinterpret_cast<const char*>(f.sha256.data()), f.sha256.size()));
    previous = f.path;
  }
  auto digest = [&] {
    Sha256 sha;
    sha.update(w.out());
    return sha.finish();
  }();
  w.bytes(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
  return std::move(w.out());
}

Result<DigestCacheContent> decode_digest_cache(std::string_view bytes) {
  if (bytes.size() > kDigestCacheMaxBytes)
    return corrupt(fmt::format("{} bytes, more than the limit of {}", bytes.size(),
                               kDigestCacheMaxBytes));
  if (bytes.size() < kMagic.size() + 4 + kDigestBytes) return corrupt("too short");
  if (bytes.substr(0, kMagic.size()) != kMagic) return corrupt("not a sealrun digest cache");
  const std::string_view body = bytes.substr(0, bytes.size() - kDigestBytes);
  Sha256 sha;
  sha.update(body);
  const auto digest = sha.finish();
  if (std::memcmp(digest.data(), bytes.data() + body.size(), kDigestBytes) != 0)
    return corrupt("its integrity digest does not match its content");

  Reader r(body.substr(kMagic.size()));
  const auto version = r.le(4);
  if (version != kVersion)
    return corrupt(fmt::format("version {} (this sealrun reads version {})",
                               version.value_or(0), kVersion));
  DigestCacheContent out;
  const auto root_len = r.le(4);
  if (!root_len || *root_len > kDigestCacheMaxRootBytes) return corrupt("bad root length");
  const auto root = r.take(*root_len);
  if (!root) return corrupt("truncated root");
  out.root = std::string(*root);
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
  const auto file_count = r.le(8);
  if (!file_count || *file_count > r.remaining() / kMinFileBytes)
    return corrupt("bad file count");
  out.files.reserve(*file_count);
  auto paths = std::make_shared<PathArena>();
  for (uint64_t i = 0; i < *file_count; ++i) {
    const std::string_view previous =
        out.files.empty() ? std::string_view() : out.files.back().path;
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
    CachedFile f;
    f.path = paths->concat(previous.substr(0, *shared), *suffix);
    if (i > 0 && !(previous < f.path)) return corrupt(fmt::format("entry {} is out of order", i));
    if (f.path.find('\0') != std::string_view::npos)
      return corrupt(fmt::format("entry {} has a NUL byte in its path", i));
    const auto fs = r.le(4);
    const auto ino = r.le(8), size = r.le(8), mtime = r.le(8), ctime = r.le(8), at = r.le(8);
    const auto sha256 = r.take(kDigestBytes);
    if (!fs || !ino || !size || !mtime || !ctime || !at || !sha256)
      return corrupt(fmt::format("truncated entry {}", i));
    if (*fs >= out.filesystems.size())
      return corrupt(fmt::format("entry {} names file system {} of {}", i, *fs,
                                 out.filesystems.size()));
    f.fs = static_cast<uint32_t>(*fs);
    f.stamp = FileStamp{*ino, *size, static_cast<int64_t>(*mtime), static_cast<int64_t>(*ctime),
                        static_cast<int64_t>(*at)};
    std::memcpy(f.sha256.data(), sha256->data(), kDigestBytes);
    out.files.push_back(f);
  }
  out.storage = std::move(paths);
  out.index();
  if (r.remaining() != 0) return corrupt(fmt::format("{} bytes after the last entry", r.remaining()));
  return out;
}

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
  auto bytes = read_up_to(file.get(), kDigestCacheMaxBytes + 1, path);
  if (!bytes.ok()) {
    out.state = LoadedDigestCache::State::kIgnored;
    out.reason = bytes.error().message();
    return out;
  }
  auto content = decode_digest_cache(*bytes);
  if (!content.ok()) {
    out.state = LoadedDigestCache::State::kCorrupt;
    out.reason = fmt::format("{}: {}", path, content.error().message());
    return out;
  }
  if (content->root != root) {
    out.state = LoadedDigestCache::State::kCorrupt;
    out.reason = fmt::format("{}: corrupt digest cache: it describes {}, not {}", path,
                             content->root, root);
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
