// SPDX-License-Identifier: Apache-2.0
// enter_private_mount_namespace(): see private_ns.h.
#include "containment/ownedfs/private_ns.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

namespace sealrun::ownedfs {

namespace {
thread_local bool entered = false;
}

Status enter_private_mount_namespace() {
  if (entered) return ok_status();
  if (::unshare(CLONE_NEWNS) != 0)
    return Error::from_errno("unshare a private mount namespace for the owned file systems");
  // Slaves, not shared: on a host whose / is shared (systemd), a mount made here would otherwise
  // propagate back into the host's namespace and from there into every other one.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0)
    return Error::from_errno("make the private mount namespace's mounts slaves of the host's");
  entered = true;
  return ok_status();
}

bool in_private_mount_namespace() {
  struct stat mine {
  }, host{};
  return ::stat("/proc/thread-self/ns/mnt", &mine) == 0 && ::stat("/proc/1/ns/mnt", &host) == 0 &&
         mine.st_ino != host.st_ino;
}

}  // namespace sealrun::ownedfs
