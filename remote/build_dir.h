// The build directory that bb_worker and the runner share. Every path a request names is resolved
// beneath it with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): no symlink on the way (a job that
// planted one cannot point the runner's writes elsewhere), no ".." past the top, no magic links.
// Also the two ownership walks around a job that runs as the unprivileged job user: its input root
// is handed to it to write, and everything it made there is given back afterwards.
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

// Before the job: the directories of `root` (itself included) become the job user's, so it can
// create and replace files as an action does in its input root. Files keep their owner (inputs
// stay read-only to the job where their mode says so). Symlinks are never followed.
Status give_directories(const std::string& root, uid_t uid, gid_t gid, size_t max_entries);
// After the job: everything under `root` (itself included) owned by `from_uid` goes to
// `to_uid:to_gid`, so that bb_worker can read, upload and remove what the action left. Symlinks
// are changed themselves, never followed. Returns how many entries changed owner.
Result<size_t> return_ownership(const std::string& root, uid_t from_uid, uid_t to_uid, gid_t to_gid,
                                size_t max_entries);

}  // namespace sealrun::remote
