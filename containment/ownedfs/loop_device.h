// SPDX-License-Identifier: Apache-2.0
// Loop devices, the kernel's way to use a file as a block device: attached through
// /dev/loop-control and LOOP_CONFIGURE (bound, sized and flagged in one call, so no half-set-up
// device is ever visible), with LO_FLAGS_AUTOCLEAR so the kernel detaches the device by itself
// when its last user — the mount — goes away, even if the controller is killed. Ownership is proven
// by the backing file's device and inode (LOOP_GET_STATUS64), never by a name.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun::ownedfs {

struct LoopDevice {
  std::string path;  // /dev/loopN
  UniqueFd fd;       // held until the file system holds the device itself
  bool direct_io = false;
};

// Binds `image_fd` to a free loop device with autoclear (and direct I/O where the backing
// filesystem allows it, so written data is not cached twice), 4096-byte sectors. Buffered I/O was
// measured as the alternative (no fsync of the image at LOOP_CONFIGURE, the mount's metadata read
// from the page cache) and won nothing measurable, quiet or behind another writer, while it
// caches the job's data twice (bench/README.md, "The disk-sensitive steps").
Result<LoopDevice> attach_loop(const std::string& dev_dir, int image_fd,
                               const std::string& image_name);

struct LoopBacking {
  dev_t dev = 0;  // st_dev and st_ino of the backing file
  ino_t ino = 0;
  uint32_t flags = 0;  // LO_FLAGS_*
};
// What `dev_path` is bound to; nullopt when it is bound to nothing (or does not exist).
Result<std::optional<LoopBacking>> loop_backing(const std::string& dev_path);
// LOOP_CLR_FD: detaches now, or (while the device is still open elsewhere) at its last close.
Status detach_loop(const std::string& dev_path);

// "loopN" for a block device number, through /sys/dev/block/MAJ:MIN; nullopt when it is not a loop
// device.
std::optional<std::string> loop_name_of(const std::string& sys_dir, dev_t device);

}  // namespace sealrun::ownedfs
