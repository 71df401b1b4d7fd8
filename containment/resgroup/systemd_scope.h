// SPDX-License-Identifier: Apache-2.0
// The systemd back end: a transient scope created over sd-bus (StartTransientUnit) with
// MemoryHigh, MemoryMax, MemorySwapMax, TasksMax and Delegate=yes, holding the job's pid. What the
// manager actually applied is read back from its properties and the cgroup files; on a cgroup v1
// host MemoryHigh and MemorySwapMax are not applied, and the read-back says so.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "containment/resgroup/resource_group.h"

namespace sealrun::resgroup {

struct SystemdTarget {
  // sd-bus address of the manager's bus, e.g. "unix:path=/run/dbus/system_bus_socket"; empty:
  // the default system bus (or the user bus when not root).
  std::string bus_address;
  // Where that manager's cgroup hierarchies are visible to us (for reading limits and events
  // back), e.g. "/sys/fs/cgroup" or "<root>/sys/fs/cgroup" for a manager in another mount ns.
  std::string cgroupfs_root = "/sys/fs/cgroup";
};

BackendProbe probe_systemd(const SystemdTarget& target = {});
Result<std::unique_ptr<ResourceGroup>> create_systemd_group(const std::string& run_id,
                                                            const GroupLimits& limits,
                                                            const SystemdTarget& target = {});

// For `sealrun sweep`. The sealrun scopes ("sealrun-*.scope") the manager has loaded, whatever run
// made them; units of any other name are never listed.
Result<std::vector<std::string>> list_sealrun_scopes(const SystemdTarget& target = {});
// Stops a scope a killed controller left (TERM, grace_ms, KILL, StopUnit, confirmed empty) and
// waits until the manager has unloaded it. Refuses any unit name not of the form
// "sealrun-<run id>.scope". A unit that is already gone is reported as confirmed.
Result<StopReport> stop_leftover_scope(const std::string& unit, int64_t grace_ms,
                                       const SystemdTarget& target = {});

}  // namespace sealrun::resgroup
