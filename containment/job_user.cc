// Job user lookup and owned-directory preparation: see job_user.h.
#include "containment/job_user.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "core/syscall.h"

namespace sealrun {

std::string job_user_name() {
  const char* env = ::getenv("SEALRUN_JOB_USER");
  return env != nullptr && *env != '\0' ? env : "sealrun";
}

Result<JobUser> lookup_job_user(const std::string& name) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  int rc = ::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found);
  if (rc != 0) return Error::with_errno(rc, fmt::format("look up job user \"{}\"", name));
  if (found == nullptr)
    return Error::make(
        fmt::format("job user \"{}\" does not exist; create it with `bash .ci/setup` (or set "
                    "SEALRUN_JOB_USER to an existing unprivileged user)",
                    name));
  if (pw.pw_uid == 0)
    return Error::make(fmt::format("job user \"{}\" is root; jobs must run unprivileged", name));
  return JobUser{name, pw.pw_uid, pw.pw_gid, pw.pw_dir != nullptr ? pw.pw_dir : ""};
}

Status prepare_owned_dir(const std::string& path, const JobUser& user) {
  SEALRUN_TRY(make_dir_at(AT_FDCWD, path, 0700));
  // Change ownership through a descriptor of the directory we just made, not by path, so a rename
  // race in the parent cannot redirect the chown.
  auto fd = SEALRUN_TRY(open_at(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
  if (::geteuid() == 0 && ::fchown(fd.get(), user.uid, user.gid) != 0)
    return Error::from_errno(fmt::format("chown {} to job user {}", path, user.name));
  if (::fchmod(fd.get(), 0700) != 0) return Error::from_errno(fmt::format("chmod 0700 {}", path));
  return ok_status();
}

}  // namespace sealrun
