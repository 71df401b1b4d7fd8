// SPDX-License-Identifier: Apache-2.0
// What the mount table and /proc say about a mount point: which device is mounted there (the
// topmost mount, from /proc/self/mountinfo), and which processes keep a busy mount busy (their
// cwd, root or an open file on its device) — so a refusal to unmount names its cause.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace sealrun::ownedfs {

// The kernel's own words on a failed fsconfig/fsmount, read from the file system context
// (fsopen(2): read(2) on it yields its messages), as " (msg; msg)", or "" when it has none.
std::string fs_context_messages(int fsfd);

// PROC/thread-self where it exists (the calling thread's namespaces), else PROC/self.
std::string own_entry(const std::string& proc_dir);

struct MountEntry {
  dev_t device = 0;  // maj:min of the mounted file system
  std::string fstype;
  std::string source;
};

// The mount points directly below `dir` (an absolute, canonical path: DIR/<name>), with the
// topmost mount at each; what `sweep` looks at when no record names a mount.
Result<std::vector<std::pair<std::string, MountEntry>>> mounts_below(const std::string& proc_dir,
                                                                     const std::string& dir);

// The topmost mount at exactly `mount_point` (an absolute, canonical path), if any.
Result<std::optional<MountEntry>> mount_at(const std::string& proc_dir,
                                           const std::string& mount_point);

// How mount_holders() describes a process that uses the file system only by having it mounted in
// a mount namespace of its own (one made by unshare(CLONE_NEWNS) while it was mounted here: a
// podman pause process, a service with a private /tmp, ...).
inline constexpr const char* kOtherNamespaceHolder =
    "a mount namespace of its own that still has it mounted";

// Up to `max` processes using the file system `device`: "pid 123 (sh): cwd".
std::vector<std::string> mount_holders(const std::string& proc_dir, dev_t device, size_t max = 8);

}  // namespace sealrun::ownedfs
