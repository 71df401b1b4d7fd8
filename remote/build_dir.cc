// SPDX-License-Identifier: Apache-2.0
// BuildDir and install_outputs(): see build_dir.h.
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

namespace {

// openat2 of `rel` beneath `dirfd`: no symlink, no escape, no magic link.
Result<UniqueFd> open_beneath_fd(int dirfd, const std::string& rel, int flags, mode_t mode) {
  struct open_how how {};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  std::string path = rel.empty() ? "." : rel;
  int fd = static_cast<int>(
      retry_eintr([&] { return ::syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how); }));
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

// The directory `rel` beneath `dirfd`, each missing component made (0755, owned uid:gid).
Result<UniqueFd> make_dirs_beneath(int dirfd, const fs::path& rel, uid_t uid, gid_t gid) {
  UniqueFd dir = SEALRUN_TRY(open_beneath_fd(dirfd, "", O_PATH | O_DIRECTORY, 0));
  for (const fs::path& part : rel) {
    std::string name = part.string();
    if (::mkdirat(dir.get(), name.c_str(), 0755) == 0) {
      if (::fchownat(dir.get(), name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) != 0)
        return Error::from_errno("chown directory " + name);
    } else if (errno != EEXIST) {
      return Error::from_errno("mkdir " + name);
    }
    dir = SEALRUN_TRY(open_beneath_fd(dir.get(), name, O_PATH | O_DIRECTORY, 0));
  }
  return dir;
}

// Copies `from` to a new temporary file in `dirfd`, then renames it over `name`.
Status install_file(const std::string& from, int dirfd, const std::string& name, uid_t uid,
                    gid_t gid) {
  auto in = SEALRUN_TRY(open_at(AT_FDCWD, from, O_RDONLY | O_NOFOLLOW));
  auto st = SEALRUN_TRY(fstat_fd(in.get(), from));
  std::string tmp = fmt::format(".sealrun-output-{}-{}", ::getpid(), name);
  if (tmp.size() > 255) tmp = fmt::format(".sealrun-output-{}", ::getpid());
  auto out = SEALRUN_TRY(open_at(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600));
  auto fail = [&](Error e) -> Status {
    ::unlinkat(dirfd, tmp.c_str(), 0);
    return std::move(e).context("install output " + name);
  };
  for (;;) {
    auto chunk = read_up_to(in.get(), 1 << 20, from);
    if (!chunk) return fail(std::move(chunk).error());
    if (chunk->empty()) break;
    if (auto w = write_all(out.get(), *chunk, tmp); !w) return fail(std::move(w).error());
  }
  if (::fchown(out.get(), uid, gid) != 0) return fail(Error::from_errno("chown " + tmp));
  if (::fchmod(out.get(), st.st_mode & 0777) != 0) return fail(Error::from_errno("chmod " + tmp));
  if (::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0)
    return fail(Error::from_errno("rename over " + name));
  return ok_status();
}

}  // namespace

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
  return open_beneath_fd(fd_.get(), rel, flags, mode);
}

Result<std::string> BuildDir::directory(const std::string& rel) const {
  auto fd = SEALRUN_TRY(open_beneath(rel, O_PATH | O_DIRECTORY));
  (void)fd;
  return rel.empty() ? path_ : path_ + "/" + rel;
}

Result<size_t> install_outputs(const BuildDir& build, const std::string& input_root,
                               const std::string& from, uid_t uid, gid_t gid, size_t max_entries) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(from, ec))) return size_t{0};  // nothing ran, nothing made
  auto root = SEALRUN_TRY(build.open_beneath(input_root, O_PATH | O_DIRECTORY));
  fs::recursive_directory_iterator it(from, fs::directory_options::none, ec);
  if (ec) return Error::with_errno(ec.value(), "read outputs in " + from);
  size_t seen = 0, installed = 0;
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return Error::with_errno(ec.value(), "walk outputs in " + from);
    if (++seen > max_entries)
      return Error::make(fmt::format("{}: more than {} entries", from, max_entries));
    auto st = lstat_at(AT_FDCWD, it->path().string());
    if (!st || !S_ISREG(st->st_mode)) continue;
    fs::path rel = fs::relative(it->path(), from, ec);
    auto dir = SEALRUN_TRY_CTX(make_dirs_beneath(root.get(), rel.parent_path(), uid, gid),
                               "output " + rel.string());
    SEALRUN_TRY(install_file(it->path().string(), dir.get(), rel.filename().string(), uid, gid));
    ++installed;
  }
  return installed;
}

}  // namespace sealrun::remote
