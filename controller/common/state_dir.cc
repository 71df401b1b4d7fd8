// SPDX-License-Identifier: Apache-2.0
// The checked, held state directory: see state_dir.h.
#include "controller/common/state_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/beneath.h"
#include "core/proc.h"
#include "core/syscall.h"
#include "core/trusted_dir.h"

namespace sealrun::run {

Result<StateDir> StateDir::open(const std::string& path, bool create) {
  auto dir = SEALRUN_TRY(open_trusted_dir(state_dir_path(path), create, 0755));
  StateDir state(std::move(dir.path), std::move(dir.fd));
  for (const char* name : kStateSubdirs) {
    struct stat st {};
    if (::fstatat(state.fd(), name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // made when needed
    std::string what = state.path_ + "/" + name;
    if (S_ISLNK(st.st_mode))
      return Error::make(fmt::format(
          "{} is a symlink; sealrun never follows links below its state directory: remove it "
          "(sealrun makes the directory itself)",
          what));
    SEALRUN_TRY(check_trusted_dir(st, what, false));
  }
  return state;
}

Result<std::string> StateDir::below(const std::string& p) const {
  if (p.empty() || p[0] != '/') return p;
  if (p.size() > path_.size() + 1 && p.compare(0, path_.size(), path_) == 0 &&
      p[path_.size()] == '/')
    return p.substr(path_.size() + 1);
  return Error::make(fmt::format("{} is not below the state directory {}", p, path_));
}

Result<UniqueFd> StateDir::open(const std::string& p, int flags, mode_t mode) const {
  return open_beneath(fd(), SEALRUN_TRY(below(p)), flags, mode).context("state directory " + path_);
}

Status StateDir::make_dir(const std::string& p, mode_t mode, bool exist_ok) const {
  return make_dir_beneath(fd(), SEALRUN_TRY(below(p)), mode, exist_ok)
      .context("state directory " + path_);
}

Status StateDir::write_atomic(const std::string& p, std::string_view bytes, mode_t mode,
                              DirSync dir_sync) const {
  return write_file_atomic_beneath(fd(), SEALRUN_TRY(below(p)), bytes, mode, dir_sync)
      .context("state directory " + path_);
}

Status StateDir::remove(const std::string& p, bool directory) const {
  return remove_beneath(fd(), SEALRUN_TRY(below(p)), directory).context("state directory " + path_);
}

Status StateDir::remove_tree(const std::string& p) const {
  return remove_tree_beneath(fd(), SEALRUN_TRY(below(p))).context("state directory " + path_);
}

bool StateDir::exists(const std::string& p) const {
  auto rel = below(p);
  if (!rel) return false;
  auto [parent, name] = split_parent(*rel);
  auto dir = open_dir_beneath(fd(), parent);
  struct stat st {};
  return dir && ::fstatat(dir->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

Status StateDir::ensure_subdir(const std::string& name, mode_t mode) const {
  std::string what = path_ + "/" + name;
  if (::mkdirat(fd(), name.c_str(), mode) != 0 && errno != EEXIST)
    return Error::from_errno("mkdir " + what);
  struct stat st {};
  if (::fstatat(fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return Error::from_errno("lstat " + what);
  if (S_ISLNK(st.st_mode))
    return Error::make(
        fmt::format("{} is a symlink; sealrun never follows links below its "
                    "state directory: remove it",
                    what));
  return check_trusted_dir(st, what, false);
}

std::string state_dir_path(const std::string& given) {
  std::string path = std::filesystem::absolute(given).lexically_normal().string();
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

Result<std::string> controller_temp_dir(const std::string& state_dir) {
  std::string start = SEALRUN_TRY(own_starttime());
  return fmt::format("{}/tmp/{}.{}", state_dir, ::getpid(), start);
}

}  // namespace sealrun::run
