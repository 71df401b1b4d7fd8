// SPDX-License-Identifier: Apache-2.0
// After the job: its standard streams (digested and tailed for the receipt, a bounded copy kept
// beside it) and the output list file. Reading is bounded by apparent size: a job can make its
// own stdout 100 GiB with one ftruncate(2), and that must cost no more than a small log does.
// The outputs themselves are walked by output_walk.h.
#pragma once

#include <string>
#include <vector>

#include "controller/common/state_dir.h"
#include "controller/receipt/receipt.h"
#include "core/result.h"

namespace sealrun::run {

// How much of a stream is read: its last 16 MiB at most. The receipt's digest covers those bytes
// (StreamRecord::read_bytes, `cut` when that is not all of it), and the copy kept is their end.
inline constexpr uint64_t kLogReadMaxBytes = 16ULL << 20;

// Digest of the last `max_read` bytes, apparent size and tail of a log file the job wrote: `name`
// in the directory `dirfd` (never a link).
Result<receipt::StreamRecord> summarise_stream(int dirfd, const std::string& name,
                                               uint64_t max_read = kLogReadMaxBytes);

// Copies the last `max_bytes` of `from` (in `from_dirfd`) to `to` (a new file in `to_dirfd`),
// neither of them a link. Returns the bytes copied.
Result<uint64_t> keep_log_tail(int from_dirfd, const std::string& from, int to_dirfd,
                               const std::string& to, uint64_t max_bytes);

// Writes results/<id>/outputs.jsonl: output_list_bytes(), atomically, beneath the held state
// directory. The receipt's outputs_list_sha256 is the SHA-256 of the same bytes
// (receipt_outputs.cc).
Status write_output_list(const StateDir& state, const std::string& results_root,
                         const std::vector<receipt::OutputRecord>& outputs);

}  // namespace sealrun::run
