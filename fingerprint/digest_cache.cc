// SPDX-License-Identifier: Apache-2.0
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
#include <unordered_map>

#include "core/atomic_write.h"
#include "core/syscall.h"
#include "fingerprint/sha256.h"

namespace sealrun {
namespace {

constexpr std::string_view kMagic = "SRDIGEST";
constexpr uint32_t kVersion = 3;
constexpr size_t kDigestBytes = 32;
constexpr std::array<uint8_t, 32> kNoDigest{};

size_t padded8(size_t n) { return (n + 7) & ~size_t{7}; }

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

// Bounds-checked little-endian reads of the header; the first failure sticks.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  std::optional<uint64_t> le(int n) {  // n: 1 to 8
    if (remaining() < static_cast<size_t>(n)) return std::nullopt;
    uint64_t v = 0;
    for (int i = 0; i < n; ++i)
      v |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }
  std::optional<std::string_view> take(size_t n) {
    if (remaining() < n) return std::nullopt;
    std::string_view v = data_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  size_t position() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

Error corrupt(const std::string& why) { return Error::make("corrupt digest cache: " + why); }

// From this size on the integrity digest is computed on a thread of its own (decode_digest_cache).
constexpr size_t kParallelCheckBytes = 1u << 20;

// Checks the structure of everything between the magic and the integrity digest
// (decode_digest_cache checks both) and points `out`, `paths` and `slots` into it.
Status check_body(std::string_view body, DigestCacheContent& out, std::string_view& paths,
                  std::span<const uint64_t>& slots, std::span<const uint32_t>& children);

// The cache file's bytes, mapped read-only from the page cache: the loaded cache is used where it
// lies, with nothing decoded or copied. Only whole-file replacements (write_file_atomic's rename)
// ever change a cache, never the mapped inode in place, so the mapping stays what was checked for
// as long as the loaded cache keeps it; the size is fstat's, and the integrity digest at its end
// covers exactly those bytes.
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

uint64_t digest_cache_path_hash(std::string_view path) {
  // Eight bytes at a time, each step a multiply and a shift (as in splitmix64's finaliser): paths
  // of /usr average ~45 bytes, and each lookup hashes one.
  uint64_t h = 0x9e3779b97f4a7c15ull ^ path.size();
  const char* p = path.data();
  size_t n = path.size();
  auto mix = [](uint64_t x) {
    x *= 0xbf58476d1ce4e5b9ull;
    return x ^ (x >> 31);
  };
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t k = 0;
    std::memcpy(&k, p, 8);
    if constexpr (std::endian::native == std::endian::big) k = __builtin_bswap64(k);
    h = mix(h ^ k);
  }
  uint64_t tail = 0;
  for (size_t i = 0; i < n; ++i)
    tail |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  h = mix(h ^ tail ^ (uint64_t{n} << 59));
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 29);
}

namespace {

// A slot: the entry's index + 1 in the low 32 bits (0: empty), the path hash's high bits above.
uint64_t slot_tag(uint64_t hash_or_slot) { return hash_or_slot & 0xffffffff00000000ull; }
uint64_t slot_entry_number(uint64_t slot) { return slot & 0xffffffffu; }  // index + 1; 0: empty
uint64_t slot_for(uint64_t hash, uint32_t index) {
  return slot_tag(hash) | (static_cast<uint64_t>(index) + 1u);
}

// Whether `path` is `dir` ("." for the root) plus one more name.
bool is_child_path(std::string_view path, std::string_view dir) {
  const size_t slash = path.rfind('/');
  if (dir == ".") return !path.empty() && slash == std::string_view::npos;
  return slash == dir.size() && path.substr(0, slash) == dir && slash + 1 < path.size();
}

// Slots for `count` entries: a power of two, at most two thirds full (short probe sequences),
// and never full (a lookup always meets an empty slot).
size_t slot_count_for(size_t count) {
  size_t size = 16;
  while (size < count + count / 2 + 1) size *= 2;
  return size;
}

}  // namespace

void DigestCacheContent::prefetch_slot(uint64_t hash) const {
  if (!slots_.empty()) __builtin_prefetch(&slots_[hash & (slots_.size() - 1)]);
}

