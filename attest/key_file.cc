// SPDX-License-Identifier: Apache-2.0
// open_beneath() and read_key_file(): see key_file.h.
#include "attest/key_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/bounded_file.h"
#include "core/syscall.h"

namespace sealrun::attest {
Result<UniqueFd> open_beneath(int dirfd, const std::string& path, int flags, mode_t mode) {
  struct open_how how {};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.mode = (flags & O_CREAT) != 0 ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  // glibc 2.36 has no openat2() wrapper; the system call exists since Linux 5.6.
  long fd =
      retry_eintr([&] { return ::syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof(how)); });
  if (fd < 0) {
    if (errno == ELOOP)
      return Error::from_errno(
          fmt::format("open {}: a symlink on the way (refused: this directory may be writable by "
                      "someone else)",
                      path));
    if (errno == EXDEV)
      return Error::from_errno(fmt::format("open {}: the path leaves its directory", path));
    return Error::from_errno(fmt::format("open {}", path));
  }
  return UniqueFd(static_cast<int>(fd));
}

Result<std::string> read_key_file(int dirfd, const std::string& path, KeySecrecy secrecy) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer; O_NOCTTY: a tty is not adopted.
  int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
  Result<UniqueFd> fd =
      dirfd == AT_FDCWD ? open_at(AT_FDCWD, path, flags) : open_beneath(dirfd, path, flags);
  if (!fd) {
    if (fd.error().err() == ELOOP && dirfd == AT_FDCWD)
      return Error::make(fmt::format("key file {}: is a symlink; give the file itself", path));
    return std::move(fd).error().context(fmt::format("key file {}", path));
  }
  auto st = SEALRUN_TRY_CTX(fstat_fd(fd->get(), path), fmt::format("key file {}", path));
  if (!S_ISREG(st.st_mode))
    return Error::make(fmt::format("key file {}: is {}; expected a regular file", path,
                                   file_kind_name(st.st_mode)));
  if (static_cast<uint64_t>(st.st_size) > kMaxKeyFileBytes)
    return Error::make(fmt::format("key file {}: is {} bytes; a key file is at most {} bytes", path,
                                   st.st_size, kMaxKeyFileBytes));
  if (secrecy == KeySecrecy::kPrivate) {
    if ((st.st_mode & 077) != 0)
      return Error::make(fmt::format(
          "key file {}: is readable or writable by group or others (mode {:04o}); a signing key "
          "must be private to its owner: chmod 600 {}",
          path, st.st_mode & 07777, path));
    if (st.st_uid != ::geteuid() && st.st_uid != 0)
      return Error::make(fmt::format(
          "key file {}: is owned by uid {}, not by the signer (uid {}) or root; whoever owns it "
          "can replace it",
          path, st.st_uid, ::geteuid()));
  }
  auto text = SEALRUN_TRY_CTX(read_up_to(fd->get(), kMaxKeyFileBytes + 1, path),
                              fmt::format("key file {}", path));
  if (text.size() > kMaxKeyFileBytes)
    return Error::make(
        fmt::format("key file {}: grew past {} bytes while being read", path, kMaxKeyFileBytes));
  return text;
}

}  // namespace sealrun::attest
