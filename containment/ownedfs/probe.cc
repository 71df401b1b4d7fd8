// SPDX-License-Identifier: Apache-2.0
// probe_ownedfs(), default_owned_max_inodes(), unfit_shape() (ownedfs.h) and the shape's mkfs
// command line (shape.h).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "containment/ownedfs/ownedfs.h"
#include "containment/ownedfs/shape.h"
#include "core/bounded_file.h"
#include "core/process.h"
#include "core/run_id.h"
#include "core/syscall.h"

namespace sealrun::ownedfs {

Result<std::string> find_mkfs(const Host& host) {
  if (!host.mkfs.empty()) {
    if (::access(host.mkfs.c_str(), X_OK) != 0)
      return Error::from_errno(fmt::format("{} is not executable", host.mkfs));
    return host.mkfs;
  }
  if (auto p = find_program("mkfs.ext4"); p) return *p;
  for (const char* p : {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"})
    if (::access(p, X_OK) == 0) return std::string(p);
  return Error::make("mkfs.ext4 was not found on PATH or in /usr/sbin, /sbin (package e2fsprogs)");
}

Availability probe_ownedfs(const Host& host) {
  if (::geteuid() != 0)
    return {false, fmt::format("not root (euid {}): attaching a loop device and mounting need "
                               "CAP_SYS_ADMIN",
                               ::geteuid())};
  std::string control = host.dev_dir + "/loop-control";
  auto fd = open_at(AT_FDCWD, control, O_RDWR);
  if (!fd) return {false, "no usable loop devices: " + fd.error().message()};
  auto filesystems = read_bounded_file(AT_FDCWD, host.proc_dir + "/filesystems", kMiB);
  if (!filesystems)
    return {false, "cannot tell if the kernel has ext4: " + filesystems.error().message()};
  if (filesystems->find("\text4\n") == std::string::npos)
    return {false, fmt::format("the kernel has no ext4 ({}/filesystems)", host.proc_dir)};
  if (auto mkfs = find_mkfs(host); !mkfs) return {false, mkfs.error().message()};
  return {true, ""};
}

std::vector<std::string> mkfs_argv(const std::string& mkfs, const std::string& image,
                                   uint64_t inodes) {
  return {mkfs,
          "-q",
          "-F",
          "-O",
          "^has_journal,^resize_inode,sparse_super2",
          "-E",
          "num_backup_sb=0,lazy_itable_init=1,lazy_journal_init=1,nodiscard",
          "-G",
          "64",
          "-m",
          "0",
          "-b",
          std::to_string(kBlockBytes),
          "-I",
          "256",
          "-N",
          std::to_string(inodes),
          image};
}

uint64_t default_owned_max_inodes(uint64_t owned_max_bytes) {
  uint64_t want = std::max<uint64_t>(owned_max_bytes / 8192, 1024);
  // Rounded down to whole inode-table blocks in every block group (mke2fs's granularity), less
  // ext4's reserved inodes: a file system of exactly this many inodes needs no filler inodes.
  uint64_t groups = std::max<uint64_t>(
      1, (owned_max_bytes / kBlockBytes + kBlocksPerGroup - 1) / kBlocksPerGroup);
  uint64_t unit = groups * kInodesPerBlock;
  uint64_t total = (want + kReservedInodes) / unit * unit;
  return total > kReservedInodes + unit ? total - kReservedInodes : want;
}

std::string unfit_shape(uint64_t size_bytes, uint64_t inodes) {
  if (size_bytes < kMinSizeBytes)
    return fmt::format(
        "owned_max_bytes {} is below {} bytes, too small for a file system of its "
        "own",
        size_bytes, kMinSizeBytes);
  uint64_t blocks = size_bytes / kBlockBytes;
  if (inodes == 0 || inodes + kReservedInodes > blocks)
    return fmt::format(
        "owned_max_inodes {} does not fit {} bytes (ext4 holds at most one inode "
        "per {}-byte block: at most {} here)",
        inodes, size_bytes, kBlockBytes, blocks > kReservedInodes ? blocks - kReservedInodes : 0);
  return "";
}

bool is_valid_fs_id(const std::string& id) {
  const std::string suffix = kResultSuffix;
  if (id.size() > suffix.size() &&
      id.compare(id.size() - suffix.size(), suffix.size(), suffix) == 0)
    return is_valid_run_id(std::string_view(id).substr(0, id.size() - suffix.size()));
  return is_valid_run_id(id);
}

}  // namespace sealrun::ownedfs
