// SPDX-License-Identifier: Apache-2.0
// spawn(), Child and run_capture(): see process.h.
//
// Between fork and exec the child may only make async-signal-safe calls (the parent may have
// threads holding malloc or stdio locks), so every string is turned into a char* array before fork
// and the child reports a failure as a fixed {step, errno} record over a CLOEXEC pipe: EOF on that
// pipe means exec succeeded.
#include "core/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "core/proc.h"
#include "core/syscall.h"

namespace sealrun {

// glibc 2.36's <sys/pidfd.h> lacks extern "C" (fixed in 2.37), so C++ cannot link its wrappers;
// call the system calls directly. Obsolete once the build glibc is >= 2.37.
int pidfd_open_raw(pid_t pid, unsigned flags) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, flags));
}
int pidfd_send_signal_raw(int pidfd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

std::string ExitStatus::describe() const {
  if (signal != 0) return fmt::format("signal {} ({})", signal, ::strsignal(signal));
  return fmt::format("exit {}", code);
}

namespace {

enum class Step : int {
  kNone = 0,
  kDevNull,
  kDupStdio,
  kDupPassed,
  kCloseRange,
  kDeathSig,
  kSetsid,
  kCgroup,
  kHold,
  kSetns,
  kDomainname,
  kPersonality,
  kSetgroups,
  kSetgid,
  kSetuid,
  kChdir,
  kExec,
};

const char* step_name(Step step) {
  switch (step) {
    case Step::kDevNull:
      return "open /dev/null";
    case Step::kDupStdio:
      return "dup2 standard streams";
    case Step::kDupPassed:
      return "dup2 passed descriptor";
    case Step::kCloseRange:
      return "close_range";
    case Step::kDeathSig:
      return "prctl(PR_SET_PDEATHSIG)";
    case Step::kSetsid:
      return "setsid";
    case Step::kCgroup:
      return "join cgroup";
    case Step::kHold:
      return "wait for release";
    case Step::kSetns:
      return "setns (mount namespace)";
    case Step::kDomainname:
      return "unshare the UTS namespace and set its domain name";
    case Step::kPersonality:
      return "personality";
    case Step::kSetgroups:
      return "setgroups";
    case Step::kSetgid:
      return "setgid";
    case Step::kSetuid:
      return "setuid";
    case Step::kChdir:
      return "chdir";
    case Step::kExec:
      return "execve";
    case Step::kNone:
      break;
  }
  return "unknown step";
}

struct Report {
  int step;
  int err;
};

[[noreturn]] void child_fail(int report_fd, Step step) {
  Report r{static_cast<int>(step), errno};
  (void)!::write(report_fd, &r, sizeof r);
  ::_exit(127);
}

// Moves fd to a number above every target fd so that dup2 into 0..N cannot clobber it.
int lift_fd(int fd, int floor) { return ::fcntl(fd, F_DUPFD_CLOEXEC, floor); }

[[noreturn]] void child_main(const SpawnOptions& o, char* const* argv, char* const* envp,
                             const char* cwd, int report_fd, int release_fd, pid_t parent) {
  // Every descriptor we still need is lifted above all targets first.
  int floor = 3;
  for (const auto& p : o.pass_fds) floor = std::max(floor, p.second + 1);
  report_fd = lift_fd(report_fd, floor);
  if (report_fd < 0) ::_exit(126);
  if (release_fd >= 0 && (release_fd = lift_fd(release_fd, floor)) < 0)
    child_fail(report_fd, Step::kDupPassed);
  int mount_ns_fd = o.mount_ns_fd;
  if (mount_ns_fd >= 0 && (mount_ns_fd = lift_fd(mount_ns_fd, floor)) < 0)
    child_fail(report_fd, Step::kDupPassed);

  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) child_fail(report_fd, Step::kDevNull);
  devnull = lift_fd(devnull, floor);
  int in = o.stdin_fd >= 0 ? o.stdin_fd : devnull;
  int out = o.stdout_fd >= 0 ? o.stdout_fd : devnull;
  int err = o.stderr_fd >= 0 ? o.stderr_fd : devnull;
  in = lift_fd(in, floor);
  out = lift_fd(out, floor);
  err = lift_fd(err, floor);
  if (in < 0 || out < 0 || err < 0) child_fail(report_fd, Step::kDupStdio);
  int lifted_passed[64];
  size_t npass = std::min<size_t>(o.pass_fds.size(), 64);
  for (size_t i = 0; i < npass; ++i) {
    lifted_passed[i] = lift_fd(o.pass_fds[i].first, floor);
    if (lifted_passed[i] < 0) child_fail(report_fd, Step::kDupPassed);
  }
  for (size_t i = 0; i < npass; ++i)
    if (::dup2(lifted_passed[i], o.pass_fds[i].second) < 0) child_fail(report_fd, Step::kDupPassed);
  if (::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0)
    child_fail(report_fd, Step::kDupStdio);

  // The caller may block signals (a controller that sigwait()s) or ignore SIGPIPE; a blocked mask
  // and ignored dispositions survive execve, so the program would start with them. Reset both.
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) ::signal(sig, SIG_DFL);

  if (o.new_session && ::setsid() < 0) child_fail(report_fd, Step::kSetsid);
  static const char kZero[] = "0";
  for (int fd : o.join_cgroup_fds)
    if (::write(fd, kZero, 1) != 1) child_fail(report_fd, Step::kCgroup);
  if (release_fd >= 0) {
    char byte;
    ssize_t n;
    do n = ::read(release_fd, &byte, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1) {
      errno = ECANCELED;
      child_fail(report_fd, Step::kHold);
    }
  }
  // Before the identity change (entering a mount namespace needs CAP_SYS_ADMIN); it also moves
  // the working directory to the namespace's root, which the chdir below sets again.
  if (mount_ns_fd >= 0 && ::setns(mount_ns_fd, CLONE_NEWNS) != 0)
    child_fail(report_fd, Step::kSetns);
  if (!o.domainname.empty() && (::unshare(CLONE_NEWUTS) != 0 ||
                                ::setdomainname(o.domainname.data(), o.domainname.size()) != 0))
    child_fail(report_fd, Step::kDomainname);
  if (o.gid || o.uid) {
    if (::setgroups(0, nullptr) != 0) child_fail(report_fd, Step::kSetgroups);
  }
  if (o.gid && ::setgid(*o.gid) != 0) child_fail(report_fd, Step::kSetgid);
  if (o.uid && ::setuid(*o.uid) != 0) child_fail(report_fd, Step::kSetuid);
  // After the identity change: changing credentials clears the parent-death signal (prctl(2)).
  if (o.die_with_parent) {
    if (::prctl(PR_SET_PDEATHSIG, o.death_signal) != 0) child_fail(report_fd, Step::kDeathSig);
    // The parent may have died before prctl; then nobody would send the signal.
    if (::getppid() != parent) ::_exit(126);
  }
  if (cwd != nullptr && ::chdir(cwd) != 0) child_fail(report_fd, Step::kChdir);
  if (o.umask) ::umask(*o.umask);  // async-signal-safe, cannot fail
  if (o.personality && ::personality(*o.personality) == -1)
    child_fail(report_fd, Step::kPersonality);

  // Close everything that is not a target: stdio, passed fds and the report pipe survive until
  // exec (the report pipe is CLOEXEC). Unpassed inherited fds must not reach the job (ACCEPTANCE
  // 2).
  int max_target = 2;
  for (size_t i = 0; i < npass; ++i) max_target = std::max(max_target, o.pass_fds[i].second);
  // Close the gaps between targets too.
  for (int fd = 3; fd <= max_target; ++fd) {
    bool keep = false;
    for (size_t i = 0; i < npass; ++i) keep = keep || o.pass_fds[i].second == fd;
    if (!keep && fd != report_fd) ::close(fd);
  }
  if (report_fd > max_target + 1 && ::close_range(static_cast<unsigned>(max_target + 1),
                                                  static_cast<unsigned>(report_fd - 1), 0) != 0)
    child_fail(report_fd, Step::kCloseRange);
  if (::close_range(static_cast<unsigned>(report_fd + 1), ~0U, 0) != 0)
    child_fail(report_fd, Step::kCloseRange);
  // Passed fds arrive without CLOEXEC (dup2 clears it), as the receiver expects.

  if (envp != nullptr)
    ::execve(argv[0], argv, envp);
  else
    ::execv(argv[0], argv);
  child_fail(report_fd, Step::kExec);
}

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Reads the child's report pipe to EOF: nothing means exec succeeded.
Status read_report(int fd, const std::string& program) {
  Report r{};
  ssize_t n = retry_eintr([&] { return ::read(fd, &r, sizeof r); });
  if (n == 0) return ok_status();
  if (n != static_cast<ssize_t>(sizeof r))
    return Error::make(fmt::format("spawn {}: lost the child's start-up report", program));
  return Error::with_errno(
      r.err, fmt::format("spawn {}: {}", program, step_name(static_cast<Step>(r.step))));
}

