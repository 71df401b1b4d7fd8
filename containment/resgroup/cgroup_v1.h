// SPDX-License-Identifier: Apache-2.0
// The cgroup v1 back end: one child group per hierarchy (memory, pids, freezer), each created
// under the controller's own group in that hierarchy and nowhere else. Limits:
// memory.limit_in_bytes (memory_max), memory.memsw.limit_in_bytes (memory_max + swap_max; absent
// when swap accounting is off, and the read-back says so), memory.soft_limit_in_bytes as the
// nearest thing to memory.high (v1 has no throttling high: reported as not applied), pids.max. The
// race-free kill freezes the group, SIGKILLs every member by pidfd, thaws, and waits until
// cgroup.procs is empty.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "containment/resgroup/cgroupfs_io.h"
#include "containment/resgroup/resource_group.h"

namespace sealrun::resgroup {

// The hierarchies the v1 back end needs, in the order they are created.
inline const std::vector<std::string>& v1_controllers() {
  static const std::vector<std::string> k{"memory", "pids", "freezer"};
  return k;
}

// Tries it: makes and removes a throwaway group in each hierarchy, writing a limit and reading it
// back. Never touches an existing group.
BackendProbe probe_cgroup_v1(const CgroupfsSeams& seams = {});

// Creates <root>/<controller>/<own path>/sealrun-<run_id>.<pid>.<starttime> in each hierarchy and
// writes the limits. On failure, whatever was made is removed again.
Result<std::unique_ptr<ResourceGroup>> create_cgroup_v1_group(const std::string& run_id,
                                                              const GroupLimits& limits,
                                                              const CgroupfsSeams& seams = {});

// Re-opens groups another (dead) controller made, from its recorded locators, for stop() and
// remove(). Each locator must be <cgroupfs_root>/<memory|pids|freezer>/.../sealrun-<name> with a
// name sealrun makes; anything else is refused. A locator whose directory is already gone is
// skipped (and listed in `gone`).
Result<std::unique_ptr<ResourceGroup>> attach_cgroup_v1_group(
    const std::vector<std::string>& locators, const CgroupfsSeams& seams,
    std::vector<std::string>* gone = nullptr);

}  // namespace sealrun::resgroup
