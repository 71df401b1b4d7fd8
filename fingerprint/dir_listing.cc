// SPDX-License-Identifier: Apache-2.0
// Reading one directory for the tree walk: see dir_listing.h.
#include "fingerprint/dir_listing.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

namespace sealrun {

Status list_names(int dirfd, bool rewind, const std::string& display, std::vector<char>& buffer,
                  NameList& out) {
  out.clear();
  // The root's descriptor belongs to the caller, who may have read it: from the start. (A
  // directory the walk opened itself is at its start already.)
  if (rewind && ::lseek(dirfd, 0, SEEK_SET) != 0)
    return Error::from_errno(fmt::format("read directory {}", display));
  if (buffer.empty()) buffer.resize(64 * 1024);
  for (;;) {
    const long n = ::syscall(SYS_getdents64, dirfd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::from_errno(fmt::format("read directory {}", display));
    }
    if (n == 0) return ok_status();
    for (long pos = 0; pos < n;) {
      const auto* de = reinterpret_cast<const struct dirent64*>(buffer.data() + pos);
      pos += de->d_reclen;
      const std::string_view name(de->d_name);
      if (name == "." || name == "..") continue;
      out.add(name, de->d_ino, de->d_type);
    }
  }
}

Result<std::string> read_link_at(int dirfd, const char* name, const struct stat& st,
                                 const std::string& display) {
  // st_size is the target's length for ordinary filesystems, 0 for some (procfs): start there and
  // grow until the result is not truncated.
  size_t size = std::max<size_t>(static_cast<size_t>(st.st_size) + 1, 256);
  for (;;) {
    std::string buf(size, '\0');
    ssize_t n = ::readlinkat(dirfd, name, buf.data(), buf.size());
    if (n < 0) return Error::from_errno(fmt::format("readlink {}", display));
    if (static_cast<size_t>(n) < buf.size()) {
      buf.resize(static_cast<size_t>(n));
      return buf;
    }
    size *= 2;
  }
}

bool d_ino_is_st_ino(uint64_t fs_type) {
  return fs_type == 0xEF53 || fs_type == 0x58465342 || fs_type == 0x01021994;
}

}  // namespace sealrun