ExitStatus decode(const siginfo_t& info) {
  ExitStatus s;
  if (info.si_code == CLD_EXITED) {
    s.code = info.si_status;
  } else {
    s.signal = info.si_status;
    s.core_dumped = info.si_code == CLD_DUMPED;
  }
  return s;
}

}  // namespace

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::move(other.pidfd_)),
      release_fd_(std::move(other.release_fd_)),
      report_fd_(std::move(other.report_fd_)),
      reaped_(std::exchange(other.reaped_, false)),
      program_(std::move(other.program_)) {}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    kill_and_reap();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
    release_fd_ = std::move(other.release_fd_);
    report_fd_ = std::move(other.report_fd_);
    reaped_ = std::exchange(other.reaped_, false);
    program_ = std::move(other.program_);
  }
  return *this;
}

Child::~Child() { kill_and_reap(); }

Status Child::release() {
  if (!release_fd_) return Error::make("release: child is not held");
  char byte = 1;
  Status wrote = write_all(release_fd_.get(), std::string_view(&byte, 1), "release pipe");
  release_fd_.reset();
  if (!wrote) return wrote;
  Status st = read_report(report_fd_.get(), program_);
  report_fd_.reset();
  return st;
}

Status Child::signal(int sig) const {
  if (!pidfd_) return Error::make("signal: no process");
  if (pidfd_send_signal_raw(pidfd_.get(), sig) != 0)
    return Error::from_errno(fmt::format("pidfd_send_signal {} to pid {}", sig, pid_));
  return ok_status();
}