void DigestCacheContent::prefetch_entry(uint64_t hash) const {
  if (slots_.empty()) return;
  const uint64_t slot = slots_[hash & (slots_.size() - 1)];
  const uint64_t number = slot_entry_number(slot);
  if (slot_tag(slot) != slot_tag(hash) || number == 0 || number > entries.size()) return;
  prefetch_cached_entry(&entries[number - 1]);
}

const CachedEntry* DigestCacheContent::find(std::string_view path) const {
  return find_hashed(path, hash_of(path));
}

const CachedEntry* DigestCacheContent::find_hashed(std::string_view path, uint64_t hash) const {
  if (slots_.empty()) return nullptr;
  const uint64_t tag = slot_tag(hash);
  const size_t mask = slots_.size() - 1;
  // At most one round: check_body() makes sure the table has an empty slot, and every slot names
  // an entry; the bound is for the reader's peace of mind.
  for (size_t i = hash & mask, probes = 0; probes < slots_.size(); i = (i + 1) & mask, ++probes) {
    const uint64_t slot = slots_[i];
    if (slot == 0) return nullptr;
    if (slot_tag(slot) != tag) continue;
    const CachedEntry& e = entries[slot_entry_number(slot) - 1];
    if (this->path(e) == path) return &e;
  }
  return nullptr;
}

namespace {

// The children table of the entries to be stored: each directory's children (indices into
// `kept`, increasing), for the directories whose every child is stored (kListed in the input,
// and none of its children among `left_out`: not stored, or with a path over the limit).
struct ChildTable {
  std::vector<bool> listed;
  std::vector<uint32_t> first, count;  // per entry
  std::vector<uint32_t> indices;
};
std::string_view parent_path(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view(".") : path.substr(0, slash);
}

ChildTable child_table(const std::vector<const DigestCacheInput::Entry*>& kept,
                       const std::vector<std::string_view>& left_out) {
  ChildTable t;
  const size_t n = kept.size();
  t.listed.assign(n, false);
  t.first.assign(n, 0);
  t.count.assign(n, 0);
  std::unordered_map<std::string_view, uint32_t> index;
  index.reserve(n);
  std::vector<int64_t> parent(n, -1);
  for (uint32_t i = 0; i < n; ++i) {
    const DigestCacheInput::Entry& e = *kept[i];
    index.emplace(e.path, i);
    t.listed[i] =
        e.record.kind == EntryKind::kDirectory && (e.record.flags & CachedEntry::kListed) != 0;
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (kept[i]->path == ".") continue;
    const auto it = index.find(parent_path(kept[i]->path));
    if (it != index.end()) parent[i] = it->second;
  }
  // A listed directory with a child that is not stored is listed no more.
  for (std::string_view path : left_out) {
    const auto it = index.find(parent_path(path));
    if (it != index.end()) t.listed[it->second] = false;
  }
  for (uint32_t i = 0; i < n; ++i)
    if (parent[i] >= 0) ++t.count[static_cast<size_t>(parent[i])];
  uint32_t next = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (!t.listed[i]) {
      t.count[i] = 0;
      continue;
    }
    t.first[i] = next;
    next += t.count[i];
  }
  t.indices.assign(next, 0);
  std::vector<uint32_t> filled(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    if (parent[i] < 0) continue;
    const auto p = static_cast<size_t>(parent[i]);
    if (t.listed[p]) t.indices[t.first[p] + filled[p]++] = i;
  }
  return t;
}

}  // namespace

DigestCacheInput input_of(const DigestCacheContent& content) {
  DigestCacheInput out;
  out.root = content.root;
  out.tree_sha256 = content.tree_sha256;
  out.filesystems = content.filesystems;
  out.entries.reserve(content.entries.size());
  for (const CachedEntry& e : content.entries) out.entries.push_back({content.path(e), e});
  return out;
}

