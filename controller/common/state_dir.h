// SPDX-License-Identifier: Apache-2.0
// The state directory (docs/state-directory.md), checked once and then held open. Root writes
// receipts, logs, grant records and the job's directories there, so the directory, each of its
// ancestors and each of its fixed subdirectories must be writable by nobody but root (or by the
// invoking user when that is not root) — sshd's StrictModes rule, core/trusted_dir.h. A directory
// that fails is refused before anything is written, with its owner, its mode and what to do.
// After the check every path below it is reached from the held descriptor without following any
// link (core/beneath.h): if something swaps a directory for a link after the check, root's write
// fails instead of landing where the link points.
#pragma once

#include <string>

#include "core/atomic_write.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun::run {

// The fixed subdirectories: grant records, run results, owned roots, verified source exports,
// receipts of refused runs, each controller's private temporaries, and unpacked image roots.
inline constexpr const char* kStateSubdirs[] = {"grants",   "results", "owned", "exports",
                                                "refusals", "tmp",     "images"};

class StateDir {
 public:
  // Checks `path` and its ancestors and opens it, creating it (0755) when absent and `create` is
  // set; then checks every fixed subdirectory that exists (a symlink, another owner, or write
  // access for group or others is refused). The error names the directory and what to change.
  static Result<StateDir> open(const std::string& path, bool create = true);

  StateDir(StateDir&&) = default;
  StateDir& operator=(StateDir&&) = default;

  const std::string& path() const { return path_; }  // absolute and normal, as RunLayout's
  int fd() const { return fd_.get(); }

  // `p` relative to the state directory: p may be absolute (then it must lie below the state
  // directory, e.g. a RunLayout path) or already relative.
  Result<std::string> below(const std::string& p) const;

  // The operations of core/beneath.h on paths below the state directory (absolute or relative).
  Result<UniqueFd> open(const std::string& p, int flags, mode_t mode = 0) const;
  Status make_dir(const std::string& p, mode_t mode, bool exist_ok = false) const;
  Status write_atomic(const std::string& p, std::string_view bytes, mode_t mode = 0644,
                      DirSync dir_sync = DirSync::kNow) const;
  Status remove(const std::string& p, bool directory = false) const;
  Status remove_tree(const std::string& p) const;
  bool exists(const std::string& p) const;  // without following a link
  // Creates the fixed subdirectory `name` when absent and checks it (trusted owner, not writable
  // by others, not a link).
  Status ensure_subdir(const std::string& name, mode_t mode) const;

 private:
  StateDir(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  std::string path_;
  UniqueFd fd_;
};

// The state directory's path as every RunLayout and StateDir spells it: absolute and normal, no
// trailing slash.
std::string state_dir_path(const std::string& given);

// This controller's private directory for temporaries under the state directory,
// <state>/tmp/<pid>.<starttime>: named after its creator so that `sealrun sweep` can prove it
// dead and remove what it left (the podman probe's storage, the admission's scratch copies).
Result<std::string> controller_temp_dir(const std::string& state_dir);

}  // namespace sealrun::run
