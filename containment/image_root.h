// SPDX-License-Identifier: Apache-2.0
// An unpacked image as the root of a bubblewrap job (issue 16: "the image's root file system, for
// bwrap too"). bwrap 0.8 has no overlay, and binding the image's root at "/" read-only would leave
// no way to create the mount points of /src, /out or the toolchain inside it. So the job's root
// stays the empty tmpfs, and the image's entries are bound into it one by one, read-only: each
// top-level entry of the rootfs, except where another entry of the view lies inside it — then that
// directory is made in the tmpfs and its own entries are bound instead (recursively), so the
// other mount has a place to go. An entry at the very path of another view entry is left out
// (the other covers it). Symlinks become links of the view.
#pragma once

#include <string>
#include <vector>

#include "containment/spec.h"
#include "core/result.h"

namespace sealrun {

struct ImageRootPlan {
  std::vector<MountSpec> mounts;  // kind kImage, read-only, pin = the image id
  std::vector<ViewEntry> links;   // kind kLink
};

// Reads `rootfs` (lstat, readdir; never following a link) and plans its entries around
// `other_paths` (the job paths of every other view entry, /proc, /dev and /tmp included).
Result<ImageRootPlan> plan_image_root(const std::string& rootfs, const std::string& image_id,
                                      const std::vector<std::string>& other_paths);

}  // namespace sealrun
