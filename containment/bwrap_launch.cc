// SPDX-License-Identifier: Apache-2.0
// Starting bwrap for a grant: see bwrap_launch.h.
//
// Mount sources are opened here, as the controller (O_PATH, no symlink as the last component),
// because the job user may be unable to reach them by path (a repository under /root). bwrap 0.8's
// --ro-bind-fd does NOT help with that: it canonicalises /proc/self/fd/N back into a path and
// resolves it as the job user, which fails with EACCES on a 0700 parent (checked with strace).
// So when the controller is root, the sources are staged in a private mount namespace made for
// this bwrap (mount_stage.h: open_tree + move_mount in a child of ours, no shell, no binaries),
// and bwrap's own process enters it (setns), drops to the job user (setgroups, setgid, setuid),
// re-arms the parent-death signal after that change (it clears PR_SET_PDEATHSIG, prctl(2)) and
// binds the staged paths. The host's mount table is never touched and the stage disappears with
// the namespace. Descriptor numbers in bwrap: 0-2 stdio, 3 status, 4 seccomp, 5 the start gate's
// read end when the caller asked to see the sandbox before its command runs
// (JobIo::on_sandbox_ready), 6 on the job's generated /etc files (job_etc.h).
//
// The start gate: bwrap's --block-fd makes the sandbox's PID 1 read one byte after every mount is
// in place (pivot_root done) and before it starts the command. We wait until the kernel shows that
// process inside read(2) on the gate (/proc/PID/syscall), call the hook, then write the byte.
#include "containment/bwrap_launch.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <vector>

#include "containment/bwrap_argv.h"
#include "containment/mount_stage.h"
#include "containment/pin_mount.h"
#include "containment/resgroup/group_spawn.h"
#include "containment/resgroup/resource_group.h"
#include "containment/seccomp_policy.h"
#include "core/process_ref.h"
#include "core/syscall.h"

