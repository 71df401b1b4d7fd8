// SPDX-License-Identifier: Apache-2.0
// Who runs podman and how: rootless podman must run as the unprivileged job user (a name the
// controller passes in) when the controller is root, and as the caller otherwise, always with a
// cleared environment (podman_environment()). This file owns that identity and the one helper that
// runs a podman subcommand to completion with bounded output and a timeout.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "containment/podman_argv.h"
#include "core/job_user.h"
#include "core/process.h"
#include "core/result.h"

namespace sealrun::podman {

// Who runs podman: the named job user when the controller is root (setuid before exec), else the
// caller itself.
Result<JobUser> resolve_job_user(const std::string& configured_name);

// Spawn options for `argv` as the job user with podman's cleared environment.
SpawnOptions as_job_user(const JobUser& user, const StorageLayout& layout,
                         std::vector<std::string> argv);

// Runs argv as the job user (in `cwd`, default "/"); a non-zero exit becomes an error that quotes
// podman's stderr.
Result<Captured> run_as_job_user(const JobUser& user, const StorageLayout& layout,
                                 std::vector<std::string> argv, int64_t timeout_ms,
                                 const std::string& cwd = {});
Result<std::string> podman_output(const JobUser& user, const StorageLayout& layout,
                                  std::vector<std::string> argv, int64_t timeout_ms);

// If the controller is SIGKILLed mid-run, its podman process dies with it (die_with_parent) but
// conmon and the container do not: they were double-forked away from podman. The watchdog is a
// small shell, started as the job user before `podman run`, that blocks reading a pipe whose only
// write end the controller holds (CLOEXEC, so no other child inherits it). A normal finish
// writes "done" and the watchdog exits; EOF without "done" means the controller is gone, and the
// watchdog runs `podman rm -f` on the run's container (twice, a second apart, in case podman was
// still creating it), which ends every process in the container's PID namespace.
class Watchdog {
 public:
  Watchdog() = default;
  Watchdog(Child child, UniqueFd write_end)
      : child_(std::move(child)), write_end_(std::move(write_end)) {}
  // Tells the watchdog the run ended normally and reaps it.
  Status disarm();
  pid_t pid() const { return child_.pid(); }

 private:
  Child child_;
  UniqueFd write_end_;
};
Result<Watchdog> start_watchdog(const JobUser& user, const StorageLayout& layout,
                                const HostFacts& facts, const std::string& run_id);

// "podman load --quiet --input ...": the subcommand without the global flags, for messages.
std::string describe_command(const std::vector<std::string>& argv);
// The last non-empty line of podman's stderr, trimmed: its "Error: ..." message; for `podman
// load`'s list of every transport's complaint, the complaints that are not about the format.
std::string last_stderr_line(const std::string& err);

}  // namespace sealrun::podman
