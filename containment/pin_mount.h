// SPDX-License-Identifier: Apache-2.0
// A pinned tree's read-only image (an EROFS file, controller/run/pin_images.h) mounted for one job:
// an erofs mount of the image file (opened read-only and verified by the caller) that is attached
// nowhere — fsopen/fsmount give a detached mount, which the bwrap launch clones into its private
// mount stage (mount_stage.h) and nowhere else. erofs mounts the file itself where the kernel can
// (6.12 on); else the file goes on a loop device that the kernel clears by itself when its last
// user goes (autoclear). No mount of it ever enters the host's mount table, so no other process's
// mount namespace can copy it, and nothing of it outlives the job: when the job's namespaces and
// our descriptor are gone, the mount goes (and with it a loop device, if one was used).
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "core/sweep_step.h"
#include "core/unique_fd.h"

namespace sealrun {

// What the loop devices of pin images are named (LO_NAME_SIZE bytes, in `losetup -a` and
// LOOP_GET_STATUS64): this prefix and the run id, so `sealrun sweep` can tell a killed run's.
inline constexpr const char* kPinLoopPrefix = "sealrun-pin:";

struct PinMount {
  UniqueFd mount;           // the detached, read-only (nosuid, nodev) erofs mount
  std::string loop_device;  // /dev/loopN, or "the image file" when mounted without one
};

// Mounts the image `image_fd` (opened O_RDONLY: a loop device is then read-only too) as erofs,
// read-only, nosuid, nodev, detached. `run_id` names the loop device, if one is needed.
Result<PinMount> mount_pin_image(int image_fd, const std::string& run_id,
                                 const std::string& dev_dir = "/dev");

// For `sealrun sweep`, once a killed run's processes are gone: the loop devices still named for
// `run_id`. Autoclear normally released them with the job's namespaces; one still bound and used
// by no process is detached (LOOP_CLR_FD), one still used is reported with its holders.
std::vector<SweepStep> sweep_pin_loops(const std::string& run_id,
                                       const std::string& dev_dir = "/dev",
                                       const std::string& sys_dir = "/sys",
                                       const std::string& proc_dir = "/proc");

}  // namespace sealrun