std::string encode_digest_cache(const DigestCacheInput& content) {
  std::vector<const DigestCacheInput::Entry*> kept;
  kept.reserve(content.entries.size());
  std::vector<std::string_view> left_out = content.left_out;
  size_t path_bytes = 0;
  for (const auto& e : content.entries) {
    if (e.path.size() > kDigestCacheMaxPathBytes) {
      left_out.push_back(e.path);
      continue;
    }
    kept.push_back(&e);
    path_bytes += e.path.size();
  }
  const size_t slots = slot_count_for(kept.size());
  const ChildTable children = child_table(kept, left_out);
  Writer w;
  w.bytes(kMagic);
  w.u32(kVersion);
  w.u32(static_cast<uint32_t>(content.root.size()));
  w.bytes(content.root);
  w.bytes(std::string(padded8(content.root.size()) - content.root.size(), '\0'));
  w.digest(content.tree_sha256);
  w.u32(static_cast<uint32_t>(content.filesystems.size()));
  w.u32(0);
  for (const FsIdentity& fs : content.filesystems) {
    w.u64(fs.dev);
    w.u64(fs.fsid);
    w.u64(fs.type);
  }
  w.u64(kept.size());
  w.u64(slots);
  w.u64(children.indices.size());
  w.u64(path_bytes);
  std::vector<uint64_t> table(slots, 0);
  uint32_t offset = 0;
  for (uint32_t i = 0; i < kept.size(); ++i) {
    const DigestCacheInput::Entry& e = *kept[i];
    w.u32(offset);
    w.u32(static_cast<uint32_t>(e.path.size()));
    const bool listed = children.listed[i];
    w.u8(static_cast<uint8_t>(e.record.kind));
    w.u8(listed ? CachedEntry::kListed : 0);
    w.bytes(std::string_view("\0\0", 2));
    w.u32(e.record.mode);
    w.u32(e.record.uid);
    w.u32(e.record.gid);
    w.u32(e.record.fs);
    w.u32(listed ? children.count[i] : 0);
    w.u32(listed ? children.first[i] : 0);
    w.u32(0);
    w.u64(e.record.stamp.ino);
    w.u64(e.record.stamp.size);
    w.i64(e.record.stamp.mtime_ns);
    w.i64(e.record.stamp.ctime_ns);
    w.i64(e.record.stamp.hashed_at_ns);
    w.digest(e.record.sha256);
    offset += static_cast<uint32_t>(e.path.size());
    const uint64_t hash = digest_cache_path_hash(e.path);
    size_t slot = hash & (slots - 1);
    while (table[slot] != 0) slot = (slot + 1) & (slots - 1);
    table[slot] = slot_for(hash, i);
  }
  for (uint64_t slot : table) w.u64(slot);
  for (uint32_t child : children.indices) w.u32(child);
  if (children.indices.size() % 2 != 0) w.u32(0);
  for (const auto* e : kept) w.bytes(e->path);
  w.bytes(std::string(padded8(path_bytes) - path_bytes, '\0'));
  auto digest = [&] {
    Sha256 sha;
    sha.update(w.out());
    return sha.finish();
  }();
  w.digest(digest);
  return std::move(w.out());
}

Result<DigestCacheContent> decode_digest_cache(std::string_view bytes,
                                               std::shared_ptr<const void> keep) {
  if constexpr (std::endian::native != std::endian::little)
    return corrupt("this host is big-endian; the cache is little-endian and is not used here");
  if (bytes.size() > kDigestCacheMaxBytes)
    return corrupt(
        fmt::format("{} bytes, more than the limit of {}", bytes.size(), kDigestCacheMaxBytes));
  if (bytes.size() < kMagic.size() + 8 + kDigestBytes) return corrupt("too short");
  if (bytes.substr(0, kMagic.size()) != kMagic) return corrupt("not a sealrun digest cache");
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(CachedEntry) != 0) {
    // Entries are used where they lie: bytes not 8-aligned (never a mapping) are copied first.
    auto copy = std::make_shared<std::vector<uint64_t>>((bytes.size() + 7) / 8);
    std::memcpy(copy->data(), bytes.data(), bytes.size());
    return decode_digest_cache(
        std::string_view(reinterpret_cast<const char*>(copy->data()), bytes.size()), copy);
  }
  const std::string_view body = bytes.substr(0, bytes.size() - kDigestBytes);
  const std::string_view stored_digest = bytes.substr(body.size());
  // The integrity digest is checked on a second thread while this one checks the structure;
  // nothing is returned unless the digest matched.
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
  DigestCacheContent out;
  Status checked = check_body(body, out, out.paths_, out.slots_, out.children_);
  if (checker.joinable()) checker.join();
  if (!intact) return corrupt("its integrity digest does not match its content");
  if (!checked.ok()) return std::move(checked).error();
  out.keep_ = std::move(keep);
  return out;
}

