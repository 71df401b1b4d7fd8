// SPDX-License-Identifier: Apache-2.0
// read_bounded_file(): see bounded_file.h.
#include "core/bounded_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include "core/syscall.h"

namespace sealrun {

const char* file_kind_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symlink";
  return "not a regular file";
}

Result<std::string> read_bounded_file(int dirfd, const std::string& path, size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  // O_NOFOLLOW: a symlink as the last component fails with ELOOP instead of being followed.
  auto fd = open_at(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (!fd) {
    if (fd.error().err() == ELOOP)
      return Error::make(fmt::format("{}: is a symlink; give the file itself", path));
    return std::move(fd).error();
  }
  auto st = SEALRUN_TRY(fstat_fd(fd->get(), path));
  if (!S_ISREG(st.st_mode))
    return Error::make(
        fmt::format("{}: is {}; expected a regular file", path, file_kind_name(st.st_mode)));
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    return Error::make(
        fmt::format("{}: is {} bytes, over the limit of {} bytes", path, st.st_size, max_bytes));
  // Regular files ignore O_NONBLOCK for reads, so the read below is ordinary.
  auto bytes = SEALRUN_TRY(read_up_to(fd->get(), max_bytes + 1, path));
  if (bytes.size() > max_bytes)
    return Error::make(
        fmt::format("{}: grew past the limit of {} bytes while being read", path, max_bytes));
  return bytes;
}

}  // namespace sealrun
