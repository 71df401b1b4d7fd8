// mount_pin_image(): see pin_mount.h.
#include "containment/pin_mount.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "containment/ownedfs/loop_device.h"
#include "containment/ownedfs/mounts.h"
#include "containment/ownedfs/record.h"
#include "core/syscall.h"

namespace sealrun {

namespace {

// An erofs file system context, read-only, on `source`, mounted detached, read-only, nosuid, nodev.
Result<UniqueFd> erofs_mount(const std::string& source) {
  UniqueFd fsfd(::fsopen("erofs", FSOPEN_CLOEXEC));
  if (!fsfd) return Error::from_errno("pin image: fsopen erofs");
  // "ro": a read-only block device is refused (EACCES) by a context that asks for writing.
  if (::fsconfig(fsfd.get(), FSCONFIG_SET_FLAG, "ro", nullptr, 0) != 0 ||
      ::fsconfig(fsfd.get(), FSCONFIG_SET_STRING, "source", source.c_str(), 0) != 0 ||
      ::fsconfig(fsfd.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    int err = errno;
    return Error::with_errno(err, fmt::format("pin image: mount {} as erofs{}", source,
                                              ownedfs::fs_context_messages(fsfd.get())));
  }
  UniqueFd mnt(::fsmount(fsfd.get(), FSMOUNT_CLOEXEC,
                         MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
  if (!mnt) return Error::from_errno("pin image: fsmount " + source);
  return mnt;
}

}  // namespace

Result<PinMount> mount_pin_image(int image_fd, const std::string& run_id,
                                 const std::string& dev_dir) {
  // A descriptor without write access makes the loop device read-only (LOOP_CONFIGURE).
  int mode = ::fcntl(image_fd, F_GETFL);
  if (mode < 0 || (mode & O_ACCMODE) != O_RDONLY)
    return Error::make("pin image: the image must be opened read-only");
  PinMount out;
  // First the image file itself (erofs mounts a regular file since Linux 6.12, without a loop
  // device: 0.06 ms against 3-8 ms, bench/README.md "Pin images"), named through the descriptor
  // that was verified, so it is that very file.
  auto direct = erofs_mount(fmt::format("/proc/self/fd/{}", image_fd));
  if (direct) {
    out.mount = std::move(*direct);
    out.loop_device = "the image file";
    return out;
  }
  // Else (an older kernel refuses a file: ENOTBLK) through a loop device.
  auto loop = SEALRUN_TRY_CTX(ownedfs::attach_loop(dev_dir, image_fd, kPinLoopPrefix + run_id),
                              "pin image: loop device");
  out.loop_device = loop.path;
  out.mount = SEALRUN_TRY(erofs_mount(loop.path));
  // The file system holds the device now; autoclear detaches it when the last mount goes.
  loop.fd.reset();
  return out;
}

std::vector<SweepStep> sweep_pin_loops(const std::string& run_id, const std::string& dev_dir,
                                       const std::string& sys_dir, const std::string& proc_dir) {
  std::vector<SweepStep> steps;
  std::string name = kPinLoopPrefix + run_id;
  auto dir = open_at(AT_FDCWD, sys_dir + "/block", O_RDONLY | O_DIRECTORY);
  if (!dir) return steps;
  auto names = ownedfs::list_names(dir->get());
  if (!names) return steps;
  for (const auto& dev : *names) {
    if (dev.rfind("loop", 0) != 0) continue;
    std::string path = dev_dir + "/" + dev;
    auto fd = open_at(AT_FDCWD, path, O_RDONLY);
    if (!fd) continue;
    struct loop_info64 info {};
    if (::ioctl(fd->get(), LOOP_GET_STATUS64, &info) != 0) continue;  // bound to nothing
    std::string file(reinterpret_cast<const char*>(info.lo_file_name),
                     ::strnlen(reinterpret_cast<const char*>(info.lo_file_name), LO_NAME_SIZE));
    if (file != name) continue;
    fd->reset();
    SweepStep s{"pin image loop device " + path, "", false};
    struct stat st {};
    auto holders = ::stat(path.c_str(), &st) == 0 ? ownedfs::mount_holders(proc_dir, st.st_rdev)
                                                  : std::vector<std::string>{};
    if (!holders.empty()) {
      s.outcome = "still in use by " + holders.front() + (holders.size() > 1 ? " and more" : "") +
                  ": released by the kernel when that goes (autoclear)";
      s.left = true;
    } else if (auto st2 = ownedfs::detach_loop(path); st2) {
      s.outcome = "detached (LOOP_CLR_FD)";
    } else {
      s.outcome = "detach failed: " + st2.error().message();
      s.left = true;
    }
    steps.push_back(std::move(s));
  }
  return steps;
}

}  // namespace sealrun
