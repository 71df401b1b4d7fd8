// SPDX-License-Identifier: Apache-2.0
// What a learning run opened: fanotify marks on the sandbox's own mounts of the host trees, and a
// thread that turns each event into a path. `admit freeze --learn` (docs/learning.md) pins exactly
// what this records.
//
// Why mount marks inside the sandbox rather than marks on the host: bwrap's binds are mounts of
// their own, in the job's mount namespace, so a mark on one of them reports the job's opens and
// nobody else's (the other engineers and jobs on the machine open the same files through other
// mounts), with no filtering by pid (a short-lived process is gone before its event is read).
// The marks are placed through /proc/PID/root (resolved inside the sandbox's root, no link
// followed, and each landing mount checked by id to be one of the sandbox's own at the chosen
// places) while the sandbox waits at its start gate
// (JobIo::on_sandbox_ready), so the command's first exec is already seen. The job's own mounts
// (source, toolchain, out, scratch, tmp) are never marked: they are pinned or thrown away.
//
// Each event carries a descriptor opened by the kernel on the very path (mount and name) the job
// used, so a hard link is recorded under the name the job opened. The sandbox's mount namespace is
// held open until finish(), so paths of events read after the job ended still resolve as the job
// saw them. Needs CAP_SYS_ADMIN (root).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun::learn {

struct ObservedAccess {
  std::set<std::string> files;  // regular files opened or executed (paths as in the job)
  std::set<std::string> dirs;   // directories opened, which is how a directory is listed
  uint64_t events = 0;
  // Set when the record is not the whole truth (the kernel's queue overflowed, a path could not
  // be read, the path cap was reached): learning must then fail, never pin a partial closure.
  std::optional<std::string> incomplete;
};

class AccessRecorder {
 public:
  // `max_paths`: distinct files and directories recorded before the record is declared incomplete.
  static Result<std::unique_ptr<AccessRecorder>> create(size_t max_paths);
  ~AccessRecorder();
  AccessRecorder(const AccessRecorder&) = delete;
  AccessRecorder& operator=(const AccessRecorder&) = delete;

  // Marks every mount of the sandbox whose mount point is one of `roots` or below one, except
  // those at or below one of `excluded`; holds the sandbox's mount namespace; starts reading.
  // Called once, from JobIo::on_sandbox_ready.
  Status watch_sandbox(pid_t sandbox_pid, const std::vector<std::string>& roots,
                       const std::vector<std::string>& excluded);
  // After the job has ended: reads what is still queued, stops, and returns the record.
  ObservedAccess finish();
  // The mount points marked (for messages and tests).
  std::vector<std::string> marked() const;

 private:
  AccessRecorder(UniqueFd fanotify, UniqueFd wake, size_t max_paths);
  void read_loop();
  bool drain();  // false: stop reading (error recorded)
  void record_event(int fd);

  UniqueFd fanotify_;
  UniqueFd wake_;  // eventfd: finish() asks the thread to drain and stop
  UniqueFd mount_ns_;
  const size_t max_paths_;
  std::atomic<bool> stopping_{false};
  std::thread reader_;
  mutable std::mutex mu_;
  ObservedAccess seen_;
  std::vector<std::string> marked_;
  std::unique_ptr<char[]> buffer_;  // the reading thread's
};

struct MountEntry {
  uint64_t id = 0;    // the mount id (statx STATX_MNT_ID gives the same)
  std::string point;  // where it is mounted, octal escapes (\040) decoded
};
// The mounts listed in a /proc/PID/mountinfo text; malformed lines are left out. Pure.
std::vector<MountEntry> mountinfo_mounts(const std::string& text);
// Those of `points` that are one of `roots` or below one, and neither one of `excluded` nor below
// one; sorted, each once. Pure.
std::vector<std::string> mounts_to_mark(const std::vector<std::string>& points,
                                        const std::vector<std::string>& roots,
                                        const std::vector<std::string>& excluded);
// `path` is `root` or below it ("/usr" holds "/usr/bin", not "/usrx").
bool path_within(const std::string& path, const std::string& root);
// `path` is one of `roots` or below one.
bool path_within_any(const std::string& path, const std::vector<std::string>& roots);
// `path` is one of `places`, below one, or above one (a link there would be the way into it).
bool path_overlaps_any(const std::string& path, const std::vector<std::string>& places);
// The directory holding `path` ("/" for a top-level name and for "/").
std::string parent_path(const std::string& path);

}  // namespace sealrun::learn
