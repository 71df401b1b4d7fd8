// SPDX-License-Identifier: Apache-2.0
// The system-call wrappers declared in syscall.h.
#include "core/syscall.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <ctime>

namespace sealrun {

Result<UniqueFd> open_at(int dirfd, const std::string& path, int flags, mode_t mode) {
  int fd = retry_eintr([&] { return ::openat(dirfd, path.c_str(), flags | O_CLOEXEC, mode); });
  if (fd < 0) return Error::from_errno(fmt::format("open {}", path));
  return UniqueFd(fd);
}

Result<struct stat> fstat_fd(int fd, const std::string& what) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Error::from_errno(fmt::format("fstat {}", what));
  return st;
}

Result<struct stat> lstat_at(int dirfd, const std::string& path) {
  struct stat st {};
  if (::fstatat(dirfd, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return Error::from_errno(fmt::format("lstat {}", path));
  return st;
}

Status write_all(int fd, std::string_view bytes, const std::string& what) {
  while (!bytes.empty()) {
    ssize_t n = retry_eintr([&] { return ::write(fd, bytes.data(), bytes.size()); });
    if (n < 0) return Error::from_errno(fmt::format("write {}", what));
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return ok_status();
}

std::vector<std::string> list_dir_names(int dirfd, size_t max) {
  std::vector<std::string> names;
  int dup = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return names;
  DIR* d = ::fdopendir(dup);
  if (d == nullptr) {
    ::close(dup);
    return names;
  }
  ::rewinddir(d);
  while (names.size() < max) {
    struct dirent* e = ::readdir(d);
    if (e == nullptr) break;
    std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
  }
  ::closedir(d);
  return names;
}

Result<std::string> read_up_to(int fd, size_t max, const std::string& what) {
  std::string out;
  char buf[65536];
  while (out.size() < max) {
    size_t want = std::min(sizeof(buf), max - out.size());
    ssize_t n = retry_eintr([&] { return ::read(fd, buf, want); });
    if (n < 0) return Error::from_errno(fmt::format("read {}", what));
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Result<Pipe> make_pipe(int extra_flags) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | extra_flags) != 0) return Error::from_errno("pipe2");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

Status make_dir_at(int dirfd, const std::string& path, mode_t mode) {
  if (::mkdirat(dirfd, path.c_str(), mode) != 0)
    return Error::from_errno(fmt::format("mkdir {}", path));
  return ok_status();
}

int64_t monotonic_ms() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string utc_timestamp_now() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm {};
  ::gmtime_r(&ts.tv_sec, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

}  // namespace sealrun