Result<ExitStatus> Child::wait(struct rusage* usage) {
  if (reaped_ || !pidfd_) return Error::make("wait: no child to wait for");
  siginfo_t info{};
  // The raw system call: its fifth argument (rusage) is not in glibc's waitid().
  int rc = retry_eintr([&] {
    return static_cast<int>(
        ::syscall(SYS_waitid, P_PIDFD, static_cast<id_t>(pidfd_.get()), &info, WEXITED, usage));
  });
  if (rc != 0) return Error::from_errno(fmt::format("waitid pid {}", pid_));
  reaped_ = true;
  return decode(info);
}

Result<std::optional<ExitStatus>> Child::wait_for(int64_t timeout_ms, struct rusage* usage) {
  if (reaped_ || !pidfd_) return Error::make("wait: no child to wait for");
  int64_t deadline = monotonic_ms() + timeout_ms;
  for (;;) {
    struct pollfd p {
      pidfd_.get(), POLLIN, 0
    };
    int64_t left = std::max<int64_t>(0, deadline - monotonic_ms());
    int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return Error::from_errno("poll pidfd");
    if (rc == 0) return std::optional<ExitStatus>{};
    auto st = SEALRUN_TRY(wait(usage));
    return std::optional<ExitStatus>(st);
  }
}

void Child::kill_and_reap() {
  if (pid_ <= 0 || reaped_ || !pidfd_) return;
  release_fd_.reset();  // a held child sees EOF and exits by itself
  pidfd_send_signal_raw(pidfd_.get(), SIGKILL);
  siginfo_t info{};
  retry_eintr([&] { return ::waitid(P_PIDFD, static_cast<id_t>(pidfd_.get()), &info, WEXITED); });
  reaped_ = true;
}

Result<Child> spawn(const SpawnOptions& o) {
  if (o.argv.empty() || o.argv[0].empty()) return Error::make("spawn: empty argv");
  if (o.pass_fds.size() > 64) return Error::make("spawn: more than 64 passed descriptors");
  auto argv = c_strings(o.argv);
  std::vector<char*> envp;
  if (o.env) envp = c_strings(*o.env);
  auto report = SEALRUN_TRY(make_pipe());
  Pipe hold;
  if (o.hold_until_release) hold = SEALRUN_TRY(make_pipe());
  const char* cwd = o.cwd.empty() ? nullptr : o.cwd.c_str();
  pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) return Error::from_errno(fmt::format("fork for {}", o.argv[0]));
  if (pid == 0) {
    child_main(o, argv.data(), o.env ? envp.data() : nullptr, cwd, report.write_end.get(),
               o.hold_until_release ? hold.read_end.get() : -1, parent);
  }
  report.write_end.reset();
  hold.read_end.reset();
  Child child;
  child.pid_ = pid;
  child.program_ = o.argv[0];
  int pidfd = pidfd_open_raw(pid, 0);
  if (pidfd < 0) {
    Error e = Error::from_errno(fmt::format("pidfd_open {}", pid));
    ::kill(pid, SIGKILL);  // our own unreaped child: the pid cannot have been recycled
    ::waitpid(pid, nullptr, 0);
    return e;
  }
  child.pidfd_.reset(pidfd);
  child.report_fd_ = std::move(report.read_end);
  if (o.hold_until_release) {
    child.release_fd_ = std::move(hold.write_end);
    return child;
  }
  Status st = read_report(child.report_fd_.get(), child.program_);
  child.report_fd_.reset();
  if (!st) {
    child.kill_and_reap();
    return std::move(st).error();
  }
  return child;
}

