// SPDX-License-Identifier: Apache-2.0
// Pin images served to a rootless podman job (docs/view.md, "How pinned bytes are served").
// Podman binds its mounts by path, in the user and mount namespaces of its rootless pause process,
// which it makes (per run: its XDG_RUNTIME_DIR is the run's) as a copy of the controller's mount
// namespace at the run's first podman command. A detached mount (bwrap's way, pin_mount.h) cannot
// be handed over by path, so each verified image is mounted (erofs, read-only, nosuid, nodev:
// pin_mount.h) and attached at <owned_root>/pins/<n> *before* that first command, in the
// controller's private mount namespace (ownedfs/private_ns.h) — never the host's, so no other run
// or host process can see or copy it; the pause process copies it (its copy is locked read-only:
// a less privileged namespace cannot remount it) and `podman run` binds from there with ro,
// nosuid, nodev. The spec podman is given names those paths instead of the host's.
//
// After the job (and the pause process) is gone they are unmounted and their directories
// removed; for a killed controller, the kernel drops them with its namespace once `sweep` has
// ended the last process in it (podman's, sweep_podman_storage), and a loop device, if erofs could
// not mount the file itself, clears itself (autoclear; sweep_pin_loops() reports one left).
#pragma once

#include <string>
#include <vector>

#include "containment/spec.h"
#include "core/result.h"

namespace sealrun::podman {

// The directory below the owned root where a run's pin images are attached.
std::string pin_mount_dir(const std::string& owned_root);

class PinImageMounts {
 public:
  PinImageMounts() = default;
  PinImageMounts(PinImageMounts&& other) noexcept
      : dir_(std::move(other.dir_)), points_(std::move(other.points_)) {
    other.dir_.clear();
    other.points_.clear();
  }
  PinImageMounts& operator=(PinImageMounts&&) = delete;
  PinImageMounts(const PinImageMounts&) = delete;
  ~PinImageMounts();  // detach() if not done: nothing stays mounted after a failed start

  // Mounts each image `spec` names (MountSpec::image_fd, closure_image_fd) once and returns the
  // spec podman is to be given: those mounts' sources, and each closure file's host path, point
  // into the attached images. Refused outside a private mount namespace (the host's would let
  // every later namespace copy the mounts). On failure nothing stays mounted.
  Result<ContainmentSpec> attach(const ContainmentSpec& spec, std::vector<std::string>& actions);

  // Unmounts each image and removes its directory, and then pin_mount_dir(); each step reported.
  // Call once podman's processes for the run are gone (then nothing holds them).
  Status detach(std::vector<std::string>& actions);

  bool empty() const { return points_.empty(); }

 private:
  std::string dir_;                  // pin_mount_dir(), once made
  std::vector<std::string> points_;  // attached mount points, in attach order
};

}  // namespace sealrun::podman
