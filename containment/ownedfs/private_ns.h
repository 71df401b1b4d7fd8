// SPDX-License-Identifier: Apache-2.0
// The controller's private mount namespace: where a run's owned file systems are mounted, so that
// no other run's namespace can ever hold a copy of them (docs/containment.md, "Overlapping runs").
//
// Why: a mount made in the host's namespace is copied into every mount namespace made while it
// exists — another run's bwrap mount stage (which lives for that whole job), another run's rootless
// podman pause process — and, on a host whose / is a private mount, the unmount never reaches those
// copies. The loop device then stays bound to the image after this run's unmount, for as long as
// the other run lasts, and cleanup could not confirm the space released. In a namespace of its
// own, the owned file systems exist only for this controller and what it starts (its bwrap, its
// podman and that podman's pause process, which must see them to bind them): another controller's
// namespace is copied from the host's, which never had them. Nothing of ours propagates back (the
// new namespace's mounts are made slaves of the host's: host mounts still reach us, ours never
// reach the host), and when the controller dies, the kernel drops the namespace with its mounts
// (the loop devices clear themselves: autoclear) once the last process in it is gone.
//
// The namespace is per thread in Linux (unshare(2) moves only the caller), so it is entered before
// the run's pipeline starts its threads; the threads it starts later, and every process it spawns,
// are in it. /proc/thread-self (not /proc/self) is what shows this thread's mounts.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun::ownedfs {

// Moves the calling thread into a new mount namespace whose mounts are slaves of the current one.
// Idempotent per thread (a second call does nothing). Needs CAP_SYS_ADMIN; the error says why not.
Status enter_private_mount_namespace();

// Whether the calling thread is in the private mount namespace this process entered (by
// enter_private_mount_namespace(), on it or on the thread that started it), not in the one that
// call left. False when unknown, and in a thread still in the namespace left.
bool in_private_mount_namespace();

// For `sweep`: a killed controller's namespace outlives it while a process of its run does (its
// podman, conmon), and the run's owned file systems with it, out of sight of the host's namespace.
// Visiting it lets sweep see what the controller saw. Entered only when the namespace belongs to
// the host's user namespace (only root can make such a one: a job user's namespace is never
// entered) and has a mount at exactly `mount_point`; the calling thread returns to its own
// namespace and working directory when the visit ends.
class MountNamespaceVisit {
 public:
  MountNamespaceVisit(const MountNamespaceVisit&) = delete;
  MountNamespaceVisit& operator=(const MountNamespaceVisit&) = delete;
  ~MountNamespaceVisit();
  pid_t pid() const { return pid_; }  // the process whose namespace this is

 private:
  friend Result<std::unique_ptr<MountNamespaceVisit>> visit_namespace_with_mount(
      const std::string&, const std::string&);
  MountNamespaceVisit() = default;
  UniqueFd back_;
  std::string cwd_;
  pid_t pid_ = 0;
};

// Enters the mount namespace of a process (other than ours) that has a mount at `mount_point` (an
// absolute, canonical path); null when no process has one.
Result<std::unique_ptr<MountNamespaceVisit>> visit_namespace_with_mount(
    const std::string& mount_point, const std::string& proc_dir = "/proc");

}  // namespace sealrun::ownedfs
