// SPDX-License-Identifier: Apache-2.0
// The verified digest cache's file (docs/digest-cache.md): one per pinned tree, at
// STATE/cache/digests/<sha256 of the root path>.sdc, holding the tree's semantic-tree-v1 digest and
// for each entry of the tree its record's fields (kind, mode, owner), the stamp it was read with
// (file_stamp.h) and, for a regular file, its SHA-256. This file owns the format (encode and a
// strict, bounded decode) and its place on disk (who may have written it, how it is replaced);
// cached_tree.h decides what to trust in it.
//
// The format is laid out to be used where it lies: the file is mapped, checked, and looked up in
// place, with no entry decoded or copied (a cache of /usr holds 170,000 entries, and re-verifying
// /usr is meant to cost little more than a stat of each). Binary, little-endian, versioned, every
// part 8-byte aligned, closed by a SHA-256 over everything before it, so that a truncated or
// damaged file is detected before a single entry is believed:
//   "SRDIGEST"  u32 version (3)  u32 root length
//   root bytes, zero-padded to a multiple of 8
//   32 bytes: the tree's digest (the SHA-256 of its inventory)
//   u32 file-system count, u32 zero; each: u64 st_dev, u64 f_fsid, u64 f_type
//   u64 entry count, u64 slot count, u64 child count, u64 path bytes
//   entries (CachedEntry, 112 bytes each), strictly increasing by path bytes
//   slots (u64 each; a power of two, more than the entries): an open-addressing index by
//       digest_cache_path_hash(), each slot the hash's high 32 bits over the entry's index + 1
//       (0: empty)
//   children (u32 entry indices, zero-padded to a multiple of 8): each listed directory's
//       children, increasing, directory after directory in entry order
//   the paths, one after another in entry order, zero-padded to a multiple of 8
//   32 bytes: SHA-256 of all of the above
// The encoder makes exactly one encoding of a given content.
//
// Trust: the file is believed only if it is a regular file owned by root or by the caller's
// effective uid and writable by nobody else, in directories with the same properties. Anything
// else is ignored (and the reason reported), never an error: the cache can only save work.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/result.h"
#include "fingerprint/file_stamp.h"

namespace sealrun {

// One entry of the tree, exactly as it lies in the file.
struct CachedEntry {
  // Where its path (relative to the root, "." for the root) lies in the file's paths; set by the
  // encoder.
  uint32_t path_offset = 0;
  uint32_t path_size = 0;
  EntryKind kind = EntryKind::kFile;
  // kListed: a directory all of whose children are entries of the cache, listed in the children
  // table (first_child, child_count; set by the encoder). A directory whose stamp still holds has
  // exactly those children (any name added, removed or renamed changes its ctime), so its
  // listing need not be read again.
  static constexpr uint8_t kListed = 1;
  uint8_t flags = 0;
  uint8_t reserved[2] = {};
  uint32_t mode = 0;  // st_mode & 07777
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t fs = 0;  // index into the cache's file systems
  uint32_t child_count = 0;
  uint32_t first_child = 0;
  uint32_t reserved2 = 0;
  FileStamp stamp;
  std::array<uint8_t, 32> sha256{};  // files only
};
static_assert(sizeof(CachedEntry) == 112 && std::is_trivially_copyable_v<CachedEntry> &&
              std::is_standard_layout_v<CachedEntry>);

// Asks the CPU for both cache lines of `e` ahead of its use.
inline void prefetch_cached_entry(const CachedEntry* e) {
  __builtin_prefetch(e);
  __builtin_prefetch(reinterpret_cast<const char*>(e) + 64);
}

// The index's hash of a path: fixed here (not std::hash, which may differ between builds), since
// the index is stored.
uint64_t digest_cache_path_hash(std::string_view path);

// A loaded cache: views into the checked file's mapping, which it keeps alive (copies share it).
struct DigestCacheContent {
  std::string root;
  std::array<uint8_t, 32> tree_sha256{};  // the digest of the tree these entries make up
  std::vector<FsIdentity> filesystems;
  std::span<const CachedEntry> entries;  // every entry of the tree, strictly increasing by path

