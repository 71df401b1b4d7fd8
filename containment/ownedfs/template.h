// SPDX-License-Identifier: Apache-2.0
// The owned file system's template (internal to containment/ownedfs): what mkfs.ext4 writes into a
// fresh sparse image of one shape is a few extents of metadata (about 50 KiB for 8 GiB with the
// options of mkfs_argv), and the same bytes every time but for the UUID and the directory hash
// seed. Running mkfs for every run costs a process and an fsync (~25–30 ms, most of it waiting);
// copying those extents into the run's new image costs well under a millisecond. So the first run
// of a shape runs mkfs, and before its image is ever attached or mounted, its data extents are
// saved as the shape's template; later runs write the template into their new image instead.
//
// Why this weakens nothing: a template is taken only from an image mkfs has just written and
// nothing has mounted, so it holds no run's data; each run still gets a new image file of its own
// (O_EXCL), written in full from the template before the loop device sees it. What differs from a
// fresh mkfs: every run's file system has the template's UUID and hash seed (the job can see the
// UUID only as statfs's f_fsid; nothing of another run's content).
//
// Where: STATE/ownedfs/templates/<key>.data (the extents' bytes, concatenated) and <key>.json
// ({format, key, extents: [[offset, length]...], data_sha256, size_bytes}), root's, 0600 in a 0700
// directory. The key is the SHA-256 of {mkfs binary's SHA-256, mkfs argv (image path left out),
// image size}: a new e2fsprogs, another size or another inode count is another template. A
// template whose record or data is unreadable, corrupt (its SHA-256 differs) or not ours is
// ignored: mkfs runs, and the template is written again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace sealrun::ownedfs {

// How a run's image got its file system, for the receipt's owned_space.made.
struct MadeBy {
  bool from_template = false;
  std::string note;  // "template <key>", or "mkfs.ext4" and why the template was not used
};

// The template key for this mkfs and shape.
Result<std::string> template_key(const std::string& mkfs, const std::vector<std::string>& argv,
                                 uint64_t size_bytes);

// Writes the template `key` into `image_fd` (a new, sparse, already sized image). Fails (with the
// reason) when there is none or it is unusable; the caller then runs mkfs.
Status write_from_template(int ownedfs_dirfd, const std::string& key, int image_fd,
                           uint64_t size_bytes);

// Saves the data extents of `image_fd` (freshly made by mkfs, never attached) as template `key`.
// Best effort for the caller: a failure only means the next run runs mkfs again.
Status save_template(int ownedfs_dirfd, const std::string& key, int image_fd, uint64_t size_bytes);

inline constexpr const char* kTemplateDir = "templates";

}  // namespace sealrun::ownedfs
