// SPDX-License-Identifier: Apache-2.0
// Starting a process inside a resource group, with no moment in which it may run outside it: the
// child is spawned held (it stops before exec), placed in the group, and only then released. Both
// containment mechanisms start their launcher (bwrap, podman) this way.
#pragma once

#include "containment/resgroup/resource_group.h"
#include "core/process.h"

namespace sealrun::resgroup {

// Sets `o` so that the child is held before exec and, on cgroupfs back ends, joins `group` itself
// (writing to the group's cgroup.procs descriptors) before it execs.
void hold_for_group(SpawnOptions& o, const ResourceGroup& group);

// Places the held `child` in `group` and releases it. A child that joins by itself is released
// first and adopt() only confirms; adopting it before raced the child's own join and moved it
// through cgroup.procs, whose write waits for an RCU grace period (5-16 ms per run here). systemd
// (no join descriptors) gets the held pid for its scope before the child may exec. On failure the
// child is killed and reaped.
Status release_into_group(Child& child, ResourceGroup& group);

}  // namespace sealrun::resgroup
