// SPDX-License-Identifier: Apache-2.0
// Collecting what a job left in /out, as a hostile job would shape it: tens of thousands of
// junk entries, trees thousands of directories deep (paths far past PATH_MAX), sparse files of
// hundreds of gigabytes, hundreds of hard links to one file, names that are not UTF-8.
//
// The walk goes by directory descriptor (openat/fstatat relative to the directory, O_NOFOLLOW,
// O_DIRECTORY), holding one directory open at a time and climbing back through ".." (checked by
// device and inode, like fts(3)), so its cost is linear in the number of entries whatever the
// depth and no full path is ever resolved. Everything is bounded: the number of entries, the
// length of a path, the bytes of names, and the bytes hashed — judged by apparent size (st_size)
// and allocated blocks alike, before a file is read, so a sparse file larger than the allowance
// is never read at all. Hard links (same device and inode) are hashed and counted once. Hashing
// asks `stop` between chunks, so a signal or the outer deadline ends it within milliseconds.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "controller/receipt/receipt.h"
#include "core/result.h"
#include "fingerprint/hash_progress.h"

namespace sealrun::run {

// Entries in /out (files, links, directories — empty ones too — and anything else) past which
// the outputs are refused and the run is not built: the list stays small enough to record whole.
inline constexpr size_t kMaxOutputEntries = 100000;
// An output path (relative to /out) longer than this is refused; PATH_MAX (4096) is no limit here.
inline constexpr size_t kMaxOutputPathBytes = 32 * 1024;
// The names and symlink targets of all outputs together.
inline constexpr size_t kMaxOutputNameBytes = 64 * 1024 * 1024;

struct OutputLimits {
  size_t max_entries = kMaxOutputEntries;
  size_t max_path_bytes = kMaxOutputPathBytes;
  size_t max_name_bytes = kMaxOutputNameBytes;
  // limits.result_max_bytes: the apparent (or allocated, if larger) bytes of all regular files,
  // each inode once.
  uint64_t max_bytes = UINT64_MAX;
};

// Asked now and then: a reason to stop at once (a stop request, the outer deadline), or nullopt.
using StopCheck = std::function<std::optional<std::string>()>;

// What the walk did, for tests of its cost and for the report.
struct WalkStats {
  uint64_t entries = 0;       // names seen, directories included
  uint64_t directories = 0;   // directories entered
  uint64_t opens = 0;         // openat(2) calls: directories down and up, files
  uint64_t files_hashed = 0;  // distinct inodes read
  uint64_t bytes_hashed = 0;
};

struct OutputWalk {
  // Every output sorted by raw path bytes (directories are not outputs); hard links after the
  // first path of their inode carry `hardlink_of`. Empty when interrupted.
  std::vector<receipt::OutputRecord> outputs;
  uint64_t bytes = 0;  // apparent bytes of the distinct regular files
  WalkStats stats;
  // Set when `stop` asked the walk to end: why, and how far it got.
  std::optional<std::string> interrupted;
};

// Told the files and bytes hashed so far, after each file and each chunk (a terminal progress
// line: run_progress.h). The total is not known before the walk ends, so walk_complete stays false.
using OutputProgress = std::function<void(const HashProgress&)>;

// Walks and hashes the outputs under `root`. An error means the outputs cannot be recorded (too
// many, a path too long, over the allowance, unreadable, changed while read); it names why.
Result<OutputWalk> walk_outputs(const std::string& root, const OutputLimits& limits,
                                const StopCheck& stop, const OutputProgress& progress = {});

}  // namespace sealrun::run
