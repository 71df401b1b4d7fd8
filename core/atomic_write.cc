// SPDX-License-Identifier: Apache-2.0
// write_file_atomic(): see atomic_write.h.
#include "core/atomic_write.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "core/syscall.h"

namespace sealrun {

Status write_file_atomic(const std::string& path, std::string_view bytes, mode_t mode) {
  std::filesystem::path target(path);
  std::string dir = target.parent_path().empty() ? "." : target.parent_path().string();
  std::string name = target.filename().string();
  if (name.empty() || name == "." || name == "..")
    return Error::make(fmt::format("{}: not a file path", path));
  auto dirfd = SEALRUN_TRY(open_at(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY));
  return write_file_atomic_in(dirfd.get(), name, bytes, mode, path);
}

namespace {

constexpr std::string_view kTemporaryMark = ".tmp-";

// kNow/kLater as in the header; `file_fsync` false: no fsync at all (write_file_volatile_in).
Status write_replace(int dirfd, const std::string& name, std::string_view bytes, mode_t mode,
                     const std::string& what, bool file_fsync, DirSync dir_sync) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    return Error::make(fmt::format("{}: not a file name", what));
  std::random_device rd;
  std::string tmp = fmt::format(".{}{}{}-{:08x}", name, kTemporaryMark, ::getpid(), rd());
  auto fd = SEALRUN_TRY(open_at(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode));

  auto fail = [&](Error e) -> Status {
    ::unlinkat(dirfd, tmp.c_str(), 0);
    return std::move(e).context(fmt::format("write {} atomically", what));
  };
  if (auto st = write_all(fd.get(), bytes, tmp); !st) return fail(std::move(st).error());
  if (::fchmod(fd.get(), mode) != 0) return fail(Error::from_errno("fchmod " + tmp));
  if (file_fsync && ::fsync(fd.get()) != 0) return fail(Error::from_errno("fsync " + tmp));
  // close(2) can report a deferred write error (NFS, quota); treat it as a failure.
  if (::close(fd.release()) != 0) return fail(Error::from_errno("close " + tmp));
  if (::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0)
    return fail(Error::from_errno(fmt::format("rename {} to {}", tmp, name)));
  if (file_fsync && dir_sync == DirSync::kNow && ::fsync(dirfd) != 0)
    return Error::from_errno(fmt::format("fsync the directory of {}", what))
        .context(fmt::format("write {} atomically", what));
  return ok_status();
}

}  // namespace

Status write_file_atomic_in(int dirfd, const std::string& name, std::string_view bytes, mode_t mode,
                            const std::string& what, DirSync dir_sync) {
  return write_replace(dirfd, name, bytes, mode, what, true, dir_sync);
}

Status write_file_volatile_in(int dirfd, const std::string& name, std::string_view bytes,
                              mode_t mode, const std::string& what) {
  return write_replace(dirfd, name, bytes, mode, what, false, DirSync::kLater);
}

std::optional<pid_t> atomic_write_temporary_writer(std::string_view name) {
  const size_t at = name.rfind(kTemporaryMark);
  if (name.size() < 2 || name[0] != '.' || at == std::string_view::npos || at == 0 ||
      name.find('/') != std::string_view::npos)
    return std::nullopt;
  const std::string_view rest = name.substr(at + kTemporaryMark.size());  // "<pid>-<random>"
  const size_t dash = rest.find('-');
  const std::string_view pid = rest.substr(0, dash);
  if (dash == std::string_view::npos || pid.empty() || pid.size() > 9 ||
      pid.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  pid_t value = 0;
  for (char c : pid) value = value * 10 + (c - '0');
  return value;
}

}  // namespace sealrun
