// The image's root file system for a bubblewrap run (docs/view.md): the pinned archive's layers,
// each verified against its diff id, unpacked once into a content-addressed, read-only cache,
// STATE/images/<image id hex>/rootfs, which later runs share. The unpacking happens in this
// controller's temporaries (STATE/tmp/<pid>.<start>/image-<hex>), which `sealrun sweep` removes
// when the controller died, and is renamed into place whole, so a rootfs under images/ is always
// complete. Its entries then become the job's root entries (view kind `image`).
#pragma once

#include <string>

#include "controller/run_context.h"

namespace sealrun::run {

// STATE/images/<hex>/rootfs for the admitted image, unpacking it first when absent.
Result<std::string> image_rootfs(const StateDir& state, const std::string& temp_dir,
                                 const admission::ImagePin& image);

// For a bwrap grant of an admission with an image: the rootfs's entries added to the grant's
// spec (mounts first, so every other entry binds on top) and its links to the view.
Status add_image_root(RunContext& run);

}  // namespace sealrun::run
