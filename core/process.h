// SPDX-License-Identifier: Apache-2.0
// Child processes: spawning with a fixed, async-signal-safe sequence between fork and exec, and
// owning the result as pid + pidfd (systemd's PidRef). Signals go through the pidfd, never a bare
// pid, so a recycled pid can never be hit. A Child that is dropped without being waited for is
// killed and reaped (crun's rule), so no exit path leaves a stray process.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun {

struct ExitStatus {
  int code = -1;   // exit code when the child exited normally, else -1
  int signal = 0;  // terminating signal, else 0
  bool core_dumped = false;
  bool success() const { return code == 0 && signal == 0; }
  std::string describe() const;  // "exit 3" / "signal 9 (Killed)"
};

struct SpawnOptions {
  // argv[0] is the program path; it is executed as given (execve; no PATH search).
  std::vector<std::string> argv;
  // The complete environment; nullopt keeps the caller's environment.
  std::optional<std::vector<std::string>> env;
  std::string cwd;  // empty: stay where the caller is
  // Standard streams: -1 means /dev/null. The descriptors are dup2'ed, so the caller keeps its own.
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  // Further descriptors to pass on: {caller's fd, fd number in the child}. Everything else above 2
  // is closed (close_range) before exec, CLOEXEC or not.
  std::vector<std::pair<int, int>> pass_fds;
  // Drop to this identity before exec (setgroups(0), setgid, setuid), when the caller is root.
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
  bool new_session = false;      // setsid(): no controlling terminal, so no TIOCSTI into ours
  bool die_with_parent = false;  // PR_SET_PDEATHSIG(death_signal)
  // What die_with_parent delivers. SIGTERM suits a child that stops its own work cleanly (a
  // `sealrun run` writes its receipt). The kernel sends it when the *thread* that spawned the
  // child exits (prctl(2)), so spawn from a thread that outlives the child.
  int death_signal = SIGKILL;
  // Descriptors of cgroup.procs files (opened by the caller, O_WRONLY); the child writes "0" into
  // each before exec, which moves itself into that group before any job code runs.
  std::vector<int> join_cgroup_fds;
  // Stop before exec until Child::release(): lets the caller place the pid somewhere (a systemd
  // scope) before the program starts.
  bool hold_until_release = false;
  // The child's umask before exec (inherited by everything it starts); nullopt keeps the caller's.
  std::optional<mode_t> umask;
  // A mount namespace (an nsfs descriptor) to enter before dropping identity (setns), e.g. one
  // holding a run's staged mounts; -1: stay in the caller's.
  int mount_ns_fd = -1;
  // A new UTS namespace whose NIS domain name is this, made before dropping identity (it needs
  // CAP_SYS_ADMIN: a root caller); every UTS namespace the program makes copies it. Empty: the
  // caller's.
  std::string domainname;
  // personality(2) of the child just before exec (UNAME26, ADDR_NO_RANDOMIZE); it survives exec of
  // any program that is not set-id. nullopt: the caller's.
  std::optional<unsigned long> personality;
};

class Child {
 public:
  Child() = default;
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t pid() const { return pid_; }
  int pidfd() const { return pidfd_.get(); }
  bool running() const { return pid_ > 0 && !reaped_; }

  // For a held child: lets it continue to exec and reports whether exec succeeded.
  Status release();
  // pidfd_send_signal(2).
  Status signal(int sig) const;
  // Waits for exit and reaps. `usage`, when given, receives the child's resource usage with that
  // of its waited-for descendants (wait4(2)'s rusage).
  Result<ExitStatus> wait(struct rusage* usage = nullptr);
  // Waits at most timeout_ms; nullopt if still running.
  Result<std::optional<ExitStatus>> wait_for(int64_t timeout_ms, struct rusage* usage = nullptr);
  // SIGKILL and reap; safe to call on an already-reaped child.
  void kill_and_reap();

 private:
  friend Result<Child> spawn(const SpawnOptions& options);
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  UniqueFd release_fd_;  // write end the held child waits on
  UniqueFd report_fd_;   // read end of the {step, errno} report pipe
  bool reaped_ = false;
  std::string program_;
};

// pidfd_open(2) / pidfd_send_signal(2) without glibc's wrappers (see process.cc).
int pidfd_open_raw(pid_t pid, unsigned flags);
int pidfd_send_signal_raw(int pidfd, int sig);

// Forks and execs. Unless hold_until_release is set, returns only after exec succeeded (or with
// the failing step and its errno: "spawn /usr/bin/bwrap: setuid: Operation not permitted").
Result<Child> spawn(const SpawnOptions& options);

// Runs a helper program to completion, capturing stdout and stderr (each capped at max_output
// bytes; the rest is drained and dropped) and killing it after timeout_ms.
struct Captured {
  ExitStatus status;
  std::string out;
  std::string err;
  bool timed_out = false;
};
Result<Captured> run_capture(SpawnOptions options, int64_t timeout_ms,
                             size_t max_output = 1024 * 1024);

// The descendants of `root` (from /proc/<pid>/task/*/children; Linux >= 3.5 with
// CONFIG_PROC_CHILDREN), at most `max` of them. A snapshot: processes come and go meanwhile.
std::vector<pid_t> process_descendants(pid_t root, size_t max = 65536);

// Looks a program up on $PATH (or the standard system directories when PATH is unset);
// returns an absolute path.
Result<std::string> find_program(const std::string& name);

}  // namespace sealrun
