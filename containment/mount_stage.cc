// SPDX-License-Identifier: Apache-2.0
// stage_mounts(): see mount_stage.h.
//
// The sequence, and why each step is where it is:
//   parent: open_tree(source, OPEN_TREE_CLONE) for each source — a detached copy of its mount,
//           made while we are still in the namespace the descriptor belongs to (attaching a mount
//           of another namespace is refused; a detached tree is nobody's and may be attached);
//   child:  unshare(CLONE_NEWNS), make every mount private (nothing propagates back to the host),
//           a 1 MiB tmpfs on the stage directory, one empty directory or file per source,
//           move_mount of each detached tree onto it, then report and wait;
//   parent: open /proc/<child>/ns/mnt (the namespace now outlives the child), let it exit.
// The child runs between fork and _exit in a threaded controller, so it only makes syscalls on
// memory prepared before the fork (async-signal-safe: no allocation, no locks).
#include "containment/mount_stage.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "core/syscall.h"

namespace sealrun::bwrap_internal {

namespace {

enum class StageStep : int { kOk = 0, kUnshare, kPrivate, kTmpfs, kPoint, kMove };

const char* step_text(StageStep s) {
  switch (s) {
    case StageStep::kUnshare:
      return "unshare a mount namespace";
    case StageStep::kPrivate:
      return "make its mounts private";
    case StageStep::kTmpfs:
      return "mount the stage tmpfs";
    case StageStep::kPoint:
      return "make a mount point on the stage";
    case StageStep::kMove:
      return "attach the source (move_mount)";
    case StageStep::kOk:
      break;
  }
  return "stage";
}

struct StageReport {
  int step = 0;
  int index = -1;
  int err = 0;
};

// Where the stage tmpfs goes: an existing directory that holds none of the mount sources (the
// tmpfs hides what is below it, in the staged namespace only).
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

[[noreturn]] void child_fail(int report_fd, StageStep step, int index) {
  StageReport r{static_cast<int>(step), index, errno};
  (void)!::write(report_fd, &r, sizeof r);
  ::_exit(1);
}

// Everything here is prepared before fork; see the top of this file.
[[noreturn]] void stage_child(const char* stage, const std::vector<const char*>& points,
                              const std::vector<int>& trees, const std::vector<bool>& is_dir,
                              int report_fd, int hold_fd, int hold_write_fd, pid_t parent) {
  ::close(hold_write_fd);  // else our own copy would keep the hold open for ever
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);
  if (::unshare(CLONE_NEWNS) != 0) child_fail(report_fd, StageStep::kUnshare, -1);
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    child_fail(report_fd, StageStep::kPrivate, -1);
  if (::mount("sealrun-stage", stage, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") != 0)
    child_fail(report_fd, StageStep::kTmpfs, -1);
  for (size_t i = 0; i < points.size(); ++i) {
    int idx = static_cast<int>(i);
    if (is_dir[i]) {
      if (::mkdir(points[i], 0755) != 0) child_fail(report_fd, StageStep::kPoint, idx);
    } else {
      int fd = ::open(points[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0) child_fail(report_fd, StageStep::kPoint, idx);
      ::close(fd);
    }
    if (::move_mount(trees[i], "", AT_FDCWD, points[i], MOVE_MOUNT_F_EMPTY_PATH) != 0)
      child_fail(report_fd, StageStep::kMove, idx);
  }
  StageReport ok{};
  (void)!::write(report_fd, &ok, sizeof ok);
  char byte;
  while (::read(hold_fd, &byte, 1) < 0 && errno == EINTR) {
  }
  ::_exit(0);
}

}  // namespace

Result<std::string> fd_path(int fd) {
  char buf[4096];
  ssize_t n = ::readlink(fmt::format("/proc/self/fd/{}", fd).c_str(), buf, sizeof buf - 1);
  if (n <= 0) return Error::from_errno(fmt::format("readlink /proc/self/fd/{}", fd));
  std::string path(buf, static_cast<size_t>(n));
  if (path.empty() || path[0] != '/' || path.find(" (deleted)") != std::string::npos)
    return Error::make(fmt::format("mount source {} is not reachable by a path", path));
  return path;
}

Result<MountStage> stage_mounts(const std::vector<UniqueFd>& sources) {
  std::vector<std::string> real;
  std::vector<bool> is_dir;
  std::vector<UniqueFd> trees;
  for (const auto& fd : sources) {
    real.push_back(SEALRUN_TRY(fd_path(fd.get())));
    auto st = SEALRUN_TRY(fstat_fd(fd.get(), real.back()));
    is_dir.push_back(S_ISDIR(st.st_mode));
    int tree = ::open_tree(fd.get(), "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
    if (tree < 0) return Error::from_errno("clone the mount of " + real.back() + " (open_tree)");
    trees.emplace_back(tree);
  }
  MountStage out;
  std::string stage = SEALRUN_TRY(stage_dir(real));
  for (size_t i = 0; i < sources.size(); ++i) out.points.push_back(fmt::format("{}/{}", stage, i));
  std::vector<const char*> points;
  std::vector<int> tree_fds;
  for (size_t i = 0; i < sources.size(); ++i) {
    points.push_back(out.points[i].c_str());
    tree_fds.push_back(trees[i].get());
  }
  auto report = SEALRUN_TRY(make_pipe());
  auto hold = SEALRUN_TRY(make_pipe());
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return Error::from_errno("fork the mount stage");
  if (pid == 0)
    stage_child(stage.c_str(), points, tree_fds, is_dir, report.write_end.get(),
                hold.read_end.get(), hold.write_end.get(), parent);
  report.write_end.reset();
  hold.read_end.reset();
  auto reap = [&] {
    hold.write_end.reset();  // the child reads EOF and exits
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  };
  StageReport r{};
  ssize_t n;
  do n = ::read(report.read_end.get(), &r, sizeof r);
  while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof r)) {
    reap();
    return Error::make("the mount stage died before reporting");
  }
  if (r.step != 0) {
    reap();
    std::string which = r.index >= 0 ? " for " + real[static_cast<size_t>(r.index)] : "";
    return Error::with_errno(
        r.err, fmt::format("mount stage: {}{}", step_text(static_cast<StageStep>(r.step)), which));
  }
  auto ns = open_at(AT_FDCWD, fmt::format("/proc/{}/ns/mnt", pid), O_RDONLY);
  reap();
  if (!ns) return std::move(ns).error().context("mount stage: hold its namespace");
  out.mount_ns = std::move(*ns);
  return out;
}

}  // namespace sealrun::bwrap_internal
