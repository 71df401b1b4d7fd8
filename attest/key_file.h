// SPDX-License-Identifier: Apache-2.0
// Reading a key file without trusting the place it lives in. A signing key decides what an
// auditor will believe, so the file that holds it is checked the way ssh checks an identity file,
// through the open descriptor (no window between check and read): a regular file, not a symlink,
// at most 64 KiB, and — for a private key — owned by us (or root) and neither readable nor
// writable by group or others.
#pragma once

#include <string>

#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun::attest {

inline constexpr size_t kMaxKeyFileBytes = 64 * 1024;

// Opens `path` below the directory `dirfd` with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS):
// no component may be a symlink and none may climb out with "..". For files in a state directory
// that another user may be able to write (ACCEPTANCE 28). O_CLOEXEC is always added.
Result<UniqueFd> open_beneath(int dirfd, const std::string& path, int flags, mode_t mode = 0);

enum class KeySecrecy { kPublic, kPrivate };

// Reads a key file. With dirfd == AT_FDCWD, `path` is the user's own (absolute or relative) path:
// a symlink as its last component is refused, earlier components are the user's to choose. With a
// directory fd, the whole `path` is resolved by open_beneath(). Errors name `path`.
Result<std::string> read_key_file(int dirfd, const std::string& path, KeySecrecy secrecy);

}  // namespace sealrun::attest
