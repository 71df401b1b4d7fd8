// SPDX-License-Identifier: Apache-2.0
// Directories the caller writes into as root must be trustworthy all the way down, the rule of
// sshd's StrictModes: the directory and every one of its ancestors belong to root (or to the
// calling user, when that is not root) and nobody else can write them — otherwise whoever can
// write one of them can swap what lies below for a link and make root write (or read, or delete)
// where they point. An ancestor writable by others is accepted only with the sticky bit (as /tmp):
// there nobody can rename or remove an entry they do not own, and the next entry is checked to be
// trusted. The walk happens on descriptors, one component at a time without following any
// untrusted link, and hands back the descriptor of the directory it checked, so the caller keeps
// using exactly that directory (core/beneath.h) rather than a path that could be re-pointed.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <deque>
#include <string>

#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun {

// The non-empty components of a '/'-separated path ("/usr//bin/" -> usr, bin), for walks that
// resolve a path one component at a time.
std::deque<std::string> path_components(const std::string& path);

// root, and the caller's effective uid.
bool is_trusted_owner(uid_t uid);

// Why `st` (the directory `what`) is not trustworthy, or ok: an untrusted owner, or write
// permission for group or others (for an `ancestor`, others' write is fine with the sticky bit).
// The error says who owns it, its mode, and what to change.
Status check_trusted_dir(const struct stat& st, const std::string& what, bool ancestor);

struct TrustedDir {
  UniqueFd fd;       // the directory itself, O_RDONLY | O_DIRECTORY
  std::string path;  // the absolute path that was walked (as given, made absolute and normal)
};

// Walks the absolute form of `path` from "/" and checks every directory on the way
// (check_trusted_dir). A symlink on the way is followed only when a trusted user owns it (it sits
// in a directory already checked); at most 40 of them. With `create`, a missing last component is
// made (mkdirat in its checked parent, `mode`) and then checked like the rest; a missing parent is
// an error.
Result<TrustedDir> open_trusted_dir(const std::string& path, bool create, mode_t mode = 0755);

}  // namespace sealrun
