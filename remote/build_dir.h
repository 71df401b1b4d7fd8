// SPDX-License-Identifier: Apache-2.0
// The build directory that bb_worker and the runner share. Every path a request names is resolved
// beneath it with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): no symlink on the way (nothing
// planted in the build directory can point the runner's writes elsewhere), no ".." past the top,
// no magic links. Also the one write the runner makes into an input root: an action's outputs.
#pragma once

#include <sys/types.h>

#include <string>

#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun::remote {

class BuildDir {
 public:
  // `path` must be an existing directory; it is made canonical (absolute, no symlink) here.
  static Result<BuildDir> open(const std::string& path);

  const std::string& path() const { return path_; }
  // openat2 of `rel` beneath the build directory (O_CLOEXEC added). `rel` must be relative.
  Result<UniqueFd> open_beneath(const std::string& rel, int flags, mode_t mode = 0) const;
  // The host path of an existing directory beneath the build directory (checked through a
  // descriptor opened with the rules above). Its components hold no symlink, so the path is the
  // directory's real path while nobody renames it — the build directory is bb_worker's and ours.
  Result<std::string> directory(const std::string& rel) const;

 private:
  std::string path_;
  UniqueFd fd_;
};

// Copies every regular file under `from` (a run's results/<id>/out) to the same relative path
// in the input root `input_root` (relative to the build directory), making missing directories.
// Each file is written to a temporary name beside its target and renamed over it, so an input it
// replaces — often a hard link into bb_worker's file cache — is unlinked, never written through.
// Files and directories made get `uid:gid` (the input root's owner) and the source file's
// permission bits (set-id bits dropped). Returns how many files were installed.
Result<size_t> install_outputs(const BuildDir& build, const std::string& input_root,
                               const std::string& from, uid_t uid, gid_t gid, size_t max_entries);

}  // namespace sealrun::remote
