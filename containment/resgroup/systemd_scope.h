// The systemd back end: a transient scope created over sd-bus (StartTransientUnit) with
// MemoryHigh, MemoryMax, MemorySwapMax, TasksMax and Delegate=yes, holding the job's pid. What the
// manager actually applied is read back from its properties and the cgroup files; on a cgroup v1
// host MemoryHigh and MemorySwapMax are not applied, and the read-back says so.
#pragma once

#include <memory>
#include <string>

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

}  // namespace sealrun::resgroup