Result<Captured> run_capture(SpawnOptions options, int64_t timeout_ms, size_t max_output) {
  // Only our read ends are non-blocking: the child's write ends share a file description with
  // its stdout and stderr, and a child whose writes fail with EAGAIN when the pipe fills (a long
  // listing) would be a different program from the one run on a terminal.
  auto out_pipe = SEALRUN_TRY(make_pipe());
  auto err_pipe = SEALRUN_TRY(make_pipe());
  for (const UniqueFd* end : {&out_pipe.read_end, &err_pipe.read_end})
    if (::fcntl(end->get(), F_SETFL, ::fcntl(end->get(), F_GETFL) | O_NONBLOCK) != 0)
      return Error::from_errno("make the output pipe non-blocking");
  options.stdout_fd = out_pipe.write_end.get();
  options.stderr_fd = err_pipe.write_end.get();
  auto child = SEALRUN_TRY(spawn(options));
  out_pipe.write_end.reset();
  err_pipe.write_end.reset();

  Captured c;
  int64_t deadline = monotonic_ms() + timeout_ms;
  UniqueFd* fds[2] = {&out_pipe.read_end, &err_pipe.read_end};
  std::string* sinks[2] = {&c.out, &c.err};
  while (fds[0]->valid() || fds[1]->valid()) {
    struct pollfd p[2];
    for (int i = 0; i < 2; ++i) p[i] = {fds[i]->get(), POLLIN, 0};
    int64_t left = deadline - monotonic_ms();
    if (left <= 0) {
      c.timed_out = true;
      break;
    }
    int rc = ::poll(p, 2, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (rc < 0 && errno != EINTR) return Error::from_errno("poll output pipes");
    for (int i = 0; i < 2; ++i) {
      if (!fds[i]->valid() || (p[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[65536];
      ssize_t n = ::read(fds[i]->get(), buf, sizeof buf);
      if (n > 0) {
        size_t room = max_output - std::min(max_output, sinks[i]->size());
        sinks[i]->append(buf, std::min(room, static_cast<size_t>(n)));
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        fds[i]->reset();
      }
    }
  }
  if (c.timed_out) {
    child.kill_and_reap();
    c.status.signal = SIGKILL;
    return c;
  }
  auto st = SEALRUN_TRY(child.wait_for(std::max<int64_t>(0, deadline - monotonic_ms())));
  if (!st) {
    c.timed_out = true;
    child.kill_and_reap();
    c.status.signal = SIGKILL;
    return c;
  }
  c.status = *st;
  return c;
}

std::vector<pid_t> process_descendants(pid_t root, size_t max) {
  std::vector<pid_t> out;
  std::vector<pid_t> todo = {root};
  while (!todo.empty() && out.size() < max) {
    pid_t p = todo.back();
    todo.pop_back();
    for (pid_t c : process_children(p)) {
      out.push_back(c);
      todo.push_back(c);
    }
  }
  if (out.size() > max) out.resize(max);
  return out;
}

Result<std::string> find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return std::filesystem::absolute(name).string();
    return Error::from_errno(fmt::format("program {}", name));
  }
  const char* path = ::getenv("PATH");
  std::string dirs =
      path != nullptr && *path != '\0' ? path : "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && dir[0] == '/') {
      std::string candidate = dir + "/" + name;
      struct stat st {};
      if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
          ::access(candidate.c_str(), X_OK) == 0)
        return candidate;
    }
    start = end + 1;
  }
  return Error::make(fmt::format("{}: not found on PATH; install it (see .ci/packages.txt)", name));
}

}  // namespace sealrun
