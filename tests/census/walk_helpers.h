// SPDX-License-Identifier: Apache-2.0
// Helpers for the census tests: trees deeper than PATH_MAX (built and removed by descriptor, since
// no path reaches their bottom), and running a measurement as an unprivileged user (root reads
// everything, so "a tree the walker cannot read" needs a walker that is not root).
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "tests/support/unprivileged.h"

namespace sealrun::census::testing {

// Builds `depth` nested directories (named `name` + level, so that their order beside the sibling
// varies with the directory hash) under dir_fd; at every level also a directory "side<level>" with
// one empty file, and a file "f" of `file_bytes` bytes. Returns false on any failure.
inline bool make_deep_tree(int dir_fd, int depth, const std::string& name, size_t file_bytes) {
  int fd = ::dup(dir_fd);
  std::string bytes(file_bytes, 'd');
  for (int i = 0; i < depth && fd >= 0; ++i) {
    std::string next_name = name + std::to_string(i), side = "side" + std::to_string(i);
    if (::mkdirat(fd, next_name.c_str(), 0755) != 0 || ::mkdirat(fd, side.c_str(), 0755) != 0)
      break;
    int e = ::openat(fd, (side + "/e").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (e < 0) break;
    ::close(e);
    int f = ::openat(fd, "f", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (f < 0 || ::write(f, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()))
      break;
    ::close(f);
    int next = ::openat(fd, next_name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ::close(fd);
    fd = next;
    if (i == depth - 1) {
      ::close(fd);
      return true;
    }
  }
  if (fd >= 0) ::close(fd);
  return false;
}

// Removes everything below dir_fd by descriptor (depth-first; fine for thousands of levels).
inline void remove_below(int dir_fd) {
  int fd = ::dup(dir_fd);
  ::lseek(fd, 0, SEEK_SET);
  if (DIR* d = ::fdopendir(fd)) {
    while (struct dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      if (::unlinkat(dir_fd, n.c_str(), 0) == 0) continue;
      int sub = ::openat(dir_fd, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) {
        ::fchmod(sub, 0755);
        remove_below(sub);
        ::close(sub);
      }
      ::unlinkat(dir_fd, n.c_str(), AT_REMOVEDIR);
    }
    ::closedir(d);
  }
}

using sealrun::testing::run_unprivileged;

}  // namespace sealrun::census::testing
