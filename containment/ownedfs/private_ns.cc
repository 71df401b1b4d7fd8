// SPDX-License-Identifier: Apache-2.0
// enter_private_mount_namespace(): see private_ns.h.
#include "containment/ownedfs/private_ns.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <sstream>

#include "containment/ownedfs/mounts.h"
#include "core/bounded_file.h"
#include "core/proc.h"
#include "core/syscall.h"

namespace sealrun::ownedfs {

namespace {
thread_local bool entered = false;
// The namespace the first enter_private_mount_namespace() left (its nsfs inode), 0 before.
std::atomic<uint64_t> left_namespace{0};

uint64_t thread_namespace() {
  struct stat st {};
  return ::stat("/proc/thread-self/ns/mnt", &st) == 0 ? st.st_ino : 0;
}
}  // namespace

Status enter_private_mount_namespace() {
  if (entered) return ok_status();
  const uint64_t before = thread_namespace();
  if (::unshare(CLONE_NEWNS) != 0)
    return Error::from_errno("unshare a private mount namespace for the owned file systems");
  // Slaves, not shared: on a host whose / is shared (systemd), a mount made here would otherwise
  // propagate back into the host's namespace and from there into every other one.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0)
    return Error::from_errno("make the private mount namespace's mounts slaves of the host's");
  entered = true;
  uint64_t none = 0;
  left_namespace.compare_exchange_strong(none, before);
  return ok_status();
}

bool in_private_mount_namespace() {
  // Not pid 1's namespace: pid 1 may be out of reach (here it is: EACCES on /proc/1/ns/mnt).
  const uint64_t left = left_namespace.load();
  const uint64_t mine = thread_namespace();
  return left != 0 && mine != 0 && mine != left;
}

namespace {

// Whether mountinfo text lists a mount at exactly `mount_point` (its fifth field).
bool lists_mount_at(const std::string& text, const std::string& mount_point) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, majmin, root, point;
    if ((f >> id >> parent >> majmin >> root >> point) && unescape_mountinfo(point) == mount_point)
      return true;
  }
  return false;
}

// Whether the mount namespace `ns_fd` belongs to the user namespace of pid 1 (the host's).
bool owned_by_host_userns(int ns_fd, const std::string& proc_dir) {
  UniqueFd owner(::ioctl(ns_fd, NS_GET_USERNS));
  struct stat theirs {
  }, host{};
  return owner && ::fstat(owner.get(), &theirs) == 0 &&
         ::stat((proc_dir + "/1/ns/user").c_str(), &host) == 0 && theirs.st_ino == host.st_ino &&
         theirs.st_dev == host.st_dev;
}

}  // namespace

MountNamespaceVisit::~MountNamespaceVisit() {
  if (!back_) return;
  (void)::setns(back_.get(), CLONE_NEWNS);
  if (!cwd_.empty()) (void)::chdir(cwd_.c_str());
}

Result<std::unique_ptr<MountNamespaceVisit>> visit_namespace_with_mount(
    const std::string& mount_point, const std::string& proc_dir) {
  struct stat mine {};
  if (::stat((proc_dir + "/thread-self/ns/mnt").c_str(), &mine) != 0)
    return Error::from_errno("stat our mount namespace");
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(proc_dir.c_str()), &::closedir);
  if (!d) return Error::from_errno("list " + proc_dir);
  while (struct dirent* e = ::readdir(d.get())) {
    std::string pid = e->d_name;
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string base = proc_dir + "/" + pid;
    struct stat theirs {};
    if (::stat((base + "/ns/mnt").c_str(), &theirs) != 0 || theirs.st_ino == mine.st_ino) continue;
    auto text = read_bounded_file(AT_FDCWD, base + "/mountinfo", 16 * kMiB);
    if (!text || !lists_mount_at(*text, mount_point)) continue;
    UniqueFd ns(::open((base + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns || !owned_by_host_userns(ns.get(), proc_dir)) continue;
    auto visit = std::unique_ptr<MountNamespaceVisit>(new MountNamespaceVisit());
    visit->pid_ = static_cast<pid_t>(std::stol(pid));
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd) != nullptr) visit->cwd_ = cwd;
    visit->back_.reset(::open((proc_dir + "/thread-self/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC));
    if (!visit->back_) return Error::from_errno("open our mount namespace");
    // setns(CLONE_NEWNS) refuses a thread that shares its working directory with others.
    if (::unshare(CLONE_FS) != 0) return Error::from_errno("unshare the working directory");
    if (::setns(ns.get(), CLONE_NEWNS) != 0)
      return Error::from_errno("enter the mount namespace of pid " + pid);
    if (!visit->cwd_.empty()) (void)::chdir(visit->cwd_.c_str());
    return visit;
  }
  return std::unique_ptr<MountNamespaceVisit>();
}

}  // namespace sealrun::ownedfs
