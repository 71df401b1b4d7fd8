// SPDX-License-Identifier: Apache-2.0
// Which of the run's limits the job reached, for the receipt's `limits_hit`: the figures come from
// where each limit is enforced — the resource group's counters (pids.events "max": forks refused at
// pids.max; memory failcnt / memory.events "max" and OOM kills), the growth census (a guard that
// tripped), the owned and result file systems (full when the job ended: under 1 MiB or no inode
// left) and the job's wall clock. A limit reached is not by itself a failure (a build may retry a
// refused fork); the receipt says it happened so that a reader need not guess.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "controller/run/run_context.h"

namespace sealrun::run {

struct LimitsSeen {
  uint64_t pids_refused = 0;       // pids.events "max"
  uint64_t memory_max_events = 0;  // memory limit hits (v1 failcnt, v2 memory.events "max")
  uint64_t oom_kills = 0;
  bool growth_guard = false;       // a census guard on a limit (not census_failed) tripped
  bool owned_space_full = false;   // the owned file system was full when the job ended
  bool result_space_full = false;  // the result file system (/out) likewise
  bool wall_clock = false;         // the job ran out of limits.wall_clock_s
};

// In a fixed order: "pids", "memory", "growth", "owned_space", "result_space", "wall_clock".
std::vector<std::string> limits_hit(const LimitsSeen& seen);

// Before the owned and result file systems are removed (their fullness is read here) and after
// the group's counters are read: fills run.receipt.limits_hit.
void record_limits_hit(RunContext& run);

}  // namespace sealrun::run
