// BuildDir and the ownership walks: see build_dir.h.
#include "remote/build_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>

#include "core/syscall.h"

namespace sealrun::remote {

namespace fs = std::filesystem;

Result<BuildDir> BuildDir::open(const std::string& path) {
  std::error_code ec;
  fs::path canonical = fs::canonical(path, ec);
  if (ec) return Error::with_errno(ec.value(), "build directory " + path);
  BuildDir b;
  b.path_ = canonical.string();
  b.fd_ = SEALRUN_TRY_CTX(open_at(AT_FDCWD, b.path_, O_PATH | O_DIRECTORY), "build directory");
  return b;
}

Result<UniqueFd> BuildDir::open_beneath(const std::string& rel, int flags, mode_t mode) const {
  struct open_how how {};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  std::string path = rel.empty() ? "." : rel;
  int fd = static_cast<int>(retry_eintr(
      [&] { return ::syscall(SYS_openat2, fd_.get(), path.c_str(), &how, sizeof how); }));
  if (fd < 0) {
    int err = errno;
    // EXDEV: the path would leave the build directory; ELOOP: a symlink on the way.
    std::string why = err == EXDEV   ? "resolves outside the build directory"
                      : err == ELOOP ? "has a symbolic link on the way (not followed)"
                                     : "";
    if (!why.empty()) return Error::make(fmt::format("{}: {}", rel, why));
    return Error::with_errno(err, fmt::format("open {} in the build directory", rel));
  }
  return UniqueFd(fd);
}

Result<std::string> BuildDir::directory(const std::string& rel) const {
  auto fd = SEALRUN_TRY(open_beneath(rel, O_PATH | O_DIRECTORY));
  (void)fd;
  return rel.empty() ? path_ : path_ + "/" + rel;
}

namespace {

// Visits `root` and every entry below it, depth first, without following symlinks.
template <typename Visit>
Status walk(const std::string& root, size_t max_entries, Visit&& visit) {
  std::error_code ec;
  SEALRUN_TRY(visit(fs::path(root)));
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec);
  if (ec) return Error::with_errno(ec.value(), "read " + root);
  size_t seen = 0;
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return Error::with_errno(ec.value(), "walk " + root);
    if (++seen > max_entries)
      return Error::make(fmt::format("{}: more than {} entries", root, max_entries));
    SEALRUN_TRY(visit(it->path()));
  }
  if (ec) return Error::with_errno(ec.value(), "walk " + root);
  return ok_status();
}

}  // namespace

Status give_directories(const std::string& root, uid_t uid, gid_t gid, size_t max_entries) {
  return walk(root, max_entries, [&](const fs::path& p) -> Status {
    auto st = lstat_at(AT_FDCWD, p.string());
    if (!st || !S_ISDIR(st->st_mode) || st->st_uid == uid) return ok_status();
    if (::fchownat(AT_FDCWD, p.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) != 0)
      return Error::from_errno("chown " + p.string());
    return ok_status();
  });
}

Result<size_t> return_ownership(const std::string& root, uid_t from_uid, uid_t to_uid, gid_t to_gid,
                                size_t max_entries) {
  size_t changed = 0;
  SEALRUN_TRY(walk(root, max_entries, [&](const fs::path& p) -> Status {
    auto st = lstat_at(AT_FDCWD, p.string());
    if (!st || st->st_uid != from_uid) return ok_status();
    if (::fchownat(AT_FDCWD, p.c_str(), to_uid, to_gid, AT_SYMLINK_NOFOLLOW) != 0)
      return Error::from_errno("chown " + p.string());
    ++changed;
    return ok_status();
  }));
  return changed;
}

}  // namespace sealrun::remote
