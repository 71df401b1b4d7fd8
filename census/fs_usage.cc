// SPDX-License-Identifier: Apache-2.0
// measure_filesystem(): see fs_usage.h.
#include "census/fs_usage.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

namespace sealrun::census {

Result<dev_t> filesystem_device(const std::string& mount_point) {
  struct stat st {};
  if (::lstat(mount_point.c_str(), &st) != 0)
    return Error::from_errno(fmt::format("stat {}", mount_point));
  if (!S_ISDIR(st.st_mode)) return Error::make(fmt::format("{}: not a directory", mount_point));
  return st.st_dev;
}

Result<FsUsage> measure_filesystem(const std::string& mount_point, dev_t expected_dev) {
  struct statfs fs {};
  if (::statfs(mount_point.c_str(), &fs) != 0)
    return Error::from_errno(fmt::format("statfs {}", mount_point));
  dev_t dev = SEALRUN_TRY(filesystem_device(mount_point));
  if (dev != expected_dev)
    return Error::make(fmt::format(
        "{} is no longer the owned file system (device {}:{}, expected {}:{}): unmounted?",
        mount_point, major(dev), minor(dev), major(expected_dev), minor(expected_dev)));
  uint64_t unit =
      fs.f_frsize != 0 ? static_cast<uint64_t>(fs.f_frsize) : static_cast<uint64_t>(fs.f_bsize);
  FsUsage u;
  u.size_bytes = static_cast<uint64_t>(fs.f_blocks) * unit;
  u.used_bytes = static_cast<uint64_t>(fs.f_blocks - fs.f_bfree) * unit;
  u.room_bytes = static_cast<uint64_t>(fs.f_bavail) * unit;
  u.inodes = fs.f_files;
  u.used_inodes = fs.f_files - fs.f_ffree;
  u.room_inodes = fs.f_ffree;
  return u;
}

}  // namespace sealrun::census
