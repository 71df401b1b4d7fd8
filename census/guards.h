// SPDX-License-Identifier: Apache-2.0
// The growth guards as a pure decision: given the admitted limits and one observation, which guard
// (if any) trips. Checked in a fixed order so the receipt names the same guard for the same facts.
//
// Where the owned space is a file system of its own (sized to owned_max_bytes with
// owned_max_inodes inodes), the kernel refuses the write that would pass the limit (ENOSPC) and
// the byte figure never reaches the limit; the guard then trips as "owned space full" when the
// room statfs reports falls below kFullRoomBytes (or no inode is left), with the observed figures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "census/sample.h"

namespace sealrun::census {

// The trip a census reports when it could not measure (CensusThread; never evaluate_guards).
inline constexpr const char* kCensusFailed = "census_failed";
// A file system of its own with less room than this counts as full: a writer has met (or is about
// to meet) ENOSPC. One MiB: larger than any single allocation ext4 refuses at the end of a disk.
inline constexpr uint64_t kFullRoomBytes = 1 << 20;

struct GuardLimits {
  uint64_t owned_max_bytes = 8ULL << 30;   // owned tree must stay below
  uint64_t result_max_bytes = 1ULL << 30;  // result tree must stay below
  uint64_t free_min_bytes = 1ULL << 30;    // free space must stay at or above
  uint64_t ceiling_bytes = 10ULL << 30;    // owned + result + reserve must stay at or below
  uint64_t reserve_bytes = 512ULL << 20;
  uint64_t owned_max_inodes = 1ULL << 20;  // inodes of the owned tree must stay below
};

struct GuardTrip {
  std::string name;  // the admission's limit key ("owned_max_bytes", ...) or kCensusFailed
  uint64_t limit = 0;
  uint64_t observed = 0;
  int64_t t_ms = 0;
  std::string detail;  // "the owned file system is full: ...", or why the census could not measure
  bool census_failed() const { return name == kCensusFailed; }
  // "owned_max_bytes: observed 9000 bytes, limit 8000 bytes (at 12 ms)", then the detail if any.
  std::string describe() const;
};

std::optional<GuardTrip> evaluate_guards(const GuardLimits& limits, const Sample& sample);

}  // namespace sealrun::census
