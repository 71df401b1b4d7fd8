// SPDX-License-Identifier: Apache-2.0
// The run's owned space (docs/growth.md): where the host allows it
// (root, loop devices, ext4), a file system of its own mounted over the owned root, sized to
// limits.owned_max_bytes with limits.owned_max_inodes inodes, so the kernel refuses a write past
// the limit and the census samples it with one statfs; elsewhere the owned root stays a directory
// and the walking census guards it. The receipt's `owned_space` says which, and why not.
#pragma once

#include <cstdint>

#include "admission/document.h"
#include "controller/run/run_context.h"

namespace sealrun::run {

// limits.owned_max_inodes, or its default for limits.owned_max_bytes when not given.
uint64_t owned_max_inodes(const admission::Limits& limits);

// After the owned root is claimed and before the job's directories are made in it: mounts the
// owned file system over it when the host can (PipelineDeps::probe_owned_fs), and records
// `owned_space` either way. A file system that cannot be made leaves the directory (and says why):
// the census guards it as before, so no guarantee is lost.
void make_owned_space(RunContext& run);

// At cleanup, before the owned root is removed: unmounts and removes the file system, each step
// a cleanup action.
void remove_owned_space(RunContext& run);
// The same, its steps already taken (ownedfs::remove_owned_fs of run.owned_fs): only recorded.
void record_owned_space_removal(RunContext& run, const std::vector<ownedfs::Step>& steps);

}  // namespace sealrun::run
