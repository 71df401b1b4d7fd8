// SPDX-License-Identifier: Apache-2.0
// ProcessRef: one process named without ambiguity, in the manner of systemd's PidRef — its pid, a
// pidfd that pins it (signals through the pidfd can never hit a successor on a recycled pid), and
// its start time, so that a pid read from a record (a grant journal, a cgroup) can be proved to be
// the same process that was recorded. Waiting polls the pidfd without reaping, so it is safe next
// to a waitid() in another thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun {

class ProcessRef {
 public:
  ProcessRef() = default;
  ProcessRef(ProcessRef&&) = default;
  ProcessRef& operator=(ProcessRef&&) = default;

  // Pins a running process: opens its pidfd, then reads its start time and checks through the
  // pidfd that the process read is still the one pinned. Fails when no such process runs.
  static Result<ProcessRef> from_pid(pid_t pid, const std::string& proc_root = "/proc");
  // Takes over a pidfd the caller already holds (e.g. a Child's); the start time is read once.
  static Result<ProcessRef> from_pidfd(pid_t pid, UniqueFd pidfd,
                                       const std::string& proc_root = "/proc");

  pid_t pid() const { return pid_; }
  int pidfd() const { return pidfd_.get(); }
  const std::string& starttime() const { return starttime_; }
  bool valid() const { return pid_ > 0 && pidfd_.get() >= 0; }

  // True when this is the process recorded as {pid, starttime}.
  bool is_same(pid_t pid, const std::string& starttime) const {
    return valid() && pid == pid_ && !starttime.empty() && starttime == starttime_;
  }
  // Whether it has exited (it may still be an unreaped zombie) within `timeout_ms` (0: now).
  bool exited_within(int64_t timeout_ms) const;
  // pidfd_send_signal(2); an exited process is not an error (nothing to signal).
  Status signal(int sig) const;

 private:
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  std::string starttime_;
};

// Polls `pidfd` for exit for at most `timeout_ms` (0: a check now), without reaping. A negative
// pidfd counts as exited.
bool pidfd_exited_within(int pidfd, int64_t timeout_ms);

}  // namespace sealrun
