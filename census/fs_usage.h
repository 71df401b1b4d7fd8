// SPDX-License-Identifier: Apache-2.0
// One census sample of an owned space that is a file system of its own: a single statfs(2),
// whatever the number of files in it, plus a stat(2) that proves the path still leads to that
// file system (a sample of whatever lies under an unmounted mount point would be a wrong figure,
// not a measurement).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "core/result.h"

namespace sealrun::census {

struct FsUsage {
  uint64_t size_bytes = 0;   // f_blocks * f_frsize: what the file system can hold in all
  uint64_t used_bytes = 0;   // (f_blocks - f_bfree) * f_frsize
  uint64_t room_bytes = 0;   // f_bavail * f_frsize: what an unprivileged writer can still add
  uint64_t inodes = 0;       // f_files
  uint64_t used_inodes = 0;  // f_files - f_ffree
  uint64_t room_inodes = 0;  // f_ffree
};

// The device of the file system mounted at `mount_point` (st_dev of its root), for
// measure_filesystem's check.
Result<dev_t> filesystem_device(const std::string& mount_point);

// statfs of `mount_point`; an error when the path no longer leads to the file system
// `expected_dev`.
Result<FsUsage> measure_filesystem(const std::string& mount_point, dev_t expected_dev);

}  // namespace sealrun::census
