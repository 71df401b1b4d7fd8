// Starting bwrap for a grant: see bwrap_launch.h.
//
// Mount sources are opened here, as the controller (O_PATH, no symlink as the last component),
// because the job user may be unable to reach them by path (a repository under /root). bwrap 0.8's
// --ro-bind-fd does NOT help with that: it canonicalises /proc/self/fd/N back into a path and
// resolves it as the job user, which fails with EACCES on a 0700 parent (checked with strace).
// So when the controller is root the chain is:
//   unshare --mount --propagation private -- /bin/sh -c STAGE -- setpriv (job user) -- bwrap ...
// STAGE runs as root in a private mount namespace of bwrap's own: it mounts a small tmpfs on a
// stage directory, bind-mounts each descriptor onto /STAGE/<n>, closes the descriptors, and execs
// setpriv, which drops to the job user (setgroups, setgid, setuid) and re-arms the parent-death
// signal (a credential change clears PR_SET_PDEATHSIG, prctl(2)). bwrap then binds the staged
// paths. The host's mount table is never touched and the stage disappears with the namespace.
// Descriptor numbers: 0-2 stdio, 3 status, 4 seccomp, 5.. mount sources (closed before bwrap),
// then the start gate's read end when the caller asked to see the sandbox before its command runs
// (JobIo::on_sandbox_ready).
//
// The start gate: bwrap's --block-fd makes the sandbox's PID 1 read one byte after every mount is
// in place (pivot_root done) and before it starts the command. We wait until the kernel shows that
// process inside read(2) on the gate (/proc/PID/syscall), call the hook, then write the byte.
#include "containment/bwrap_launch.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <vector>

#include "containment/bwrap_argv.h"
#include "containment/resgroup/resource_group.h"
#include "containment/seccomp_policy.h"
#include "core/process_ref.h"
#include "core/syscall.h"

