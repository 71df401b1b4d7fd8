// SPDX-License-Identifier: Apache-2.0
// The unprivileged identity jobs run as. When the controller is root, rootless mechanisms (bwrap,
// podman) are started as this user, so the sandbox's user namespace maps an ordinary uid and the
// kernel's checks on an unprivileged user apply to everything inside; when the controller is not
// root, they run as the caller. The user's name is configuration: only the controller reads it
// ($SEALRUN_JOB_USER, default "sealrun") and passes it in; no library reads the environment.
#pragma once

#include <sys/types.h>

#include <string>

#include "core/result.h"

namespace sealrun {

inline constexpr const char* kDefaultJobUser = "sealrun";

struct JobUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
  bool drop = false;  // the caller is root and must setgroups/setgid/setuid to this before exec
};

// Looks the user up (getpwnam_r, with a buffer that grows as the entry needs); refuses root
// (uid 0) as a job user. `drop` is set when the caller is root.
Result<JobUser> lookup_job_user(const std::string& name);
// Who a rootless mechanism runs as: the named job user when the caller is root, otherwise the
// caller itself (drop = false).
Result<JobUser> resolve_job_identity(const std::string& configured_name);

// Creates `path` (a new directory, mode 0700) and hands it to the job user, so that a rootless
// sandbox can write there and nobody else can. The parent must exist. Fails if `path` exists: a
// run never reuses a directory it did not create.
Status prepare_owned_dir(const std::string& path, const JobUser& user);

// Gives `root` and everything below it (symlinks themselves, never followed) to the job user, when
// the caller is root (user.drop); a no-op otherwise. For a private copy the job may change (a
// writable source); at most `max_entries` entries.
Status give_tree(const std::string& root, const JobUser& user, size_t max_entries = 1000000);

}  // namespace sealrun