namespace sealrun::bwrap_internal {

namespace {
constexpr int kStatusFd = 3;
constexpr int kSeccompFd = 4;
constexpr int kGateFd = 5;
constexpr int kFirstEtcFd = 6;

// Whether `pid` is blocked in read(2) on descriptor `fd`: /proc/PID/syscall starts with the
// system call number and its first argument (hex) while the process sleeps in it.
bool blocked_reading(pid_t pid, int fd) {
  std::ifstream in(fmt::format("/proc/{}/syscall", pid));
  long nr = -1;
  std::string arg;
  if (!(in >> nr >> arg) || nr != SYS_read) return false;
  return std::strtol(arg.c_str(), nullptr, 16) == fd;
}

// Holds the sandbox at its gate until it is set up, runs the hook, then opens the gate by writing
// to `gate_write`. On an error the gate is left shut: the caller must kill the sandbox before it
// closes `gate_write`, because bwrap ignores what its read of the gate returns, so end-of-file
// opens the gate just as the byte does and the command would start.
Status pass_gate(Launched& l, int gate_fd, int gate_write, const std::function<Status(pid_t)>& hook,
                 int64_t deadline_ms) {
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
  return write_all(gate_write, std::string_view("\1", 1), "the sandbox's start gate");
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
                        int64_t startup_timeout_ms, const std::vector<JobEtcFd>& etc) {
  const ContainmentSpec& spec = grant.spec;
  std::vector<UniqueFd> mount_fds;
  BwrapFds fds;
  std::vector<std::pair<int, int>> pass;
  // Pinned trees served from their verified images (pin_mount.h): each image mounted once,
  // detached, and cloned (the entry's directory in it) as that mount's source for the stage.
  std::map<int, PinMount> images;
  auto image_source = [&](int image_fd, const std::string& subpath) -> Result<UniqueFd> {
    if (!run_as) return Error::make("a pin image needs the mount stage (a controller run as root)");
    auto it = images.find(image_fd);
    if (it == images.end())
      it = images.emplace(image_fd, SEALRUN_TRY(mount_pin_image(image_fd, spec.run_id))).first;
    int flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (subpath.empty() ? AT_EMPTY_PATH : 0);
    UniqueFd tree(::open_tree(it->second.mount.get(), subpath.c_str(), flags));
    if (!tree)
      return Error::from_errno(
          fmt::format("clone /{} of the pin image on {}", subpath, it->second.loop_device));
    return tree;
  };
  for (size_t i = 0; i < spec.mounts.size(); ++i) {
    const auto& m = spec.mounts[i];
    if (m.image_fd >= 0) {
      mount_fds.push_back(SEALRUN_TRY_CTX(image_source(m.image_fd, m.image_subpath),
                                          fmt::format("mount source for {}", m.target)));
      continue;
    }
    // O_NOFOLLOW: an admitted source that has become a symlink is refused, not followed.
    auto fd = SEALRUN_TRY_CTX(open_at(AT_FDCWD, m.source, O_PATH | O_NOFOLLOW),
                              fmt::format("open mount source for {}", m.target));
    auto st = SEALRUN_TRY(fstat_fd(fd.get(), m.source));
    if (S_ISLNK(st.st_mode))
      return Error::make(fmt::format("mount source {} is a symlink; give the real path", m.source));
    // Root: staged through the descriptor (mount_stage.h); otherwise bwrap gets the canonical
    // path the descriptor resolves to (it would resolve an fd back into that path as the same user
    // anyway).
    mount_fds.push_back(std::move(fd));
  }
  std::string bpf;
  UniqueFd seccomp_fd;
  {  // Always installed, requested or not: it costs nothing and only narrows the job.
    SeccompPolicy policy = job_seccomp_policy();
    // A traced call without a tracer fails with ENOSYS: traces only with the hook that attaches.
    if (!io.traced_syscalls.empty() && !io.on_sandbox_ready)
      return Error::make("traced system calls need a tracer attached at the start gate");
    policy.traces = io.traced_syscalls;
    bpf = SEALRUN_TRY_CTX(compile_seccomp_bpf(policy), "compile seccomp policy");
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
    fds.block = kGateFd;
    pass.emplace_back(gate->read_end.get(), fds.block);
  }
  // The generated /etc files: descriptors from kFirstEtcFd on, which bwrap copies into the sandbox.
  for (size_t i = 0; i < etc.size(); ++i) {
    int number = kFirstEtcFd + static_cast<int>(i);
    pass.emplace_back(etc[i].fd.get(), number);
    fds.generated.emplace_back(etc[i].job_path, number);
  }

  // The closure's image is staged after the mounts: bwrap binds each closure file from it.
  if (spec.closure_image_fd >= 0)
    mount_fds.push_back(
        SEALRUN_TRY_CTX(image_source(spec.closure_image_fd, ""), "the closure files' image"));

  SpawnOptions so;
  MountStage stage;
  if (run_as) {
    so.uid = run_as->uid;
    so.gid = run_as->gid;
    if (!mount_fds.empty()) {
      stage = SEALRUN_TRY(stage_mounts(mount_fds));
      fds.staged_sources = stage.points;
      if (spec.closure_image_fd >= 0) fds.closure_stage = stage.points.back();
      so.mount_ns_fd = stage.mount_ns.get();
    }
  } else {
    for (const auto& fd : mount_fds) fds.staged_sources.push_back(SEALRUN_TRY(fd_path(fd.get())));
  }
  auto bwrap_argv = build_bwrap_argv(bwrap_path, grant, fds);
  so.argv.insert(so.argv.end(), bwrap_argv.begin(), bwrap_argv.end());
  so.env = std::vector<std::string>{};  // bwrap itself needs no environment; the job's is --setenv
  so.stdin_fd = io.stdin_fd;
  so.stdout_fd = io.stdout_fd;
  so.stderr_fd = io.stderr_fd;
  so.pass_fds = pass;
  so.new_session = true;
  so.die_with_parent = true;
  if (spec.umask) so.umask = static_cast<mode_t>(*spec.umask);  // bwrap and the job inherit it
  // bwrap is not set-id: the personality reaches the job; its --unshare-uts copies the domain
  // name, which only a root controller can set (SpawnOptions::domainname).
  so.personality = spec.personality;
  if (run_as) so.domainname = spec.domainname;
  if (group != nullptr) resgroup::hold_for_group(so, *group);

  Launched l;
  l.bwrap = SEALRUN_TRY(spawn(so));
  if (group != nullptr)
    SEALRUN_TRY_CTX(resgroup::release_into_group(l.bwrap, *group), "start bwrap");
  status.write_end.reset();
  stage.mount_ns.reset();  // bwrap holds the namespace now
  mount_fds.clear();
  images.clear();  // the stage holds the image mounts now; they go with the job's namespaces
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
    Status passed = pass_gate(l, fds.block, gate->write_end.get(), io.on_sandbox_ready, deadline);
    if (!passed) {
      // gate->write_end stays open until the sandbox is dead (pass_gate): a SIGKILL already queued
      // keeps its PID 1 from ever returning from the read to start the command.
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
