// SPDX-License-Identifier: Apache-2.0
// Paths resolved beneath a held directory: see beneath.h.
#include "core/beneath.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/atomic_write.h"
#include "core/syscall.h"

namespace sealrun {

namespace {

constexpr uint64_t kResolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

std::string shown(const std::string& rel) { return rel.empty() ? "." : rel; }

Error beneath_error(int err, const std::string& rel) {
  std::string what = fmt::format("open {}", shown(rel));
  if (err == ELOOP)
    what +=
        " (a symlink on the way or at the end: refused, links below the state directory are "
        "never followed)";
  else if (err == EXDEV)
    what += " (it leads out of the directory it must stay below: refused)";
  else if (err == ENOSYS)
    what += " (openat2 needs Linux 5.6 or newer)";
  return Error::with_errno(err, std::move(what));
}

// Removes what is in the directory `dir` (its own device `dev`), `depth_left` levels deep at most.
Status remove_contents(int dir, dev_t dev, int depth_left, const std::string& shown_path) {
  struct stat self {};
  // Read-only directories a job left behind: the owner (or root) may make them writable again.
  if (::fstat(dir, &self) == 0 && (self.st_mode & 0700) != 0700)
    (void)::fchmod(dir, (self.st_mode & 07777) | 0700);
  Status first = ok_status();
  for (int round = 0; round < 64; ++round) {
    std::vector<std::string> names = list_dir_names(dir, 4096);
    if (names.empty()) break;
    size_t removed = 0;
    for (const std::string& name : names) {
      std::string path = shown_path + "/" + name;
      struct stat st {};
      if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone
      if (S_ISDIR(st.st_mode)) {
        if (st.st_dev != dev) {
          if (first) first = Error::make(fmt::format("{}: a mount point; not descended", path));
          continue;
        }
        if (depth_left <= 0) {
          if (first) first = Error::make(fmt::format("{}: deeper than the removal allows", path));
          continue;
        }
        int fd = retry_eintr([&] {
          return ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        });
        if (fd < 0) {
          if (first) first = Error::from_errno("open " + path);
          continue;
        }
        UniqueFd child(fd);
        Status inner = remove_contents(child.get(), dev, depth_left - 1, path);
        if (!inner && first) first = std::move(inner);
        child.reset();
        if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) == 0)
          ++removed;
        else if (errno != ENOENT && first)
          first = Error::from_errno("rmdir " + path);
      } else if (::unlinkat(dir, name.c_str(), 0) == 0) {
        ++removed;
      } else if (errno != ENOENT && first) {
        first = Error::from_errno("unlink " + path);
      }
    }
    if (removed == 0) break;  // nothing more can go: the errors say why
  }
  return first;
}

}  // namespace

std::pair<std::string, std::string> split_parent(std::string_view rel) {
  size_t slash = rel.rfind('/');
  if (slash == std::string_view::npos) return {"", std::string(rel)};
  return {std::string(rel.substr(0, slash)), std::string(rel.substr(slash + 1))};
}

Result<UniqueFd> open_beneath(int dirfd, const std::string& rel, int flags, mode_t mode) {
  struct open_how how {};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC | O_NOFOLLOW);
  // The kernel refuses a mode without O_CREAT/O_TMPFILE.
  how.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? mode : 0;
  how.resolve = kResolve;
  const char* path = rel.empty() ? "." : rel.c_str();
  long fd = retry_eintr([&] { return ::syscall(SYS_openat2, dirfd, path, &how, sizeof how); });
  if (fd >= 0) return UniqueFd(static_cast<int>(fd));
  int err = errno;
  if (err == ENOTDIR && (flags & O_DIRECTORY) != 0) {
    // O_DIRECTORY | O_NOFOLLOW on a link says "not a directory": say what it really is.
    struct open_how link {};
    link.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
    link.resolve = kResolve;
    long l = ::syscall(SYS_openat2, dirfd, path, &link, sizeof link);
    struct stat st {};
    if (l >= 0 && ::fstat(static_cast<int>(l), &st) == 0 && S_ISLNK(st.st_mode)) err = ELOOP;
    if (l >= 0) ::close(static_cast<int>(l));
  }
  return beneath_error(err, rel);
}

Result<UniqueFd> open_dir_beneath(int dirfd, const std::string& rel) {
  return open_beneath(dirfd, rel, O_RDONLY | O_DIRECTORY);
}

Status make_dir_beneath(int dirfd, const std::string& rel, mode_t mode, bool exist_ok) {
  auto [parent_rel, name] = split_parent(rel);
  if (name.empty() || name == "." || name == "..")
    return Error::make(fmt::format("mkdir {}: not a directory name", shown(rel)));
  auto parent = SEALRUN_TRY(open_dir_beneath(dirfd, parent_rel));
  if (::mkdirat(parent.get(), name.c_str(), mode) == 0) return ok_status();
  if (errno != EEXIST || !exist_ok) return Error::from_errno("mkdir " + rel);
  struct stat st {};
  if (::fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return Error::from_errno("lstat " + rel);
  if (!S_ISDIR(st.st_mode))
    return Error::make(fmt::format("{}: exists and is not a directory{}", rel,
                                   S_ISLNK(st.st_mode) ? " (a symlink: refused)" : ""));
  return ok_status();
}

Status write_file_atomic_beneath(int dirfd, const std::string& rel, std::string_view bytes,
                                 mode_t mode, DirSync dir_sync) {
  auto [parent_rel, name] = split_parent(rel);
  auto parent =
      SEALRUN_TRY_CTX(open_dir_beneath(dirfd, parent_rel), fmt::format("write {} atomically", rel));
  return write_file_atomic_in(parent.get(), name, bytes, mode, rel, dir_sync);
}

Status remove_beneath(int dirfd, const std::string& rel, bool directory) {
  auto [parent_rel, name] = split_parent(rel);
  auto parent = open_dir_beneath(dirfd, parent_rel);
  if (!parent) return parent.error().err() == ENOENT ? ok_status() : Status(parent.error());
  if (::unlinkat(parent->get(), name.c_str(), directory ? AT_REMOVEDIR : 0) != 0 && errno != ENOENT)
    return Error::from_errno(fmt::format("remove {}", rel));
  return ok_status();
}

Status remove_tree_beneath(int dirfd, const std::string& rel, int max_depth) {
  auto [parent_rel, name] = split_parent(rel);
  if (name.empty() || name == "." || name == "..")
    return Error::make(fmt::format("remove {}: not a name below the directory", shown(rel)));
  auto parent = open_dir_beneath(dirfd, parent_rel);
  if (!parent) return parent.error().err() == ENOENT ? ok_status() : Status(parent.error());
  struct stat st {};
  if (::fstatat(parent->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? ok_status() : Status(Error::from_errno("lstat " + rel));
  if (!S_ISDIR(st.st_mode)) return remove_beneath(dirfd, rel);
  // An init-capture, not a capture of the structured binding (which clang refuses before C++20's
  // resolution, P1091, is implemented).
  int fd = retry_eintr([&, leaf = name.c_str()] {
    return ::openat(parent->get(), leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  });
  if (fd < 0) return Error::from_errno("open " + rel);
  UniqueFd dir(fd);
  Status inner = remove_contents(dir.get(), st.st_dev, max_depth, rel);
  dir.reset();
  if (!inner) return std::move(inner).error().context("remove " + rel);
  if (::unlinkat(parent->get(), name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
    return Error::from_errno("rmdir " + rel);
  return ok_status();
}

}  // namespace sealrun
