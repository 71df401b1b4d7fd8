// SPDX-License-Identifier: Apache-2.0
// Progress of hashing a tree: the numbers the walk and its hashing threads publish (HashProgress),
// and the one line a terminal shows for them (ProgressLine: bytes and files, rate, percentage and
// ETA). Pure code: the controller decides whether stderr is a terminal and prints the line;
// nothing here writes anywhere.
//
// The walk finds files faster than they are hashed, but until it has finished, the total is not
// known: a percentage over "found so far" would run backwards each time the walk finds more. So
// the line shows no percentage and no ETA until `walk_complete`, and once shown, the percentage
// never decreases.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>

#include "core/bytes_text.h"  // binary_size_text, which the line uses

namespace sealrun {

struct HashProgress {
  uint64_t files_found = 0;       // regular files the walk has found so far
  uint64_t bytes_found = 0;       // their sizes
  uint64_t files_done = 0;        // of those, hashed or verified by stat
  uint64_t bytes_done = 0;        // bytes hashed (large files count as they go) or verified by stat
  uint64_t files_from_cache = 0;  // verified by stat through the digest cache
  bool walk_complete = false;     // files_found and bytes_found are final
};

class ProgressLine {
 public:
  // `label` names what is hashed: "toolchain", "tree /usr", "outputs".
  explicit ProgressLine(std::string label) : label_(std::move(label)) {}

  // The line for `p` observed at `now_ms` (a monotonic clock), without a line ending:
  //   hashing toolchain: 1.2 GiB of 8.5 GiB (14%), 12345 of 140682 files, 850.0 MiB/s, ETA 9 s
  //   hashing toolchain: 1.2 GiB in 12345 files, 850.0 MiB/s (finding files: 40000 so far)
  std::string render(const HashProgress& p, int64_t now_ms);

  // The percentage last shown (-1: none yet).
  int shown_percent() const { return shown_percent_; }

 private:
  // Bytes per second over the last few seconds; 0 until there are two samples.
  double rate(const HashProgress& p, int64_t now_ms);

  std::string label_;
  std::deque<std::pair<int64_t, uint64_t>> samples_;  // (ms, bytes_done)
  int shown_percent_ = -1;
};

}  // namespace sealrun
