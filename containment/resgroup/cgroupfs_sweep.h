// SPDX-License-Identifier: Apache-2.0
// Sweeping resource groups a killed controller left behind (used by `sealrun sweep`). Two ways in:
// the groups named in a grant record (each locator is checked to be a sealrun group whose name,
// re-derived from the record's run id, controller pid and starttime, matches exactly), and a scan
// of our own cgroup subtrees for "sealrun-*" groups whose creator — named in the group's own name —
// is no longer alive. A group whose creator lives is never touched; a name sealrun does not make
// is never touched. Each group is stopped (TERM, grace, KILL, confirmed empty) and removed.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "containment/resgroup/cgroupfs_io.h"
#include "core/sweep_step.h"

namespace sealrun::resgroup {

using sealrun::SweepStep;

// The groups of one record. `backend` is resgroup::backend_name() of the record ("cgroup-v1",
// "cgroup-v2"; "systemd" is handled by the systemd back end's stop_leftover_scope).
std::vector<SweepStep> sweep_recorded_groups(const std::string& backend,
                                             const std::vector<std::string>& locators,
                                             const std::string& run_id, pid_t controller_pid,
                                             const std::string& controller_start, int64_t grace_ms,
                                             const CgroupfsSeams& seams = {});

// Every "sealrun-*" child of our own groups (v1 memory, pids, freezer; the v2 group) whose
// creator is dead. Groups of live creators and names sealrun does not make are left alone (and
// not reported as left over: they are not provably ours to remove).
std::vector<SweepStep> sweep_stray_groups(int64_t grace_ms, const CgroupfsSeams& seams = {});

}  // namespace sealrun::resgroup
