// SPDX-License-Identifier: Apache-2.0
// The mount stage of a rootless bwrap run started by root: a private mount namespace, made for
// one bwrap process, in which the controller-opened mount sources are reachable by the job user at
// fixed paths (STAGE/0, STAGE/1, ...). bwrap 0.8 resolves every bind source as the job user by
// path, and a repository under /root is out of its reach; so the sources are opened by the
// controller (O_PATH, no symlink as the last component), cloned as detached mounts (open_tree),
// and attached in the private namespace on a small tmpfs — all with syscalls in one short-lived
// child of ours, no shell and no mount/mkdir binaries. The host's mount table is never touched;
// the namespace lives as long as a descriptor to it does (the caller passes it to bwrap's spawn,
// SpawnOptions::mount_ns_fd) and vanishes with bwrap.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun::bwrap_internal {

struct MountStage {
  UniqueFd mount_ns;                // the staged namespace (/proc/<child>/ns/mnt, O_CLOEXEC)
  std::vector<std::string> points;  // where source i is inside it
};

// Stages `sources` (O_PATH descriptors, in order). Fails naming the step and the source.
Result<MountStage> stage_mounts(const std::vector<UniqueFd>& sources);

// The canonical path a descriptor refers to (it must be reachable by a path).
Result<std::string> fd_path(int fd);

}  // namespace sealrun::bwrap_internal