Result<DigestCacheContent> decode_digest_cache(std::string bytes) {
  auto kept = std::make_shared<const std::string>(std::move(bytes));
  return decode_digest_cache(std::string_view(*kept), kept);
}

namespace {

Status check_body(std::string_view body, DigestCacheContent& out, std::string_view& paths,
                  std::span<const uint64_t>& slots, std::span<const uint32_t>& children) {
  Reader r(body);
  r.take(kMagic.size());
  const auto version = r.le(4);
  if (version != kVersion)
    return corrupt(
        fmt::format("version {} (this sealrun reads version {})", version.value_or(0), kVersion));
  const auto root_len = r.le(4);
  if (!root_len || *root_len > kDigestCacheMaxRootBytes) return corrupt("bad root length");
  const auto root = r.take(padded8(*root_len));
  if (!root) return corrupt("truncated root");
  if (root->find_first_not_of('\0', *root_len) != std::string_view::npos)
    return corrupt("bytes other than zero after the root");
  out.root = std::string(root->substr(0, *root_len));
  const auto tree_sha256 = r.take(kDigestBytes);
  if (!tree_sha256) return corrupt("truncated tree digest");
  std::memcpy(out.tree_sha256.data(), tree_sha256->data(), kDigestBytes);
  const auto fs_count = r.le(4);
  const auto fs_zero = r.le(4);
  if (!fs_count || *fs_count > kDigestCacheMaxFilesystems || *fs_count * 24 > r.remaining() ||
      fs_zero != 0u)
    return corrupt("bad file-system count");
  for (uint64_t i = 0; i < *fs_count; ++i) {
    FsIdentity fs;
    fs.dev = *r.le(8);
    fs.fsid = *r.le(8);
    fs.type = *r.le(8);
    out.filesystems.push_back(fs);
  }
  const auto count = r.le(8), slot_count = r.le(8), child_count = r.le(8), path_bytes = r.le(8);
  if (!count || !slot_count || !child_count || !path_bytes) return corrupt("truncated counts");
  // Each part must fit in what is left, in turn; a huge count is refused before anything is used.
  const size_t left = r.remaining();
  if (*count > left / sizeof(CachedEntry) || *count >= UINT32_MAX)
    return corrupt(fmt::format("bad entry count {}", *count));
  const size_t entry_bytes = *count * sizeof(CachedEntry);
  if (*slot_count != slot_count_for(*count) || *slot_count > (left - entry_bytes) / 8)
    return corrupt(fmt::format("bad slot count {} for {} entries", *slot_count, *count));
  const size_t slot_bytes = *slot_count * 8;
  if (*child_count >= *count + (*count == 0) ||
      padded8(*child_count * 4) > left - entry_bytes - slot_bytes)
    return corrupt(fmt::format("bad child count {} for {} entries", *child_count, *count));
  const size_t child_bytes = padded8(*child_count * 4);
  if (*path_bytes > UINT32_MAX ||
      padded8(*path_bytes) != left - entry_bytes - slot_bytes - child_bytes)
    return corrupt(fmt::format("{} bytes of paths where {} are left", *path_bytes,
                               left - entry_bytes - slot_bytes - child_bytes));
  const char* base = body.data() + r.position();
  out.entries = std::span<const CachedEntry>(reinterpret_cast<const CachedEntry*>(base), *count);
  slots =
      std::span<const uint64_t>(reinterpret_cast<const uint64_t*>(base + entry_bytes), *slot_count);
  const char* child_base = base + entry_bytes + slot_bytes;
  children = std::span<const uint32_t>(reinterpret_cast<const uint32_t*>(child_base), *child_count);
  if (std::string_view(child_base + *child_count * 4, child_bytes - *child_count * 4)
          .find_first_not_of('\0') != std::string_view::npos)
    return corrupt("bytes other than zero after the children");
  const std::string_view all_paths(child_base + child_bytes, padded8(*path_bytes));
  paths = all_paths.substr(0, *path_bytes);
  if (all_paths.find_first_not_of('\0', *path_bytes) != std::string_view::npos)
    return corrupt("bytes other than zero after the paths");
  if (paths.find('\0') != std::string_view::npos) return corrupt("a NUL byte in a path");

  // Every entry, in one pass: its path follows the previous one's, in order, and its fields are
  // in range.
  uint64_t expected_offset = 0;
  uint64_t next_child = 0;
  std::string_view previous;
  for (size_t i = 0; i < out.entries.size(); ++i) {
    const CachedEntry& e = out.entries[i];
    if (e.path_offset != expected_offset || e.path_size == 0 ||
        e.path_size > kDigestCacheMaxPathBytes || e.path_size > *path_bytes - e.path_offset)
      return corrupt(fmt::format("bad path bounds in entry {}", i));
    expected_offset += e.path_size;
    const std::string_view path = paths.substr(e.path_offset, e.path_size);
    if (i > 0 && !(previous < path)) return corrupt(fmt::format("entry {} is out of order", i));
    previous = path;
    if (static_cast<uint8_t>(e.kind) > static_cast<uint8_t>(EntryKind::kSymlink) ||
        e.mode > 07777 || e.reserved[0] != 0 || e.reserved[1] != 0 || e.reserved2 != 0)
      return corrupt(
          fmt::format("entry {} has kind {} and mode {:o}", i, static_cast<int>(e.kind), e.mode));
    if (e.fs >= out.filesystems.size())
      return corrupt(
          fmt::format("entry {} names file system {} of {}", i, e.fs, out.filesystems.size()));
    if (e.kind != EntryKind::kFile && e.sha256 != kNoDigest)
      return corrupt(fmt::format("entry {} is not a file but has a digest", i));
    // Children: only a listed directory has them, in the table's order; each is an entry whose
    // path is this one's plus one more name, and they increase.
    const bool listed = e.flags == CachedEntry::kListed && e.kind == EntryKind::kDirectory;
    if (!listed && (e.flags != 0 || e.first_child != 0 || e.child_count != 0))
      return corrupt(fmt::format("entry {} has children but is not a listed directory", i));
    if (!listed) continue;
    if (e.first_child != next_child || e.child_count > children.size() - next_child)
      return corrupt(fmt::format("bad children of entry {}", i));
    next_child += e.child_count;
    uint32_t before = 0;
    for (uint32_t c : children.subspan(e.first_child, e.child_count)) {
      if (c >= out.entries.size() || c <= i || c <= before)
        return corrupt(fmt::format("bad children of entry {}", i));
      before = c;
      const CachedEntry& child = out.entries[c];
      // The child's own bounds are checked when the pass gets to it (it comes later).
      const std::string_view name =
          child.path_offset <= *path_bytes && child.path_size <= *path_bytes - child.path_offset
              ? paths.substr(child.path_offset, child.path_size)
              : std::string_view();
      if (!is_child_path(name, path))
        return corrupt(fmt::format("entry {} lists a child that is not one", i));
    }
  }
  if (next_child != children.size()) return corrupt("children that no directory lists");
  if (expected_offset != *path_bytes) return corrupt("paths that no entry names");
  // The index: each entry in exactly one slot (so the table holds as many names as entries, and
  // has empty slots left since there are more slots than entries).
  std::vector<bool> named(out.entries.size());
  size_t used = 0;
  for (uint64_t slot : slots) {
    if (slot == 0) continue;
    const uint64_t number = slot_entry_number(slot);
    if (number == 0 || number > out.entries.size() || named[number - 1])
      return corrupt("an index slot names no entry, or one named before");
    named[number - 1] = true;
    ++used;
  }
  if (used != out.entries.size()) return corrupt("the index leaves entries out");
  return ok_status();
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
  auto bytes = std::make_shared<FileBytes>();
  if (Status read = bytes->map(file.get(), static_cast<size_t>(st.st_size), path); !read.ok()) {
    out.state = LoadedDigestCache::State::kIgnored;
    out.reason = read.error().message();
    return out;
  }
  auto content = decode_digest_cache(bytes->view(), bytes);
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

Status store_digest_cache(const std::string& state_dir, const DigestCacheInput& content) {
  std::string bytes = encode_digest_cache(content);
  if (bytes.size() > kDigestCacheMaxBytes)
    return Error::make(fmt::format("the cache of {} would take {} bytes, more than the limit of {}",
                                   content.root, bytes.size(), kDigestCacheMaxBytes));
  SEALRUN_TRY(open_cache_dir(state_dir, true));
  return write_file_atomic(digest_cache_path(state_dir, content.root), bytes, 0600);
}

}  // namespace sealrun
