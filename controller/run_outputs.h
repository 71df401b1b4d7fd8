// After the job: what it left in /out (the outputs, hashed), and its standard streams (hashed,
// with a tail for the receipt, and a bounded copy kept beside the receipt).
#pragma once

#include <string>
#include <vector>

#include "controller/receipt.h"
#include "core/result.h"

namespace sealrun::run {

struct CollectedOutputs {
  std::vector<receipt::OutputRecord> outputs;  // regular files, sorted by path
  std::vector<std::string> ignored;            // other kinds, e.g. "link -> target (symlink)"
  uint64_t total_bytes = 0;
};

// Walks `output_dir` without following symlinks; hashes every regular file (race-checked).
Result<CollectedOutputs> collect_outputs(const std::string& output_dir,
                                         size_t max_entries = 100000);

// Digest, size and tail of a log file the job wrote: `name` in the directory `dirfd` (never a link).
Result<receipt::StreamRecord> summarise_stream(int dirfd, const std::string& name);

// Copies the last `max_bytes` of `from` (in `from_dirfd`) to `to` (a new file in `to_dirfd`),
// neither of them a link. Returns the bytes copied.
Result<uint64_t> keep_log_tail(int from_dirfd, const std::string& from, int to_dirfd,
                               const std::string& to, uint64_t max_bytes);

}  // namespace sealrun::run
