// The verified digest cache's file (docs/digest-cache.md): one per pinned tree, at
// STATE/cache/digests/<sha256 of the root path>.sdc, holding the tree's semantic-tree-v1 digest and
// for each entry of the tree its record's fields (kind, mode, owner), the stamp it was read with
// (file_stamp.h) and, for a regular file, its SHA-256. This file owns the format (encode and a
// strict, bounded decode) and its place on disk (who may have written it, how it is replaced);
// cached_tree.h decides what to trust in it.
//
// The format is binary, little-endian, versioned, and closed by a SHA-256 over everything before
// it, so a truncated or damaged file is detected before a single entry is believed:
//   "SRDIGEST"  u32 version (1)
//   u32 root length, root bytes
//   32 bytes: the tree's digest (the SHA-256 of its inventory)
//   u32 file-system count, each: u64 st_dev, u64 f_fsid, u64 f_type
//   u64 entry count, each: u32 bytes shared with the previous path, u32 suffix length, suffix,
//       u8 kind (0 file, 1 directory, 2 symlink), u32 mode, u32 uid, u32 gid,
//       u32 file-system index, u64 ino, u64 size, i64 mtime_ns, i64 ctime_ns, i64 hashed_at_ns,
//       32 bytes SHA-256 (a file's content; zero for the others)
//   32 bytes: SHA-256 of all of the above
// Paths are strictly increasing by raw bytes (each shares the longest possible prefix with the
// one before), so there is exactly one encoding of a given content.
//
// Trust: the file is believed only if it is a regular file owned by root or by the caller's
// effective uid and writable by nobody else, in directories with the same properties. Anything
// else is ignored (and the reason reported), never an error: the cache can only save work.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "fingerprint/file_stamp.h"
#include "fingerprint/path_arena.h"

namespace sealrun {

struct CachedEntry {
  // Relative to the root, as in the inventory ("." is the root). Points into the walk's paths
  // when writing, and into DigestCacheContent::storage when read back.
  std::string_view path;
  EntryKind kind = EntryKind::kFile;
  uint32_t mode = 0;  // st_mode & 07777
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t fs = 0;  // index into DigestCacheContent::filesystems
  FileStamp stamp;
  std::array<uint8_t, 32> sha256{};  // files only
};

struct DigestCacheContent {
  std::string root;
  std::array<uint8_t, 32> tree_sha256{};  // the digest of the tree these entries make up
  std::vector<FsIdentity> filesystems;
  std::vector<CachedEntry> entries;  // every entry of the tree, strictly increasing by path bytes

  // The entry for `path`, or null. A hash lookup once index() was called (decode does), else a
  // binary search.
  const CachedEntry* find(std::string_view path) const;
  // The same in steps, for a whole directory at once: hash every child's path and prefetch its
  // slot, then look them up (the slots now in the CPU cache, and the entries prefetched in turn),
  // so that one directory's lookups wait for memory together rather than one after another.
  static size_t hash_of(std::string_view path);
  void prefetch_slot(size_t hash) const;
  const CachedEntry* find_hashed(std::string_view path, size_t hash) const;
  // Builds the hash index over `entries` (open addressing; each slot holds part of the path's
  // hash next to the entry's index, so that a probe rarely touches an entry it does not want).
  void index();

  // The decoded paths' bytes (shared, so that copies of a decoded content stay valid).
  std::shared_ptr<const PathArena> storage;

 private:
  std::vector<uint64_t> slots_;
};

// Bounds: a cache file larger than this is neither read nor written (about 2 million entries).
inline constexpr size_t kDigestCacheMaxBytes = 256u << 20;
inline constexpr size_t kDigestCacheMaxRootBytes = 64u << 10;
inline constexpr size_t kDigestCacheMaxFilesystems = 4096;
// A longer path is not cached (its file is always hashed); all paths together, decoded, at most:
inline constexpr size_t kDigestCacheMaxPathBytes = 64u << 10;
inline constexpr size_t kDigestCacheMaxDecodedBytes = 1u << 30;

std::string encode_digest_cache(const DigestCacheContent& content);
// Refuses anything that is not exactly a valid encoding: wrong magic or version, a bad integrity
// digest, lengths past the end, unsorted or non-canonical paths, a file-system index out of range,
// trailing bytes.
Result<DigestCacheContent> decode_digest_cache(std::string_view bytes);

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
Status store_digest_cache(const std::string& state_dir, const DigestCacheContent& content);

}  // namespace sealrun
