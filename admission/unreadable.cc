// SPDX-License-Identifier: Apache-2.0
// Telling an unreadable pinned path from a mismatch: see unreadable.h.
#include "admission/unreadable.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <vector>

#include "core/unique_fd.h"

namespace sealrun::admission {

namespace {

bool refused(int err) { return err == EACCES || err == EPERM; }

// Depth first from `dirfd` (shown as `shown`): the first entry the user may not read.
Result<std::optional<std::string>> walk(int dirfd, const std::string& shown, int depth) {
  if (depth > 4096) return Error::make(fmt::format("{}: more than 4096 directories deep", shown));
  const int dup = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return Error::from_errno("dup " + shown);
  DIR* dir = ::fdopendir(dup);
  if (dir == nullptr) {
    const int err = errno;
    ::close(dup);
    return Error::with_errno(err, "read directory " + shown);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> hold(dir, ::closedir);
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* de = ::readdir(dir)) {
    std::string_view name(de->d_name);
    if (name != "." && name != "..") names.emplace_back(name);
  }
  if (errno != 0) {
    if (refused(errno)) return std::optional<std::string>(shown);
    return Error::from_errno("read directory " + shown);
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::string child = shown == "/" ? "/" + name : shown + "/" + name;
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (refused(errno)) return std::optional<std::string>(child);
      if (errno == ENOENT) continue;  // gone meanwhile
      return Error::from_errno("stat " + child);
    }
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) continue;  // a link is pinned by its text
    const int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY |
                      (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0);
    const int fd = ::openat(dirfd, name.c_str(), flags);
    if (fd < 0) {
      if (refused(errno)) return std::optional<std::string>(child);
      if (errno == ENOENT) continue;
      return Error::from_errno("open " + child);
    }
    UniqueFd own(fd);
    if (!S_ISDIR(st.st_mode)) continue;
    // Opened, so it may be listed; its entries are looked at only if it may be entered too.
    if (::faccessat(dirfd, name.c_str(), X_OK, AT_EACCESS) != 0 && refused(errno))
      return std::optional<std::string>(child);
    auto below = SEALRUN_TRY(walk(own.get(), child, depth + 1));
    if (below) return below;
  }
  return std::optional<std::string>();
}

}  // namespace

std::string invoking_user_name() {
  const uid_t uid = ::geteuid();
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
      pw.pw_name != nullptr)
    return pw.pw_name;
  return fmt::format("uid {}", uid);
}

std::string cannot_read_message(std::string_view path, std::string_view user) {
  return fmt::format("cannot read {} as {}: run as root, or pin a tree you can read", path, user);
}

Result<std::optional<std::string>> first_unreadable(const std::string& root) {
  const int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (refused(errno)) return std::optional<std::string>(root);
    return Error::from_errno("open directory " + root);
  }
  UniqueFd own(fd);
  if (::faccessat(AT_FDCWD, root.c_str(), X_OK, AT_EACCESS) != 0 && refused(errno))
    return std::optional<std::string>(root);
  return walk(own.get(), root, 0);
}

std::optional<std::string> unreadable_path(const Error& error, const std::string& pinned) {
  if (!refused(error.err()) || pinned.empty()) return std::nullopt;
  struct stat st {};
  if (::lstat(pinned.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return pinned;
  auto found = first_unreadable(pinned);
  if (!found || !*found) return std::nullopt;
  return **found;
}

}  // namespace sealrun::admission
