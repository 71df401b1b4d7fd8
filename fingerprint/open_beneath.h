// SPDX-License-Identifier: Apache-2.0
// Re-opening a regular file (or a symlink) that the tree walk found, by its path relative to the
// walk's root, without following anything: openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
// RESOLVE_NO_MAGICLINKS, so a directory on the way that was swapped for a symlink since the walk
// is refused instead of followed, and nothing outside the root can be reached. The opened inode
// must be the one the walk saw (dev, ino); anything else is an error naming the file.
//
// A path of PATH_MAX bytes or more (a tree thousands of directories deep), or a kernel without
// openat2 (before 5.6), is resolved one component at a time instead, each directory opened with
// O_NOFOLLOW | O_DIRECTORY relative to the previous one: the same guarantee, more system calls.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "core/result.h"
#include "fingerprint/display_name.h"
#include "fingerprint/file_hash.h"

namespace sealrun {

// Opens `rel` ('/'-separated names, no "." or ".." components) beneath `root_fd` for hashing
// (O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK) and checks it is the regular file (dev, ino).
// `display` names it in errors.
Result<OpenedRegularFile> open_regular_beneath(int root_fd, std::string_view rel,
                                               const DisplayName& display, dev_t dev, ino_t ino);

// Opens the symlink `rel` beneath `root_fd` itself (O_PATH | O_NOFOLLOW), the same way: for a
// target read after the walk (fstat it first: whatever is there now is what is opened).
Result<UniqueFd> open_symlink_beneath(int root_fd, std::string_view rel,
                                      const DisplayName& display);

}  // namespace sealrun
