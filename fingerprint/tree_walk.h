// The walk behind semantic-tree-v1: visits a directory tree by directory descriptor (openat and
// fstatat relative to the parent, O_NOFOLLOW everywhere, never re-resolving a full path), records
// directories and symlinks, and hands each regular file, already opened, to a pool of hashing
// threads. Entries come back unsorted; tree.cc orders and writes them.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "core/result.h"
#include "fingerprint/tree.h"

namespace sealrun {

enum class EntryKind { kFile, kDirectory, kSymlink };

struct TreeEntry {
  std::string path;  // raw name bytes relative to the root, '/'-separated; "." is the root
  EntryKind kind = EntryKind::kFile;
  uint32_t mode = 0;  // permission bits, st_mode & 07777
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t bytes = 0;  // files
  std::string sha256;  // files, lower-case hex
  std::string target;  // symlinks, raw bytes
};

struct WalkedTree {
  // A deque, so that hashing threads can fill in entries while the walk appends more.
  std::deque<TreeEntry> entries;  // entries[0] is "."
  uint64_t regular_bytes = 0;
};

struct WalkExclusion {
  dev_t dev = 0;
  ino_t ino = 0;
  std::string what;  // names it in the error ("the output file /x/inv.jsonl")
};

// Walks the tree under `root_fd` (an O_DIRECTORY descriptor; `root_display` names it in errors)
// and hashes every regular file on `options.threads` threads (1: on the calling thread). An entry
// whose inode is `exclude` is an error: the inventory must not describe itself.
Result<WalkedTree> walk_and_hash(int root_fd, const std::string& root_display,
                                 const TreeOptions& options,
                                 const std::optional<WalkExclusion>& exclude);

// Threads to use when TreeOptions::threads is 0: the CPUs this process may run on.
unsigned default_hash_threads();

}  // namespace sealrun
