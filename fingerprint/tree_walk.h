// SPDX-License-Identifier: Apache-2.0
// The walk behind semantic-tree-v1: visits a directory tree by directory descriptor (openat and
// fstatat relative to the parent, O_NOFOLLOW everywhere), records directories and symlinks, and
// hands each regular file to a pool of hashing threads (tree_hash_pool.h), which re-open it
// beneath the root without following anything and check it is the inode the walk saw. With a
// digest cache (digest_cache.h), a file whose stamp still holds takes its digest from the cache
// and is never opened. Directories are walked by several threads at once (as many as hashing
// threads), and each directory's children are sorted as it is read, so the inventory's order
// (raw path bytes) is assembled at the end without one large sort over long common prefixes.
#pragma once

#include <sys/stat.h>

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "fingerprint/file_stamp.h"
#include "fingerprint/path_arena.h"
#include "fingerprint/stable_arena.h"
#include "fingerprint/tree.h"

namespace sealrun {

struct DigestCacheContent;

struct TreeEntry {
  // Raw name bytes relative to the root, '/'-separated; "." is the root. Kept in the walk's
  // PathArena (and followed by a NUL there); valid as long as the WalkedTree.
  std::string_view path;
  EntryKind kind = EntryKind::kFile;
  uint32_t mode = 0;  // permission bits, st_mode & 07777
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t bytes = 0;                // files
  std::array<uint8_t, 32> sha256{};  // files: the content's SHA-256
  std::string target;                // symlinks, raw bytes
  // A symlink whose stamp the cache vouched for: its target is read only if an inventory is
  // formed (never, for an unchanged tree), after the walk.
  bool target_later = false;
  // For the digest cache: the identity the entry had when it was read (a file: hashed, or
  // verified by stat), and on which file system (an index into WalkedTree::filesystems; kNoFs for
  // a file on a file system the walk did not enter as a directory, e.g. a bind-mounted file,
  // which is never cached).
  static constexpr uint32_t kNoFs = std::numeric_limits<uint32_t>::max();
  FileStamp stamp;
  uint32_t fs = kNoFs;
  bool from_cache = false;  // a file whose digest the cache gave
};

struct WalkedTree {
  // One per walking thread; entries never move while hashing threads fill them in and the walk
  // appends more.
  std::vector<std::unique_ptr<StableArena<TreeEntry>>> arenas;
  std::vector<std::unique_ptr<PathArena>> paths;  // one per walking thread
  // Every entry in the inventory's order: "." first, then by raw path bytes.
  std::vector<const TreeEntry*> order;
  std::vector<FsIdentity> filesystems;  // [0] is the root's
  uint64_t entries = 0;                 // records, "." included
  uint64_t regular_bytes = 0;
  uint64_t files = 0;
  uint64_t files_from_cache = 0;
  // Entries whose whole record the cache vouches for (kind, mode, owner fresh and equal; a file's
  // or symlink's stamp still holding).
  uint64_t entries_unchanged = 0;
  // Every entry vouched for and the cache lists no other: the inventory is, byte for byte, the
  // one the cache's tree digest was taken of. `order` is then left empty.
  bool unchanged = false;
};

// The name of `rel` for people: "<root_display>/<rel>".
std::string tree_entry_display(const std::string& root_display, std::string_view rel);

struct WalkExclusion {
  dev_t dev = 0;
  ino_t ino = 0;
  std::string what;  // names it in the error ("the output file /x/inv.jsonl")
};

// A digest cache still being loaded (on another thread). `ready` answers at once: the cache once
// it has loaded, else null (still loading, or nothing to use). `wait`, called once the walk has
// read every directory, waits for the load and returns the cache, or null when there is none.
struct AwaitDigestCache {
  std::function<const DigestCacheContent*()> ready;
  std::function<const DigestCacheContent*()> wait;
  explicit operator bool() const { return static_cast<bool>(wait); }
};

// Walks the tree under `root_fd` (an O_DIRECTORY descriptor; `root_display` names it in errors)
// and hashes every regular file on `options.threads` threads (1: on the calling thread), except
// those whose stamp in `cache` (may be null; read from every walking thread at once) still
// holds. An entry whose inode is `exclude` is an error: the inventory must not describe itself.
// With `await_cache` set instead of `cache`, the walk does not wait for the cache: it stats the
// tree while the cache loads, each thread using the cache from the first directory it reads after
// the load is over; every entry added before then is compared with it after the walk (on as many
// threads), and only then are the files it does not vouch for handed to the hashing threads.
Result<WalkedTree> walk_and_hash(int root_fd, const std::string& root_display,
                                 const TreeOptions& options,
                                 const std::optional<WalkExclusion>& exclude,
                                 const DigestCacheContent* cache = nullptr,
                                 const AwaitDigestCache& await_cache = {});

// An inventory's digest with the walk it came from, for the digest cache.
struct DigestedTree {
  TreeSummary summary;
  WalkedTree tree;
};
// tree_digest() (tree.h) that keeps the walk and consults `cache` (may be null). When the walk
// finds the tree unchanged, the digest is the cache's and no inventory is formed.
Result<DigestedTree> tree_digest_keeping_walk(const std::string& root, const TreeOptions& options,
                                              const DigestCacheContent* cache,
                                              const AwaitDigestCache& await_cache = {});

// Threads to use when TreeOptions::threads is 0: the CPUs this process may run on.
unsigned default_hash_threads();

}  // namespace sealrun
