// SPDX-License-Identifier: Apache-2.0
// Reading one directory for the tree walk (tree_walk.cc): its names with their d_ino and d_type in
// one getdents64(2) pass into a buffer the walking thread reuses, a symlink's target, and what the
// walk may conclude from a listing on a given file system.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace sealrun {

// The names in one directory. Each name is NUL-terminated in `bytes` (for fstatat) and found by
// its offset, so that reading a directory costs no allocation of its own once the vectors grew.
struct NameList {
  std::vector<char> bytes;
  std::vector<uint32_t> starts;
  std::vector<uint64_t> inodes;  // d_ino
  std::vector<uint8_t> types;    // d_type (DT_UNKNOWN where the file system does not say)
  const char* at(size_t i) const { return bytes.data() + starts[i]; }
  void clear() {
    bytes.clear();
    starts.clear();
    inodes.clear();
    types.clear();
  }
  void add(std::string_view name, uint64_t inode, uint8_t type) {
    starts.push_back(static_cast<uint32_t>(bytes.size()));
    inodes.push_back(inode);
    types.push_back(type);
    bytes.insert(bytes.end(), name.begin(), name.end());
    bytes.push_back('\0');
  }
};

// Lists `dirfd` into `out` ("." and ".." left out), with `buffer` as getdents64's. `rewind`: from
// the start, for a descriptor someone else may have read (the walk's root, the caller's).
// `display` names the directory in errors.
Status list_names(int dirfd, bool rewind, const std::string& display, std::vector<char>& buffer,
                  NameList& out);

// The target of the symlink `name` in `dirfd` whose lstat is `st`, however long.
Result<std::string> read_link_at(int dirfd, const char* name, const struct stat& st,
                                 const std::string& display);

// File systems (statfs f_type) whose getdents64 d_ino is the st_ino of the entry (mount points
// aside), so that a directory found by its listing need not be lstat'ed by its parent: ext2/3/4,
// xfs, tmpfs. Not overlayfs (d_ino of a merged directory may be a lower layer's) or btrfs (a
// subvolume's entry), nor any other.
bool d_ino_is_st_ino(uint64_t fs_type);

}  // namespace sealrun
