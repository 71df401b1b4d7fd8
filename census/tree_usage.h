// SPDX-License-Identifier: Apache-2.0
// How much a directory tree occupies, measured the way a disk-growth guard needs it: a no-follow
// walk by directory descriptor (symlinks are counted as themselves, never followed; other
// filesystems are not crossed), each inode counted once (hard links), allocated bytes from
// st_blocks as well as logical sizes, and the number of inodes (the inode guard's figure).
//
// Every directory is opened relative to its parent's descriptor, one name at a time, so a tree
// thousands of levels deep (paths far past PATH_MAX) is walked in time linear in its entries;
// descriptors are held in a bounded cache and a directory whose parent's descriptor was given up is
// reopened from its nearest open ancestor. Several walker threads, each with a stack of its own
// and stealing from the others when idle (and splitting a large directory's entries), use every
// core the walk is given.
//
// The walk is bounded in paths, pending directories and time. Whatever keeps it from seeing the
// whole tree — a budget that ran out, a directory or entry that could not be read — is reported in
// the result (never a silent zero): the figures are then lower bounds, and the census treats the
// sample as unmeasured.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace sealrun::census {

struct TreeUsage {
  uint64_t logical_bytes = 0;    // sum of st_size of regular files and symlinks
  uint64_t allocated_bytes = 0;  // sum of st_blocks * 512 over every inode, once each
  uint64_t paths = 0;            // entries seen, the root included
  uint64_t inodes = 0;           // distinct inodes seen (hard links once), the root included
  int64_t walk_ms = 0;
  bool complete = true;     // false: a budget ran out, the figures are lower bounds
  uint64_t unreadable = 0;  // directories or entries that could not be read (see errors)
  uint64_t changed = 0;     // directories replaced or moved while the walk reached them (skipped)
  // Directories whose descriptor was given up (max_open_fds) and opened again: through ".." from a
  // child, or name by name from an open ancestor. How the walk coped with depth, for the curious.
  uint64_t reopened = 0;
  std::vector<std::string> errors;  // the first few read failures, each naming its path
  std::string cut_short;            // which budget ran out, when !complete

  // True when every figure is exact: the whole tree was seen and nothing failed to read.
  bool measured() const { return complete && unreadable == 0; }
  // Why the figures are only lower bounds ("" when measured()).
  std::string unmeasured_reason() const;
};

struct WalkBudget {
  uint64_t max_paths = 5'000'000;
  int64_t max_ms = 10'000;
  // Directories found but not yet walked (each costs ~100 bytes until it is).
  uint64_t max_pending_dirs = 1'000'000;
  unsigned threads = 2;         // walker threads, the caller's included (0: one per core, up to 8)
  unsigned max_open_fds = 128;  // directory descriptors the walk may hold at once (>= 8)
};

// A root that does not exist or is not a directory is an error; anything below it that vanishes
// during the walk is skipped (the job is still writing).
Result<TreeUsage> measure_tree(const std::string& root, const WalkBudget& budget = {});

// Free bytes available to unprivileged users on the filesystem holding `path` (statvfs f_bavail).
Result<uint64_t> free_bytes_at(const std::string& path);

}  // namespace sealrun::census
