// SPDX-License-Identifier: Apache-2.0
// Job user lookup and owned-directory preparation: see job_user.h.
#include "core/job_user.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "core/syscall.h"

namespace sealrun {

Result<JobUser> lookup_job_user(const std::string& name) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(4096);
  int rc = 0;
  // ERANGE: the entry does not fit; grow (bounded: no real entry needs a megabyte).
  while ((rc = ::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found)) == ERANGE &&
         buf.size() < (1u << 20))
    buf.resize(buf.size() * 4);
  if (rc != 0) return Error::with_errno(rc, fmt::format("look up job user \"{}\"", name));
  if (found == nullptr)
    return Error::make(
        fmt::format("job user \"{}\" does not exist; create it with `bash .ci/setup` (or set "
                    "SEALRUN_JOB_USER to an existing unprivileged user)",
                    name));
  if (pw.pw_uid == 0)
    return Error::make(fmt::format("job user \"{}\" is root; jobs must run unprivileged", name));
  return JobUser{name, pw.pw_uid, pw.pw_gid, pw.pw_dir != nullptr ? pw.pw_dir : "",
                 ::geteuid() == 0};
}

Result<JobUser> resolve_job_identity(const std::string& configured_name) {
  if (::geteuid() == 0) return lookup_job_user(configured_name);
  JobUser self;
  self.uid = ::geteuid();
  self.gid = ::getegid();
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(self.uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
    self.name = pw.pw_name;
    self.home = pw.pw_dir != nullptr ? pw.pw_dir : "";
  } else {
    self.name = std::to_string(self.uid);
  }
  return self;
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

Status give_tree(const std::string& root, const JobUser& user, size_t max_entries) {
  if (!user.drop) return ok_status();
  auto give = [&](const std::filesystem::path& p) -> Status {
    if (::fchownat(AT_FDCWD, p.c_str(), user.uid, user.gid, AT_SYMLINK_NOFOLLOW) != 0)
      return Error::from_errno(fmt::format("chown {} to job user {}", p.string(), user.name));
    return ok_status();
  };
  SEALRUN_TRY(give(root));
  std::error_code ec;
  std::filesystem::recursive_directory_iterator it(root, ec);
  size_t seen = 0;
  for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (++seen > max_entries)
      return Error::make(fmt::format("{}: more than {} entries", root, max_entries));
    SEALRUN_TRY(give(it->path()));
  }
  if (ec) return Error::with_errno(ec.value(), "walk " + root);
  return ok_status();
}

}  // namespace sealrun
