// SPDX-License-Identifier: Apache-2.0
// Reaching paths below a directory that was checked once and is then held open, so that nothing
// done to the path names afterwards can redirect what the caller opens, creates or removes: each
// path is resolved by the kernel with openat2(2) RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
// RESOLVE_NO_MAGICLINKS from the held descriptor — no component may be a symlink, none may climb
// out with "..", and a directory swapped for a link between a check and a write makes the write
// fail instead of landing where the link points (openat2 needs Linux 5.6). Removal walks with
// directory descriptors and never follows a link either. Relative paths only; "" is the directory
// itself.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "core/atomic_write.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun {

// openat2(dirfd, rel, flags | O_CLOEXEC | O_NOFOLLOW, mode) resolved beneath dirfd without any
// symlink. An error names `rel` and says when a link (ELOOP) or an escape (EXDEV) was refused.
Result<UniqueFd> open_beneath(int dirfd, const std::string& rel, int flags, mode_t mode = 0);
// The directory `rel` below dirfd (O_RDONLY | O_DIRECTORY), resolved as above.
Result<UniqueFd> open_dir_beneath(int dirfd, const std::string& rel);

// mkdir of `rel` below dirfd: its parent is resolved as above, then mkdirat(parent, last name).
// With `exist_ok`, an existing directory (never a symlink) is accepted.
Status make_dir_beneath(int dirfd, const std::string& rel, mode_t mode, bool exist_ok = false);
// Atomically replaces or creates `rel` below dirfd (temporary + fsync + rename + fsync of the
// directory, core/atomic_write.h) with its parent resolved as above.
Status write_file_atomic_beneath(int dirfd, const std::string& rel, std::string_view bytes,
                                 mode_t mode = 0644, DirSync dir_sync = DirSync::kNow);
// unlinkat of `rel` (a file or a link, or with `directory` an empty directory) below dirfd.
// Absent is not an error.
Status remove_beneath(int dirfd, const std::string& rel, bool directory = false);

// Removes `rel` below dirfd and everything in it without following any link (a link is removed
// as a link), making directories writable first so read-only ones a job left do not stop it.
// Directories are descended through descriptors; at most `max_depth` levels (deeper is an error,
// and what was reached is removed). Absent is not an error.
Status remove_tree_beneath(int dirfd, const std::string& rel, int max_depth = 512);

// Splits "a/b/c" into {"a/b", "c"} ({"", "c"} for "c").
std::pair<std::string, std::string> split_parent(std::string_view rel);

}  // namespace sealrun
