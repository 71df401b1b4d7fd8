// SPDX-License-Identifier: Apache-2.0
// snapshot_tree(): see source_snapshot.h.
#include "fingerprint/source_snapshot.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "core/syscall.h"

namespace sealrun {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

struct Copier {
  SnapshotTimes times;
  size_t max_entries;
  size_t entries = 0;

  // The host's mtime, as atime too, on the copy `fd` (or on `name` in `dir` when fd is -1: a
  // symlink, which has no descriptor of its own) when the host's times are kept.
  Status keep_mtime(int fd, int dir, const std::string& name, const struct stat& st,
                    const std::string& shown) const {
    if (times != SnapshotTimes::kHost) return ok_status();
    struct timespec t[2] = {st.st_mtim, st.st_mtim};
    int r = fd >= 0 ? ::futimens(fd, t) : ::utimensat(dir, name.c_str(), t, AT_SYMLINK_NOFOLLOW);
    if (r != 0) return Error::from_errno(fmt::format("set the times of {}", shown));
    return ok_status();
  }

  Status copy_file(int from_dir, int to_dir, const std::string& name, const struct stat& st,
                   const std::string& shown) {
    auto in = SEALRUN_TRY(open_at(from_dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK));
    auto now = SEALRUN_TRY(fstat_fd(in.get(), shown));
    if (!S_ISREG(now.st_mode) || now.st_ino != st.st_ino)
      return Error::make(fmt::format("{}: replaced while it was being copied", shown));
    auto out = SEALRUN_TRY(open_at(to_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
                                   static_cast<mode_t>(st.st_mode & 0777)));
    // Copy to the end of what is there now; verifying the snapshot afterwards judges the bytes.
    for (;;) {
      ssize_t n = retry_eintr([&] { return ::sendfile(out.get(), in.get(), nullptr, 1 << 30); });
      if (n < 0) return Error::from_errno(fmt::format("copy {}", shown));
      if (n == 0) break;
    }
    if (::fchmod(out.get(), st.st_mode & 0777) != 0)
      return Error::from_errno(fmt::format("chmod {}", shown));
    return keep_mtime(out.get(), -1, {}, now, shown);
  }

  Status copy_dir(int from_dir, int to_dir, const std::string& shown) {
    for (const std::string& name : list_dir_names(from_dir)) {
      if (++entries > max_entries)
        return Error::make(fmt::format("more than {} entries in the source tree", max_entries));
      std::string path = shown + "/" + name;
      auto st = SEALRUN_TRY(lstat_at(from_dir, name));
      if (S_ISDIR(st.st_mode)) {
        if (::mkdirat(to_dir, name.c_str(), 0700) != 0)
          return Error::from_errno(fmt::format("mkdir {}", path));
        auto from = SEALRUN_TRY(open_at(from_dir, name, kDirFlags));
        auto to = SEALRUN_TRY(open_at(to_dir, name, kDirFlags));
        SEALRUN_TRY(copy_dir(from.get(), to.get(), path));
        if (::fchmod(to.get(), st.st_mode & 0777) != 0)
          return Error::from_errno(fmt::format("chmod {}", path));
        SEALRUN_TRY(keep_mtime(to.get(), -1, {}, st, path));  // after its entries were made
      } else if (S_ISREG(st.st_mode)) {
        SEALRUN_TRY(copy_file(from_dir, to_dir, name, st, path));
      } else if (S_ISLNK(st.st_mode)) {
        std::vector<char> target(static_cast<size_t>(st.st_size) + 1);
        ssize_t n = ::readlinkat(from_dir, name.c_str(), target.data(), target.size());
        if (n < 0 || static_cast<size_t>(n) >= target.size())
          return Error::from_errno(fmt::format("readlink {}", path));
        if (::symlinkat(std::string(target.data(), static_cast<size_t>(n)).c_str(), to_dir,
                        name.c_str()) != 0)
          return Error::from_errno(fmt::format("symlink {}", path));
        SEALRUN_TRY(keep_mtime(-1, to_dir, name, st, path));
      }
      // FIFOs, sockets, devices: not part of what a source is (the manifest lists regular files).
    }
    return ok_status();
  }
};

}  // namespace

Status snapshot_tree(const std::string& root, const std::string& dest, SnapshotTimes times,
                     size_t max_entries) {
  auto from = SEALRUN_TRY_CTX(open_at(AT_FDCWD, root, kDirFlags), "source tree");
  auto st = SEALRUN_TRY(fstat_fd(from.get(), root));
  if (::mkdir(dest.c_str(), 0700) != 0)
    return Error::from_errno(fmt::format("mkdir {} (the snapshot must be new)", dest));
  auto to = SEALRUN_TRY(open_at(AT_FDCWD, dest, kDirFlags));
  Copier copier{times, max_entries};
  SEALRUN_TRY_CTX(copier.copy_dir(from.get(), to.get(), root), "snapshot of " + root);
  if (::fchmod(to.get(), st.st_mode & 0777) != 0)
    return Error::from_errno(fmt::format("chmod {}", dest));
  return copier.keep_mtime(to.get(), -1, {}, st, dest);
}

}  // namespace sealrun
