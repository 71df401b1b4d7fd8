// SPDX-License-Identifier: Apache-2.0
// Re-opening a walked file beneath the root: see open_beneath.h.
#include "fingerprint/open_beneath.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <string_view>

#include "core/syscall.h"

namespace sealrun {
namespace {

constexpr int kFileFlags = O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC;

Error open_failed(int err, const DisplayName& name) {
  const std::string display = name.str();
  if (err == ELOOP)
    return Error::make(fmt::format(
        "{}: a symlink appeared on its path during the walk (sealrun never follows symlinks); "
        "hash the tree again once it is no longer changing",
        display));
  if (err == ENOENT || err == ENOTDIR)
    return Error::with_errno(
        err, fmt::format("open {} (did the tree change during the walk?)", display));
  return Error::with_errno(err, fmt::format("open {}", display));
}

// One name at a time, each directory with O_NOFOLLOW | O_DIRECTORY: for paths openat2 cannot
// take (PATH_MAX or longer) and kernels without it.
Result<UniqueFd> open_by_components(int root_fd, std::string_view rel, int last_flags,
                                    const DisplayName& display) {
  UniqueFd dir;
  int at = root_fd;
  size_t start = 0;
  for (;;) {
    const size_t slash = rel.find('/', start);
    const std::string name(
        rel.substr(start, slash == std::string_view::npos ? rel.npos : slash - start));
    const bool last = slash == std::string_view::npos;
    const int flags = last ? last_flags : O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    const int fd = retry_eintr([&] { return ::openat(at, name.c_str(), flags); });
    if (fd < 0) return open_failed(errno, display);
    if (last) return UniqueFd(fd);
    dir.reset(fd);
    at = dir.get();
    start = slash + 1;
  }
}

// `rel` beneath `root_fd`, its last name opened with `flags`, nothing followed on the way.
Result<UniqueFd> open_beneath(int root_fd, std::string_view rel, int flags,
                              const DisplayName& display) {
  if (rel.size() < PATH_MAX) {
    // NUL-terminated on the stack: the walk's paths are views into its arena, and a copy into a
    // std::string cost an allocation per file.
    char path[PATH_MAX];
    std::memcpy(path, rel.data(), rel.size());
    path[rel.size()] = '\0';
    struct open_how how {};
    how.flags = static_cast<uint64_t>(flags);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    const int rc = static_cast<int>(
        retry_eintr([&] { return ::syscall(SYS_openat2, root_fd, path, &how, sizeof(how)); }));
    if (rc >= 0) return UniqueFd(rc);
    if (errno != ENOSYS && errno != ENAMETOOLONG) return open_failed(errno, display);
  }
  return open_by_components(root_fd, rel, flags, display);
}

}  // namespace

Result<OpenedRegularFile> open_regular_beneath(int root_fd, std::string_view rel,
                                               const DisplayName& display, dev_t dev, ino_t ino) {
  UniqueFd fd = SEALRUN_TRY(open_beneath(root_fd, rel, kFileFlags, display));
  return adopt_opened_regular(std::move(fd), display, dev, ino);
}

Result<UniqueFd> open_symlink_beneath(int root_fd, std::string_view rel,
                                      const DisplayName& display) {
  // O_PATH | O_NOFOLLOW: a symlink as the last name is opened itself (openat2(2) allows exactly
  // that under RESOLVE_NO_SYMLINKS), for fstat and readlinkat(fd, "").
  return open_beneath(root_fd, rel, O_PATH | O_NOFOLLOW | O_CLOEXEC, display);
}

}  // namespace sealrun
