// How much a directory tree occupies, measured the way a disk-growth guard needs it: a no-follow
// walk by directory descriptor (symlinks are counted as themselves, never followed; other
// filesystems are not crossed), each inode counted once (hard links), allocated bytes from
// st_blocks as well as logical sizes. The walk is bounded in paths and time, and says when it was
// cut short — a guard then works with a lower bound rather than waiting.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"

namespace sealrun::census {

struct TreeUsage {
  uint64_t logical_bytes = 0;    // sum of st_size of regular files and symlinks
  uint64_t allocated_bytes = 0;  // sum of st_blocks * 512 over every inode, once each
  uint64_t paths = 0;            // entries seen, the root included
  int64_t walk_ms = 0;
  bool complete = true;     // false: a budget ran out, the figures are lower bounds
  uint64_t unreadable = 0;  // directories that could not be opened (counted, not fatal)
};

struct WalkBudget {
  uint64_t max_paths = 5'000'000;
  int64_t max_ms = 10'000;
};

// A root that does not exist or is not a directory is an error; anything below it that vanishes
// during the walk is skipped (the job is still writing).
Result<TreeUsage> measure_tree(const std::string& root, const WalkBudget& budget = {});

// Free bytes available to unprivileged users on the filesystem holding `path` (statvfs f_bavail).
Result<uint64_t> free_bytes_at(const std::string& path);

}  // namespace sealrun::census
