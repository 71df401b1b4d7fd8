// SPDX-License-Identifier: Apache-2.0
// ProcessRef: see process_ref.h.
#include "core/process_ref.h"

#include <fmt/format.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>

#include "core/proc.h"
#include "core/process.h"
#include "core/syscall.h"

namespace sealrun {

bool pidfd_exited_within(int pidfd, int64_t timeout_ms) {
  if (pidfd < 0) return true;
  int64_t deadline = monotonic_ms() + std::max<int64_t>(timeout_ms, 0);
  for (;;) {
    struct pollfd p {
      pidfd, POLLIN, 0
    };
    int64_t left = std::clamp<int64_t>(deadline - monotonic_ms(), 0, 1 << 30);
    int rc = ::poll(&p, 1, static_cast<int>(left));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return false;
  }
}

Result<ProcessRef> ProcessRef::from_pidfd(pid_t pid, UniqueFd pidfd, const std::string& proc_root) {
  if (pid <= 0 || !pidfd) return Error::make(fmt::format("no process {}", pid));
  ProcessRef ref;
  ref.pid_ = pid;
  ref.pidfd_ = std::move(pidfd);
  auto stat = read_proc_stat(pid, proc_root);
  // The pidfd was opened first: if the process it pins still runs after the read, the stat read
  // was that process's own and not a successor's on a recycled pid.
  if (!stat || pidfd_send_signal_raw(ref.pidfd_.get(), 0) != 0)
    return Error::make(fmt::format("process {} is not running", pid));
  if (stat->dead()) return Error::make(fmt::format("process {} has exited", pid));
  ref.starttime_ = stat->starttime;
  return ref;
}

Result<ProcessRef> ProcessRef::from_pid(pid_t pid, const std::string& proc_root) {
  if (pid <= 0) return Error::make(fmt::format("no process {}", pid));
  UniqueFd fd(pidfd_open_raw(pid, 0));
  if (!fd) return Error::from_errno(fmt::format("pidfd_open {}", pid));
  return from_pidfd(pid, std::move(fd), proc_root);
}

bool ProcessRef::exited_within(int64_t timeout_ms) const {
  return pidfd_exited_within(pidfd_.get(), timeout_ms);
}

Status ProcessRef::signal(int sig) const {
  if (!valid()) return Error::make("no process to signal");
  if (pidfd_send_signal_raw(pidfd_.get(), sig) == 0 || errno == ESRCH) return ok_status();
  return Error::from_errno(fmt::format("signal {} to process {}", sig, pid_));
}

}  // namespace sealrun
