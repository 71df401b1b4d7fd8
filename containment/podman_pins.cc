// SPDX-License-Identifier: Apache-2.0
// PinImageMounts: see podman_pins.h.
#include "containment/podman_pins.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <map>

#include "containment/ownedfs/private_ns.h"
#include "containment/pin_mount.h"
#include "core/syscall.h"

namespace sealrun::podman {

namespace {

// The mounts podman would bind from an image (an unpacked image root's entries are bwrap's only).
bool served_from_image(const MountSpec& m) { return m.image_fd >= 0 && m.kind != ViewKind::kImage; }

}  // namespace

std::string pin_mount_dir(const std::string& owned_root) { return owned_root + "/pins"; }

PinImageMounts::~PinImageMounts() {
  if (points_.empty() && dir_.empty()) return;
  std::vector<std::string> ignored;
  (void)detach(ignored);
}

Result<ContainmentSpec> PinImageMounts::attach(const ContainmentSpec& spec,
                                               std::vector<std::string>& actions) {
  ContainmentSpec served = spec;
  bool any = spec.closure_image_fd >= 0;
  for (const MountSpec& m : spec.mounts) any = any || served_from_image(m);
  if (!any) return served;
  // In the host's namespace the mounts would be copied into every namespace made while they
  // exist (another run's bwrap stage or pause process), and outlive our unmount there.
  if (!ownedfs::in_private_mount_namespace())
    return Error::make(
        "pin images for podman are mounted only in the controller's private mount namespace, and "
        "this thread is in the host's");
  dir_ = pin_mount_dir(spec.owned_root);
  // Root's, made now (a fresh owned root has none; anything already there is refused), before
  // podman, which runs as the job user, is started for this run.
  if (::mkdir(dir_.c_str(), 0755) != 0) {
    int err = errno;
    dir_.clear();
    return Error::with_errno(err,
                             "make the pin images' directory " + pin_mount_dir(spec.owned_root));
  }
  auto dir = SEALRUN_TRY(open_at(AT_FDCWD, dir_, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
  struct stat st {};
  if (::fstat(dir.get(), &st) != 0 || st.st_uid != ::geteuid() || ::fchmod(dir.get(), 0755) != 0)
    return Error::make(fmt::format("{} is not a directory of this controller's user", dir_));

  std::map<int, std::string> mounted;  // image descriptor -> where it is attached
  auto attach_one = [&](int image_fd, const std::string& what) -> Result<std::string> {
    if (auto it = mounted.find(image_fd); it != mounted.end()) return it->second;
    std::string name = std::to_string(mounted.size());
    std::string point = dir_ + "/" + name;
    if (::mkdirat(dir.get(), name.c_str(), 0755) != 0) return Error::from_errno("make " + point);
    auto target = SEALRUN_TRY(open_at(dir.get(), name, O_PATH | O_DIRECTORY | O_NOFOLLOW));
    auto pm = SEALRUN_TRY_CTX(mount_pin_image(image_fd, spec.run_id), "pin image of " + what);
    if (::move_mount(pm.mount.get(), "", target.get(), "",
                     MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
      return Error::from_errno(fmt::format("pin image of {}: attach it at {}", what, point));
    points_.push_back(point);
    mounted.emplace(image_fd, point);
    actions.push_back(
        fmt::format("mounted the pin image of {} at {} (erofs from {}; read-only, nosuid, nodev; "
                    "in the controller's mount namespace only)",
                    what, point, pm.loop_device));
    return point;
  };
  auto attach_all = [&]() -> Status {
    for (MountSpec& m : served.mounts) {
      if (!served_from_image(m)) continue;
      std::string point = SEALRUN_TRY(attach_one(m.image_fd, m.target));
      m.source = m.image_subpath.empty() ? point : point + "/" + m.image_subpath;
    }
    if (spec.closure_image_fd >= 0) {
      std::string point = SEALRUN_TRY(attach_one(spec.closure_image_fd, "the closure"));
      // The closure image holds each file at its host path (pin_images.h).
      for (ViewEntry& e : served.files_and_links)
        if (e.kind == ViewKind::kClosure) e.host_path = point + e.host_path;
    }
    return ok_status();
  };
  if (auto st = attach_all(); !st) {
    std::vector<std::string> undo;
    (void)detach(undo);
    return std::move(st).error();
  }
  return served;
}

Status PinImageMounts::detach(std::vector<std::string>& actions) {
  std::vector<std::string> failed;
  for (auto it = points_.rbegin(); it != points_.rend(); ++it) {
    const std::string& point = *it;
    // Nothing holds it once podman's processes are gone; if something still does, it is taken
    // out of our namespace all the same and goes with its last user.
    if (::umount2(point.c_str(), UMOUNT_NOFOLLOW) == 0) {
      actions.push_back("unmounted the pin image at " + point);
    } else if (errno == EBUSY && ::umount2(point.c_str(), UMOUNT_NOFOLLOW | MNT_DETACH) == 0) {
      actions.push_back("pin image at " + point + " busy: detached (goes with its last user)");
    } else {
      failed.push_back(fmt::format("unmount {}: {}", point, std::strerror(errno)));
      continue;
    }
    if (::rmdir(point.c_str()) != 0)
      failed.push_back(fmt::format("remove {}: {}", point, std::strerror(errno)));
  }
  points_.clear();
  if (!dir_.empty()) {
    if (::rmdir(dir_.c_str()) != 0 && errno != ENOENT)
      failed.push_back(fmt::format("remove {}: {}", dir_, std::strerror(errno)));
    else
      actions.push_back("removed " + dir_);
    dir_.clear();
  }
  for (const auto& f : failed) actions.push_back("pin images: " + f);
  if (!failed.empty()) return Error::make("pin images not all removed: " + failed.front());
  return ok_status();
}

}  // namespace sealrun::podman
