// After the job: what it left in /out (the outputs, hashed), and its standard streams (hashed,
// with a tail for the receipt, and a bounded copy kept beside the receipt).
#pragma once

#include <string>
#include <vector>

#include "controller/receipt.h"
#include "core/result.h"
#include "fingerprint/source.h"

namespace sealrun::run {

struct CollectedOutputs {
  std::vector<receipt::OutputRecord> outputs;  // regular files, sorted by path
  std::vector<std::string> ignored;            // other kinds, e.g. "link -> target (symlink)"
  uint64_t total_bytes = 0;
};

// Walks `output_dir` without following symlinks; hashes every regular file (race-checked).
Result<CollectedOutputs> collect_outputs(const std::string& output_dir,
                                         size_t max_entries = 100000);

// Admission mounts.outputs_from "source": moves every regular file of `source_root` (the run's
// private, writable copy of the source) that is new or differs from `manifest` (path, size,
// SHA-256) to the same relative path under `output_dir`, where collect_outputs() then finds it
// among the outputs. Returns how many were moved. A path taken in `output_dir` already (the job
// wrote it to both places) is an error; symlinks and other kinds are left where they are.
Result<size_t> move_changed_files(const std::string& source_root, const Manifest& manifest,
                                  const std::string& output_dir, size_t max_entries = 100000);

// Digest, size and tail of a log file the job wrote.
Result<receipt::StreamRecord> summarise_stream(const std::string& path);

// Copies the last `max_bytes` of `from` to `to` (a new file). Returns the bytes copied.
Result<uint64_t> keep_log_tail(const std::string& from, const std::string& to, uint64_t max_bytes);

}  // namespace sealrun::run