  std::string_view path(const CachedEntry& e) const {
    return paths_.substr(e.path_offset, e.path_size);
  }
  // The children of a listed directory (CachedEntry::kListed), as indices into `entries`; empty
  // for any other entry.
  std::span<const uint32_t> children(const CachedEntry& e) const {
    if ((e.flags & CachedEntry::kListed) == 0) return {};
    return children_.subspan(e.first_child, e.child_count);
  }
  // The entry for `path`, or null.
  const CachedEntry* find(std::string_view path) const;
  // The same in steps, for a whole directory at once: hash every child's path and prefetch its
  // slot, then look them up (the slots now in the CPU cache, and the entries prefetched in turn),
  // so that one directory's lookups wait for memory together rather than one after another.
  static uint64_t hash_of(std::string_view path) { return digest_cache_path_hash(path); }
  void prefetch_slot(uint64_t hash) const;
  // Once the slot is at hand: the entry it most likely names (the home slot's, when its tag
  // matches), for find_hashed() to come.
  void prefetch_entry(uint64_t hash) const;
  const CachedEntry* find_hashed(std::string_view path, uint64_t hash) const;

 private:
  friend Result<DigestCacheContent> decode_digest_cache(std::string_view bytes,
                                                        std::shared_ptr<const void> keep);
  friend Result<DigestCacheContent> decode_digest_cache(std::string bytes);
  std::string_view paths_;
  std::span<const uint64_t> slots_;
  std::span<const uint32_t> children_;
  std::shared_ptr<const void> keep_;  // the mapping (or buffer) the views point into
};

// What is to be stored: the walk's entries with their paths (the encoder sets path_offset,
// path_size and a directory's children), strictly increasing by path bytes.
struct DigestCacheInput {
  struct Entry {
    std::string_view path;
    CachedEntry record;  // a directory's record.flags: kListed when every child is an entry here
  };
  std::string root;
  std::array<uint8_t, 32> tree_sha256{};
  std::vector<FsIdentity> filesystems;
  std::vector<Entry> entries;
  // Entries of the tree that are not stored (their stamps cannot be trusted later): a directory
  // with such a child is not listed. (One whose path is over the limit is left out likewise.)
  std::vector<std::string_view> left_out;
};
// A loaded cache as input again (to store it changed: tests, repairs). Its paths point into
// `content`, which must outlive it; what the cache did not list stays unlisted.
DigestCacheInput input_of(const DigestCacheContent& content);

// Bounds: a cache file larger than this is neither read nor written (about 1.4 million entries:
// /usr's take 190 bytes each with their share of the index, children and paths).
inline constexpr size_t kDigestCacheMaxBytes = 256u << 20;
inline constexpr size_t kDigestCacheMaxRootBytes = 64u << 10;
inline constexpr size_t kDigestCacheMaxFilesystems = 4096;
// A longer path is not cached (its file is always hashed); all paths together, decoded, at most:
inline constexpr size_t kDigestCacheMaxPathBytes = 64u << 10;

// The file's bytes; entries whose path is longer than kDigestCacheMaxPathBytes are left out.
std::string encode_digest_cache(const DigestCacheInput& content);
// Refuses anything that is not exactly a valid encoding: wrong magic or version, a bad integrity
// digest, lengths past the end or trailing bytes, unsorted paths, a path with a NUL, a file-system
// index out of range, an index slot naming no entry. The result points into `bytes`, which must
// stay as they are while it is used; `keep` (if any) is kept alive by it for that.
Result<DigestCacheContent> decode_digest_cache(std::string_view bytes,
                                               std::shared_ptr<const void> keep = nullptr);
// The same for bytes it takes over (and keeps).
Result<DigestCacheContent> decode_digest_cache(std::string bytes);

// STATE/cache/digests/<sha256 hex of root>.sdc
std::string digest_cache_path(const std::string& state_dir, const std::string& root);

struct LoadedDigestCache {
  enum class State { kLoaded, kMissing, kCorrupt, kIgnored };
  State state = State::kMissing;
  std::string reason;  // kCorrupt / kIgnored: why, for a person
  // False when STATE/cache or STATE/cache/digests is not trustworthy: nothing may be written there.
  bool directory_trusted = true;
  DigestCacheContent content;
};
// Reads the cache of `root` under `state_dir`. Never fails: a missing, unreadable, untrusted or
// damaged cache is reported as such, and the caller hashes in full.
LoadedDigestCache load_digest_cache(const std::string& state_dir, const std::string& root);

// Replaces the cache of `content.root` under `state_dir` atomically (core/atomic_write.h), mode
// 0600, creating STATE/cache/digests (0700) when missing. Refuses directories that are not owned
// by root or this euid, or that others can write.
Status store_digest_cache(const std::string& state_dir, const DigestCacheInput& content);

}  // namespace sealrun
