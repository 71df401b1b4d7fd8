// SPDX-License-Identifier: Apache-2.0
// The closure files a bwrap job sees are the very files that were hashed (docs/view.md,
// "Verification"). Each learned host file is hashed through the descriptor it was opened by
// (admission/verify.h records its device and inode); bwrap then binds it by path, so a file
// swapped on the host between the hash and the bind would reach the job unverified. The check
// closes that window where it ends: once bwrap has set up the sandbox and before the command's
// first instruction (JobIo::on_sandbox_ready), each closure file is looked at inside the job's own
// root (/proc/PID/root) — what was bound — and its device and inode must be the hashed file's.
// A bind mount shares its file system's superblock, so the identity is the host file's.
//
// Podman offers no such moment (it cannot hold a container between setup and command); under
// podman the post-job re-check (run_stage_post.cc) is what catches a swapped closure file.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>

#include "admission/verify.h"
#include "core/result.h"

namespace sealrun::run {

using ClosureIdentities = std::map<std::string, admission::FileIdentity>;

// Every closure file of `hashed` as bound in the sandbox whose PID 1 (as bwrap reported it) is
// `sandbox_pid`: an error naming each file that is not the one hashed (at most five, then a
// count), or that cannot be looked at.
Status check_closure_bound(pid_t sandbox_pid, const ClosureIdentities& hashed);

// The same, seen below `root` (a directory standing for the job's root): the testable core.
Status check_closure_bound_below(const std::string& root, const ClosureIdentities& hashed);

}  // namespace sealrun::run