namespace sealrun::bwrap_internal {

namespace {
constexpr int kStatusFd = 3;
constexpr int kSeccompFd = 4;
constexpr int kFirstMountFd = 5;

// The canonical path a descriptor refers to.
Result<std::string> fd_path(int fd) {
  char buf[4096];
  ssize_t n = ::readlink(fmt::format("/proc/self/fd/{}", fd).c_str(), buf, sizeof buf - 1);
  if (n <= 0) return Error::from_errno(fmt::format("readlink /proc/self/fd/{}", fd));
  std::string path(buf, static_cast<size_t>(n));
  if (path.empty() || path[0] != '/' || path.find(" (deleted)") != std::string::npos)
    return Error::make(fmt::format("mount source {} is not reachable by a path", path));
  return path;
}

// Where the stage tmpfs goes: an existing directory that holds none of the mount sources (the
// tmpfs hides what is below it, in bwrap's namespace only).
Result<std::string> stage_dir(const std::vector<std::string>& sources) {
  for (const char* candidate : {"/mnt", "/media", "/srv", "/opt", "/boot"}) {
    struct stat st {};
    if (::lstat(candidate, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    std::string prefix = std::string(candidate) + "/";
    bool shadows = false;
    for (const auto& src : sources) shadows = shadows || src.rfind(prefix, 0) == 0;
    if (!shadows) return std::string(candidate);
  }
  return Error::make(
      "no directory to stage the mount sources in (tried /mnt /media /srv /opt /boot)");
}

// The argv prefix that stages the mounts and drops to the job user (see the top of this file).
Result<std::vector<std::string>> staging_chain(const JobUser& user,
                                               const std::vector<UniqueFd>& mount_fds,
                                               std::vector<std::string>* staged) {
  std::vector<std::string> real;
  real.reserve(mount_fds.size());
  for (const auto& fd : mount_fds) real.push_back(SEALRUN_TRY(fd_path(fd.get())));
  auto unshare = SEALRUN_TRY(find_program("unshare"));
  auto setpriv = SEALRUN_TRY(find_program("setpriv"));
  auto mount = SEALRUN_TRY(find_program("mount"));
  auto stage = SEALRUN_TRY(stage_dir(real));
  // Only fixed strings and numbers go into the script; paths travel as descriptors.
  std::string script =
      fmt::format("set -e; {} -t tmpfs -o mode=0755,size=1m sealrun-stage {}; ", mount, stage);
  std::string closes;
  for (size_t i = 0; i < mount_fds.size(); ++i) {
    auto st = SEALRUN_TRY(fstat_fd(mount_fds[i].get(), real[i]));
    std::string point = fmt::format("{}/{}", stage, i);
    int fd = kFirstMountFd + static_cast<int>(i);
    script += S_ISDIR(st.st_mode) ? fmt::format("mkdir -m 0755 {}; ", point)
                                  : fmt::format(": > {}; ", point);
    script += fmt::format("{} --bind /proc/self/fd/{} {}; ", mount, fd, point);
    closes += fmt::format(" {}<&-", fd);
    staged->push_back(point);
  }
  if (!closes.empty()) script += "exec" + closes + "; ";
  script +=
      fmt::format("exec {} --reuid={} --regid={} --clear-groups --pdeathsig=SIGKILL -- \"$@\"",
                  setpriv, user.uid, user.gid);
  // POSIX shells need only redirect descriptors 0-9, and dash does no more ("exec 10<&-" is a
  // command named 10): past five mounts the descriptors are closed by bash.
  std::string shell = "/bin/sh";
  if (kFirstMountFd + mount_fds.size() > 10) shell = SEALRUN_TRY(find_program("bash"));
  return std::vector<std::string>{unshare, "--mount", "--propagation", "private",      "--",
                                  shell,   "-c",      script,          "sealrun-stage"};
}

// Whether `pid` is blocked in read(2) on descriptor `fd`: /proc/PID/syscall starts with the
// system call number and its first argument (hex) while the process sleeps in it.
bool blocked_reading(pid_t pid, int fd) {
  std::ifstream in(fmt::format("/proc/{}/syscall", pid));
  long nr = -1;
  std::string arg;
  if (!(in >> nr >> arg) || nr != SYS_read) return false;
  return std::strtol(arg.c_str(), nullptr, 16) == fd;
}

// Holds the sandbox at its gate until it is set up, runs the hook, then opens the gate.
Status pass_gate(Launched& l, int gate_fd, UniqueFd gate_write,
                 const std::function<Status(pid_t)>& hook, int64_t deadline_ms) {
  while (!blocked_reading(l.sandbox_pid, gate_fd)) {
    if (monotonic_ms() > deadline_ms)
      return Error::make("the sandbox did not reach its start gate in time");
    if (pidfd_exited_within(l.bwrap.pidfd(), 0) || pidfd_exited_within(l.sandbox_pidfd.get(), 0))
      return Error::make(
          "bwrap exited while setting up the sandbox; its message is on the "
          "job's stderr");
    ::usleep(1000);  // setup takes milliseconds; there is nothing to wait on but the kernel
  }
  SEALRUN_TRY_CTX(hook(l.sandbox_pid), "before the job's command starts");
  return write_all(gate_write.get(), std::string_view("\1", 1), "the sandbox's start gate");
}

}  // namespace

Result<std::string> resolve_bwrap(const BwrapOptions& options) {
  if (!options.bwrap_path.empty()) {
    struct stat st {};
    if (::stat(options.bwrap_path.c_str(), &st) != 0)
      return Error::from_errno(fmt::format("bubblewrap at {}", options.bwrap_path))
          .context("bwrap is not installed there; install the bubblewrap package");
    if (!S_ISREG(st.st_mode) || ::access(options.bwrap_path.c_str(), X_OK) != 0)
      return Error::make(fmt::format("{} is not an executable file", options.bwrap_path));
    return options.bwrap_path;
  }
  return find_program("bwrap").context("bubblewrap is not installed (apt-get install bubblewrap)");
}

Result<std::optional<JobUser>> resolve_run_as(const BwrapOptions& options) {
  if (::geteuid() != 0) return std::optional<JobUser>{};
  auto user = SEALRUN_TRY(lookup_job_user(options.job_user));
  return std::optional<JobUser>(std::move(user));
}

std::optional<long> status_value(const std::string& text, const std::string& key) {
  std::string quoted = "\"" + key + "\"";
  size_t pos = text.find(quoted);
  if (pos == std::string::npos) return std::nullopt;
  pos = text.find(':', pos + quoted.size());
  if (pos == std::string::npos) return std::nullopt;
  const char* start = text.c_str() + pos + 1;
  char* end = nullptr;
  long v = std::strtol(start, &end, 10);
  if (end == start) return std::nullopt;
  return v;
}

void pidfd_kill(int pidfd) {
  if (pidfd >= 0) pidfd_send_signal_raw(pidfd, SIGKILL);
}

void drain_status(Launched& l) {
  if (!l.status_read) return;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(l.status_read.get(), buf, sizeof buf);
    if (n > 0) {
      if (l.status_text.size() < 65536) l.status_text.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) l.status_read.reset();  // bwrap closed it: it has exited
    return;
  }
}

Result<Launched> launch(const std::string& bwrap_path, const std::optional<JobUser>& run_as,
                        const Grant& grant, resgroup::ResourceGroup* group, const JobIo& io,
                        int64_t startup_timeout_ms) {
  const ContainmentSpec& spec = grant.spec;
  std::vector<UniqueFd> mount_fds;
  BwrapFds fds;
  std::vector<std::pair<int, int>> pass;
  for (size_t i = 0; i < spec.mounts.size(); ++i) {
    const auto& m = spec.mounts[i];
    // O_NOFOLLOW: an admitted source that has become a symlink is refused, not followed.
    auto fd = SEALRUN_TRY_CTX(open_at(AT_FDCWD, m.source, O_PATH | O_NOFOLLOW),
                              fmt::format("open mount source for {}", m.target));
    auto st = SEALRUN_TRY(fstat_fd(fd.get(), m.source));
    if (S_ISLNK(st.st_mode))
      return Error::make(fmt::format("mount source {} is a symlink; give the real path", m.source));
    // Only the staging shell receives these (it closes them before bwrap runs); when we are not
    // root, bwrap gets the canonical path the descriptor resolves to (it would resolve an fd back
    // into that path as the same user anyway).
    if (run_as) pass.emplace_back(fd.get(), kFirstMountFd + static_cast<int>(i));
    mount_fds.push_back(std::move(fd));
  }
  std::string bpf;
  UniqueFd seccomp_fd;
  {  // Always installed, requested or not: it costs nothing and only narrows the job.
    bpf = SEALRUN_TRY_CTX(compile_seccomp_bpf(job_seccomp_policy()), "compile seccomp policy");
    seccomp_fd = SEALRUN_TRY(seccomp_program_fd(bpf));
    pass.emplace_back(seccomp_fd.get(), kSeccompFd);
    fds.seccomp = kSeccompFd;
  }
  auto status = SEALRUN_TRY(make_pipe());
  if (::fcntl(status.read_end.get(), F_SETFL, O_NONBLOCK) != 0)
    return Error::from_errno("make the bwrap status pipe non-blocking");
  pass.emplace_back(status.write_end.get(), kStatusFd);
  fds.json_status = kStatusFd;
  std::optional<Pipe> gate;
  if (io.on_sandbox_ready) {
    gate = SEALRUN_TRY(make_pipe());
    fds.block = kFirstMountFd + static_cast<int>(spec.mounts.size());
    pass.emplace_back(gate->read_end.get(), fds.block);
  }

  SpawnOptions so;
  if (run_as) {
    so.argv = SEALRUN_TRY(staging_chain(*run_as, mount_fds, &fds.staged_sources));
  } else {
    for (const auto& fd : mount_fds) fds.staged_sources.push_back(SEALRUN_TRY(fd_path(fd.get())));
  }
  auto bwrap_argv = build_bwrap_argv(bwrap_path, grant, read_host_root_layout(), fds);
  so.argv.insert(so.argv.end(), bwrap_argv.begin(), bwrap_argv.end());
  so.env = std::vector<std::string>{};  // bwrap itself needs no environment; the job's is --setenv
  so.stdin_fd = io.stdin_fd;
  so.stdout_fd = io.stdout_fd;
  so.stderr_fd = io.stderr_fd;
  so.pass_fds = pass;
  so.new_session = true;
  so.die_with_parent = true;
  if (spec.umask) so.umask = static_cast<mode_t>(*spec.umask);  // bwrap and the job inherit it
  if (group != nullptr) {
    so.join_cgroup_fds = group->join_fds();
    so.hold_until_release = true;
  }

  Launched l;
  l.bwrap = SEALRUN_TRY(spawn(so));
  if (group != nullptr) {
    Status adopted = group->adopt(l.bwrap.pid());
    if (!adopted) {
      l.bwrap.kill_and_reap();
      return std::move(adopted).error().context("place bwrap in the resource group");
    }
    SEALRUN_TRY(l.bwrap.release());
  }
  status.write_end.reset();
  mount_fds.clear();
  seccomp_fd.reset();
  l.status_read = std::move(status.read_end);

  // Wait for {"child-pid": N}, or for bwrap to give up (it prints why on the job's stderr).
  int64_t deadline = monotonic_ms() + startup_timeout_ms;
  while (!status_value(l.status_text, "child-pid")) {
    int64_t left = deadline - monotonic_ms();
    if (left <= 0) {
      l.bwrap.kill_and_reap();
      return Error::make(
          fmt::format("bwrap did not start the sandbox within {} ms", startup_timeout_ms));
    }
    struct pollfd p[2] = {{l.status_read.get(), POLLIN, 0}, {l.bwrap.pidfd(), POLLIN, 0}};
    int nfds = l.status_read ? 2 : 1;
    struct pollfd* first = l.status_read ? &p[0] : &p[1];
    int rc =
        ::poll(first, static_cast<nfds_t>(nfds), static_cast<int>(std::min<int64_t>(left, 1000)));
    if (rc < 0 && errno != EINTR) return Error::from_errno("poll bwrap status");
    drain_status(l);
    if (status_value(l.status_text, "child-pid")) break;
    if (!l.status_read || (p[1].revents & POLLIN) != 0) {
      auto st = l.bwrap.wait_for(2000);
      std::string how = st.ok() && st->has_value() ? (*st)->describe() : "no exit status";
      l.bwrap.kill_and_reap();
      return Error::make(fmt::format(
          "bwrap exited before starting the sandbox ({}); its message is on the job's stderr",
          how));
    }
  }
  l.sandbox_pid = static_cast<pid_t>(*status_value(l.status_text, "child-pid"));
  int pidfd = pidfd_open_raw(l.sandbox_pid, 0);
  if (pidfd >= 0) l.sandbox_pidfd.reset(pidfd);
  if (gate) {
    gate->read_end.reset();
    Status passed =
        pass_gate(l, fds.block, std::move(gate->write_end), io.on_sandbox_ready, deadline);
    if (!passed) {
      pidfd_kill(l.sandbox_pidfd.get());
      l.bwrap.kill_and_reap();
      if (!pidfd_exited_within(l.sandbox_pidfd.get(), 5000))
        return std::move(passed).error().context(
            fmt::format("and the sandbox's PID 1 ({}) did not exit after SIGKILL", l.sandbox_pid));
      return std::move(passed).error();
    }
  }
  return l;
}

}  // namespace sealrun::bwrap_internal
