// One growth-census observation and the decimation that keeps a long run's samples bounded: the
// first and last samples and the peak of each series always survive, the rest are thinned evenly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace sealrun::census {

// "No bound": the room left in an owned space that is a directory on a shared filesystem (its
// limit is the guard's, not the kernel's), or a free-space figure that could not be read.
inline constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();

struct Sample {
  int64_t t_ms = 0;           // since the census started
  uint64_t owned_bytes = 0;   // allocated bytes of the owned tree (its own file system: used bytes)
  uint64_t result_bytes = 0;  // allocated bytes of the result tree
  uint64_t free_bytes = 0;    // free bytes on the host filesystem that holds the state directory
  uint64_t owned_inodes = 0;  // inodes of the owned tree (its own file system: inodes in use)
  // What the owned space can still take before the kernel answers ENOSPC: kUnbounded for a
  // directory; statfs's f_bavail bytes and f_ffree inodes for a file system of its own.
  uint64_t owned_room_bytes = kUnbounded;
  uint64_t owned_room_inodes = kUnbounded;
  // The resource group's memory in use at the sample (cgroup v2 memory.current, v1
  // memory.usage_in_bytes); nullopt when the run has no group or it could not be read. Not a
  // guard's figure, so a missing reading never makes the sample unmeasured.
  std::optional<uint64_t> memory_bytes;
  // Empty when every figure was measured; otherwise why not (the figures are then lower bounds,
  // or kUnbounded for a free space that could not be read). An unmeasured sample is a census
  // failure (CensusThread reports it as the trip "census_failed").
  std::string unmeasured;

  bool measured() const { return unmeasured.empty(); }
};

// Keeps at most `keep` samples (at least first, last and the peaks: up to 7). Returns how many
// were dropped.
uint64_t decimate_samples(std::vector<Sample>& samples, size_t keep);

}  // namespace sealrun::census
