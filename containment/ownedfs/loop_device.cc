// SPDX-License-Identifier: Apache-2.0
// Loop devices: see loop_device.h.
#include "containment/ownedfs/loop_device.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstring>

#include "core/syscall.h"

namespace sealrun::ownedfs {

namespace {
constexpr int kAttachAttempts = 16;  // another process may take the free device between our calls
}

Result<LoopDevice> attach_loop(const std::string& dev_dir, int image_fd,
                               const std::string& image_name) {
  auto control = SEALRUN_TRY(open_at(AT_FDCWD, dev_dir + "/loop-control", O_RDWR));
  for (int attempt = 0; attempt < kAttachAttempts; ++attempt) {
    int n = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (n < 0) return Error::from_errno("LOOP_CTL_GET_FREE");
    LoopDevice loop;
    loop.path = fmt::format("{}/loop{}", dev_dir, n);
    auto fd = open_at(AT_FDCWD, loop.path, O_RDWR);
    if (!fd) {
      if (fd.error().err() == ENOENT) continue;  // the node is not there yet
      return std::move(fd).error();
    }
    loop.fd = std::move(*fd);
    struct loop_config cfg {};
    cfg.fd = static_cast<uint32_t>(image_fd);
    cfg.block_size = 4096;
    cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO;
    std::strncpy(reinterpret_cast<char*>(cfg.info.lo_file_name), image_name.c_str(),
                 LO_NAME_SIZE - 1);
    int rc = ::ioctl(loop.fd.get(), LOOP_CONFIGURE, &cfg);
    if (rc != 0 && errno == EINVAL) {  // no direct I/O on this backing filesystem
      cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
      rc = ::ioctl(loop.fd.get(), LOOP_CONFIGURE, &cfg);
    }
    if (rc != 0) {
      if (errno == EBUSY) continue;  // taken meanwhile: ask for another
      return Error::from_errno("LOOP_CONFIGURE " + loop.path);
    }
    struct loop_info64 info {};
    if (::ioctl(loop.fd.get(), LOOP_GET_STATUS64, &info) == 0)
      loop.direct_io = (info.lo_flags & LO_FLAGS_DIRECT_IO) != 0;
    return loop;
  }
  return Error::make(fmt::format("no free loop device after {} attempts", kAttachAttempts));
}

Result<std::optional<LoopBacking>> loop_backing(const std::string& dev_path) {
  auto fd = open_at(AT_FDCWD, dev_path, O_RDONLY);
  if (!fd) {
    if (fd.error().err() == ENOENT || fd.error().err() == ENXIO)
      return std::optional<LoopBacking>();
    return std::move(fd).error();
  }
  struct loop_info64 info {};
  if (::ioctl(fd->get(), LOOP_GET_STATUS64, &info) != 0) {
    if (errno == ENXIO) return std::optional<LoopBacking>();  // bound to nothing
    return Error::from_errno("LOOP_GET_STATUS64 " + dev_path);
  }
  return std::optional<LoopBacking>(LoopBacking{static_cast<dev_t>(info.lo_device),
                                                static_cast<ino_t>(info.lo_inode), info.lo_flags});
}

Status detach_loop(const std::string& dev_path) {
  auto fd = SEALRUN_TRY(open_at(AT_FDCWD, dev_path, O_RDONLY));
  if (::ioctl(fd.get(), LOOP_CLR_FD) != 0 && errno != ENXIO)
    return Error::from_errno("LOOP_CLR_FD " + dev_path);
  return ok_status();
}

std::optional<std::string> loop_name_of(const std::string& sys_dir, dev_t device) {
  std::string link = fmt::format("{}/dev/block/{}:{}", sys_dir, major(device), minor(device));
  char buf[512];
  ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return std::nullopt;
  std::string target(buf, static_cast<size_t>(n));
  std::string name = target.substr(target.rfind('/') + 1);
  if (name.rfind("loop", 0) != 0 || name.size() == 4) return std::nullopt;
  for (size_t i = 4; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return std::nullopt;  // a partition (loop0p1) is not ours
  return name;
}

}  // namespace sealrun::ownedfs
