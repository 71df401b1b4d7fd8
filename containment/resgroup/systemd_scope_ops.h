// SPDX-License-Identifier: Apache-2.0
// Operations on a systemd scope known only by its unit name and control group, shared by the
// back end's own ResourceGroup (systemd_scope.cc) and by `sealrun sweep` for scopes a killed
// controller left: the confirmed stop (KillUnit TERM, grace, KillUnit KILL, StopUnit, the cgroup
// seen empty), waiting until the manager has unloaded the unit, and reading the scope's small
// cgroup interface files.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "containment/resgroup/resource_group.h"
#include "containment/resgroup/sd_bus_manager.h"
#include "containment/resgroup/systemd_readback.h"
#include "core/result.h"

namespace sealrun::resgroup::systemd {

// A small cgroup interface file (no symlink followed), or nullopt when absent or unreadable.
std::optional<std::string> read_cgroup_text(const std::string& path);
// The pids in a cgroup.procs file; nullopt when the group is gone.
std::optional<std::vector<pid_t>> read_cgroup_procs(const std::string& path);
// The file listing the scope's processes: on v1 the name=systemd hierarchy's, which systemd keeps
// every unit in; on v2 the unit's own group.
std::string scope_procs_file(CgroupMode mode, const std::string& cgroupfs_root,
                             const std::string& control_group);
// "/sys/fs/cgroup" is cgroup2 → kUnified; anything else (a tmpfs of v1 hierarchies) → kLegacy.
CgroupMode detect_cgroup_mode(const std::string& cgroupfs_root);

struct ScopeStopHooks {
  pid_t keeper = -1;                  // not counted as the job's, and expected to ignore TERM
  std::function<void()> before_kill;  // runs after TERM and grace, right before SIGKILL
  std::function<void()> after_kill;   // runs right after SIGKILL (e.g. reap the keeper)
};

// TERM to every process of the unit, up to grace_ms for them to go, KILL, StopUnit if the unit is
// still loaded, then waits (bounded) until procs_file lists nothing or is gone.
StopReport stop_scope(SystemdManagerClient& client, const std::string& unit,
                      const std::string& procs_file, int64_t grace_ms, const ScopeStopHooks& hooks);

// Waits (bounded) until the manager no longer has `unit` loaded (resetting it if it failed) and
// procs_file is gone.
Status wait_scope_gone(SystemdManagerClient& client, const std::string& unit,
                       const std::string& procs_file);

}  // namespace sealrun::resgroup::systemd
