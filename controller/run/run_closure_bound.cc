// SPDX-License-Identifier: Apache-2.0
// check_closure_bound(): see run_closure_bound.h.
#include "controller/run/run_closure_bound.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <vector>

#include "core/beneath.h"
#include "core/syscall.h"

namespace sealrun::run {

Status check_closure_bound_below(const std::string& root, const ClosureIdentities& hashed) {
  // Held once; every file is reached beneath it without following a link (a closure path is the
  // canonical name the file was recorded by, so no link lies on it).
  auto root_fd = SEALRUN_TRY(open_at(AT_FDCWD, root, O_PATH | O_DIRECTORY));
  std::vector<std::string> bad;
  size_t bad_total = 0;
  for (const auto& [path, identity] : hashed) {
    size_t first = path.find_first_not_of('/');
    std::string rel = first == std::string::npos ? std::string() : path.substr(first);
    auto fd = open_beneath(root_fd.get(), rel, O_PATH);
    auto st = fd ? fstat_fd(fd->get(), path) : Result<struct stat>(fd.error());
    std::string why;
    if (!st)
      why = st.error().message();
    else if (!S_ISREG(st->st_mode))
      why = "not a regular file in the job's view";
    else if (st->st_dev != identity.dev || st->st_ino != identity.ino)
      why = fmt::format(
          "the job's view binds device {} inode {}, the file hashed was device {} "
          "inode {}: it was replaced on the host after it was verified",
          st->st_dev, st->st_ino, identity.dev, identity.ino);
    else
      continue;
    if (++bad_total <= 5) bad.push_back(fmt::format("{} ({})", path, why));
  }
  if (bad_total == 0) return ok_status();
  std::string more = bad_total > 5 ? fmt::format(" and {} more", bad_total - 5) : "";
  return Error::make(
      fmt::format("{} closure file(s) bound into the job are not the ones verified: "
                  "{}{}",
                  bad_total, fmt::join(bad, "; "), more));
}

Status check_closure_bound(pid_t sandbox_pid, const ClosureIdentities& hashed) {
  return check_closure_bound_below(fmt::format("/proc/{}/root", sandbox_pid), hashed);
}

}  // namespace sealrun::run
