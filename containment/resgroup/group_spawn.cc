// SPDX-License-Identifier: Apache-2.0
// Spawning held, placing in the group, releasing: see group_spawn.h.
#include "containment/resgroup/group_spawn.h"

namespace sealrun::resgroup {

void hold_for_group(SpawnOptions& o, const ResourceGroup& group) {
  o.join_cgroup_fds = group.join_fds();
  o.hold_until_release = true;
}

Status release_into_group(Child& child, ResourceGroup& group) {
  const bool joins_itself = !group.join_fds().empty();
  if (joins_itself) {
    Status released = child.release();
    if (!released) {
      child.kill_and_reap();
      return released;
    }
  }
  Status adopted = group.adopt(child.pid());
  if (!adopted) {
    child.kill_and_reap();
    return std::move(adopted).error().context("place it in the resource group");
  }
  if (!joins_itself) {
    Status released = child.release();
    if (!released) {
      child.kill_and_reap();
      return released;
    }
  }
  return ok_status();
}

}  // namespace sealrun::resgroup
