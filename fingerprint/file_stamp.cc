// SPDX-License-Identifier: Apache-2.0
// The clock and the file-system list behind file_stamp.h.
#include "fingerprint/file_stamp.h"

#include <linux/magic.h>

namespace sealrun {

int64_t coarse_realtime_ns() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return timespec_ns(ts);
}

bool ctime_is_trustworthy(uint64_t fs_type) {
  switch (fs_type) {
    case EXT4_SUPER_MAGIC:  // also ext2 and ext3: one magic for all three
    case XFS_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case TMPFS_MAGIC:
    case OVERLAYFS_SUPER_MAGIC:
    case F2FS_SUPER_MAGIC:
      return true;
    default:
      return false;
  }
}

}  // namespace sealrun
