// SPDX-License-Identifier: Apache-2.0
// Reading a small file that someone else wrote (an admission, a receipt, a manifest) without
// trusting it: never follow a symlink, never block on a FIFO, never read a device, never read more
// than a stated cap. The file is checked through the open descriptor, so no swap between check and
// read can slip past.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "core/result.h"

namespace sealrun {

// Reads the regular file at `path` (relative to `dirfd`) whole, refusing a symlink as the final
// component, a non-regular file, or one larger than `max_bytes` (checked by size and while reading,
// so a file that grows under us is refused too).
Result<std::string> read_bounded_file(int dirfd, const std::string& path, size_t max_bytes);
inline constexpr size_t kMiB = 1024 * 1024;

// "a directory", "a FIFO", ... for a message that says what a path is instead of a regular file.
const char* file_kind_name(mode_t mode);

}  // namespace sealrun
