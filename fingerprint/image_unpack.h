// SPDX-License-Identifier: Apache-2.0
// Unpacking a pinned image's root file system (for bubblewrap, which has no image store of its
// own: issue 16, docs/view.md). Each layer is copied out of the archive into a private file while
// it is hashed, and used only when that digest is the pinned diff id; its members are then
// created below the destination through held directory descriptors (core/beneath.h: no symlink
// is ever followed, nothing lands outside), so a hostile layer — a symlink to /etc followed by a
// file "through" it, in the same or a later layer — cannot write anywhere but into the rootfs.
// OCI whiteouts (".wh.NAME" removes NAME from the layers below, ".wh..wh..opq" empties its
// directory) are applied before the layer's own members. Device nodes and FIFOs are skipped (a
// job has no use for them in a read-only root, and creating devices is not something to do for a
// layer); hard links are linked beneath the root; a member below a symlink is refused. Owners and
// modes are the layer's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace sealrun {

struct UnpackedImage {
  uint64_t layers = 0;
  uint64_t entries = 0;  // members created
  uint64_t skipped = 0;  // device nodes and FIFOs left out
  uint64_t bytes = 0;    // regular file bytes written
};

// Unpacks the image archive at `archive`, whose identity must be `image_id` with `diff_ids`
// (checked again here: the archive is read afresh), into `dest`, an existing empty directory.
// gzip layers are inflated (at most 16 GiB each); zstd layers are refused with a message saying
// so. `scratch` is a directory for the temporary layer copies (held open, unlinked at once).
Result<UnpackedImage> unpack_image(const std::string& archive, const std::string& image_id,
                                   const std::vector<std::string>& diff_ids,
                                   const std::string& dest, const std::string& scratch);

}  // namespace sealrun
