// semantic-tree-v1: a streamed, canonical inventory of a directory tree (docs/semantic-tree-v1.md).
// One JSON object per line: a header record, then "." and every entry sorted by raw path bytes,
// with kind, mode, uid, gid, and bytes + sha256 for files or the target for symlinks. Symlinks are
// recorded, never followed; FIFOs, sockets and devices are an error naming the path. The digest of
// a tree is the SHA-256 of its inventory bytes: same tree, same digest.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/result.h"

namespace sealrun {

struct TreeSummary {
  std::string sha256;          // of the inventory bytes
  uint64_t entries = 0;        // records after the header ("." included)
  uint64_t regular_bytes = 0;  // sum of regular file sizes
};

struct TreeOptions {
  unsigned threads = 0;  // 0: one per online CPU
  // Called from one thread now and then while hashing: bytes hashed so far, bytes in all.
  std::function<void(uint64_t done_bytes, uint64_t total_bytes)> progress;
};

// Writes the inventory of `root` to `out_path`, which must not exist yet (O_EXCL), and returns
// the summary. On failure the partial output file is removed.
Result<TreeSummary> write_tree_inventory(const std::string& root, const std::string& out_path,
                                         const TreeOptions& options = {});

// The same inventory, only digested (for pins): identical sha256 to write_tree_inventory().
Result<TreeSummary> tree_digest(const std::string& root, const TreeOptions& options = {});

}  // namespace sealrun
