// SPDX-License-Identifier: Apache-2.0
// Internal to the bubblewrap mechanism (bwrap.cc, bwrap_probe.cc): finding bwrap and the identity
// to run it as, and the one place that turns a grant into a running bwrap process. Not part of the
// containment API.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "containment/bwrap.h"
#include "containment/grant.h"
#include "containment/job_etc.h"
#include "core/job_user.h"
#include "core/process.h"
#include "core/unique_fd.h"

namespace sealrun::bwrap_internal {

// The bwrap binary to use: options.bwrap_path if given (it must exist and be executable), else
// "bwrap" on PATH.
Result<std::string> resolve_bwrap(const BwrapOptions& options);
// The user to drop to: the job user when we are root, nullopt (run as ourselves) otherwise.
Result<std::optional<JobUser>> resolve_run_as(const BwrapOptions& options);

// A started sandbox: bwrap itself (our child) and the sandbox's init as bwrap reported it.
struct Launched {
  Child bwrap;
  UniqueFd status_read;     // --json-status-fd read end (non-blocking)
  std::string status_text;  // what has been read from it so far
  pid_t sandbox_pid = -1;   // "child-pid": the sandbox's PID 1, seen from the host
  UniqueFd sandbox_pidfd;   // pidfd of that process (may be invalid if it already exited)
};

// Opens the mount sources (as the controller, O_PATH), compiles the seccomp policy, builds the argv
// and spawns bwrap; joins `group` before exec (cgroup fds) or hands it the held pid (adopt), and
// waits until bwrap reports the sandbox's pid. Fails if bwrap exits before that. `etc`: the job's
// generated /etc files (job_etc.h), each handed to bwrap as a descriptor for --ro-bind-data.
Result<Launched> launch(const std::string& bwrap_path, const std::optional<JobUser>& run_as,
                        const Grant& grant, resgroup::ResourceGroup* group, const JobIo& io,
                        int64_t startup_timeout_ms, const std::vector<JobEtcFd>& etc = {});

// SIGKILL through a pidfd (no-op for -1): never a bare pid, so a recycled pid is never hit.
void pidfd_kill(int pidfd);
// Reads whatever is available on the status pipe into `l.status_text` (non-blocking).
void drain_status(Launched& l);
// The integer value of `"key": N` in bwrap's JSON status stream, if present.
std::optional<long> status_value(const std::string& text, const std::string& key);

}  // namespace sealrun::bwrap_internal
