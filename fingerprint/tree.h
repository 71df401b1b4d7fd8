// SPDX-License-Identifier: Apache-2.0
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
#include "fingerprint/hash_progress.h"

namespace sealrun {

struct TreeSummary {
  std::string sha256;          // of the inventory bytes
  uint64_t entries = 0;        // records after the header ("." included)
  uint64_t regular_bytes = 0;  // sum of regular file sizes
};

struct TreeOptions {
  unsigned threads = 0;  // 0: one hashing thread per CPU this process may run on
  // Called on the calling thread about every 200 ms while walking and hashing, and once at the
  // end: the full picture (hash_progress.h; ProgressLine turns it into a terminal line).
  std::function<void(const HashProgress&)> on_progress;
  // The older, smaller form: bytes hashed so far and bytes in all. Called only once the walk is
  // complete, so that `total_bytes` never changes and done * 100 / total never runs backwards.
  std::function<void(uint64_t done_bytes, uint64_t total_bytes)> progress;
  // The clock a hashed file's stamp records as the moment it was hashed (file_stamp.h). Empty:
  // coarse real time, which is what makes the digest cache's rule sound. A test seam only.
  std::function<int64_t()> stamp_clock;
};

// Writes the inventory of `root` to `out_path`, which must not exist yet (O_EXCL), and returns
// the summary. On failure the partial output file is removed.
Result<TreeSummary> write_tree_inventory(const std::string& root, const std::string& out_path,
                                         const TreeOptions& options = {});

// The same inventory, only digested (for pins): identical sha256 to write_tree_inventory().
Result<TreeSummary> tree_digest(const std::string& root, const TreeOptions& options = {});

}  // namespace sealrun
