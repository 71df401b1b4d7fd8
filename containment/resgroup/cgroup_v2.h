// SPDX-License-Identifier: Apache-2.0
// The delegated cgroup v2 back end: one child of the controller's own cgroup (found from the "0::"
// line of /proc/self/cgroup, on the cgroup2 mount at the cgroupfs root or at <root>/unified on a
// hybrid host). It respects the no-internal-processes rule: controllers are enabled in our
// cgroup.subtree_control only when our group holds no process but ourselves, and then we first
// move into a leaf of our own ("sealrun-controller-leaf.<pid>.<start>"); with other processes in
// our group it refuses and says why. Limits: memory.high, memory.max, memory.swap.max, pids.max,
// read back; stop by cgroup.kill and confirmation by "populated 0" in cgroup.events; the report
// from memory.peak and memory.events (high, max, oom, oom_kill).
//
// The development hosts cannot enforce with it (their memory controller is bound to cgroup v1):
// the file protocol is unit-tested against a directory tree shaped like cgroupfs, and enforcement
// is tested for real inside a pure-v2 VM (tests/resgroup/cgroup_v2_vm_test.cc).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "containment/resgroup/cgroupfs_io.h"
#include "containment/resgroup/resource_group.h"

namespace sealrun::resgroup {

inline constexpr std::string_view kControllerLeafRunId = "controller-leaf";

// Checks, without changing anything, that a cgroup2 mount exists, that our cgroup lists memory
// and pids in cgroup.controllers, and that a child can be made (a throwaway mkdir + rmdir).
BackendProbe probe_cgroup_v2(const CgroupfsSeams& seams = {});

Result<std::unique_ptr<ResourceGroup>> create_cgroup_v2_group(const std::string& run_id,
                                                              const GroupLimits& limits,
                                                              const CgroupfsSeams& seams = {});

// For sweep: re-opens a dead controller's group from its locator
// (<cgroupfs_root>[/unified]/.../sealrun-<name>); anything else is refused. A missing directory
// is reported through `gone` and yields a group with nothing to stop.
Result<std::unique_ptr<ResourceGroup>> attach_cgroup_v2_group(
    const std::vector<std::string>& locators, const CgroupfsSeams& seams,
    std::vector<std::string>* gone = nullptr);

// Where the cgroup2 hierarchy is, relative to the cgroupfs root: "" (pure v2) or "unified"
// (hybrid); an error when there is none.
Result<std::string> find_v2_mount(int rootfd, const CgroupfsSeams& seams);

}  // namespace sealrun::resgroup
