// The unprivileged identity jobs run as. When the controller is root, rootless mechanisms (bwrap,
// podman) are started as this user, so the sandbox's user namespace maps an ordinary uid and the
// kernel's checks on an unprivileged user apply to everything inside. The name comes from
// $SEALRUN_JOB_USER (default "sealrun"); .ci/setup creates it.
#pragma once

#include <sys/types.h>

#include <string>

#include "core/result.h"

namespace sealrun {

struct JobUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};

// The configured job user's name: $SEALRUN_JOB_USER, else "sealrun".
std::string job_user_name();
// Looks the user up (getpwnam_r); refuses root (uid 0) as a job user.
Result<JobUser> lookup_job_user(const std::string& name);

// Creates `path` (a new directory, mode 0700) and hands it to the job user, so that a rootless
// sandbox can write there and nobody else can. The parent must exist. Fails if `path` exists: a
// run never reuses a directory it did not create.
Status prepare_owned_dir(const std::string& path, const JobUser& user);

}  // namespace sealrun
