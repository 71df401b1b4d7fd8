// SPDX-License-Identifier: Apache-2.0
// limits_hit(), record_limits_hit(): see limits_hit.h.
#include "controller/run/limits_hit.h"

#include "census/fs_usage.h"
#include "census/guards.h"

namespace sealrun::run {

std::vector<std::string> limits_hit(const LimitsSeen& seen) {
  std::vector<std::string> out;
  if (seen.pids_refused > 0) out.push_back("pids");
  if (seen.memory_max_events > 0 || seen.oom_kills > 0) out.push_back("memory");
  if (seen.growth_guard) out.push_back("growth");
  if (seen.owned_space_full) out.push_back("owned_space");
  if (seen.result_space_full) out.push_back("result_space");
  if (seen.wall_clock) out.push_back("wall_clock");
  return out;
}

namespace {

bool full(const std::optional<ownedfs::OwnedFs>& fs) {
  if (!fs) return false;
  auto usage = census::measure_filesystem(fs->mount_point, fs->device);
  return usage && (usage->room_bytes < census::kFullRoomBytes || usage->room_inodes == 0);
}

}  // namespace

void record_limits_hit(RunContext& run) {
  LimitsSeen seen;
  seen.pids_refused = run.pids_refused;
  if (run.receipt.memory) {
    seen.memory_max_events = run.receipt.memory->events_max;
    seen.oom_kills = run.receipt.memory->events_oom_kill;
  }
  seen.growth_guard = run.receipt.guard && run.receipt.guard->name != census::kCensusFailed;
  seen.owned_space_full = full(run.owned_fs);
  seen.result_space_full = full(run.result_fs);
  for (const auto& c : run.receipt.commands) seen.wall_clock = seen.wall_clock || c.timed_out;
  run.receipt.limits_hit = limits_hit(seen);
}

}  // namespace sealrun::run
