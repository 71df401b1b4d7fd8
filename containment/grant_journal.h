// The grant journal: a durable record, under the state directory, of every grant in force (owner,
// run id, mechanism, limits, pid, container, resource group), written and fsync'd before the job
// starts, so that `sealrun sweep` can find what a killed controller left. One file per run in
// <state>/grants/<id>.json, written atomically, guarded by <state>/grants/.lock (flock).
// A journal that cannot be written or read is reported loudly; it never widens a boundary.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/atomic_write.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun {

struct GrantRecord {
  std::string id;       // run id
  uid_t owner_uid = 0;  // who ran the controller
  pid_t controller_pid = 0;
  std::string controller_start;  // /proc/<pid>/stat starttime, to tell a recycled pid apart
  std::string mechanism;         // "bwrap", "podman"
  std::string job_user;          // the unprivileged user the mechanism runs as
  pid_t job_pid = 0;             // outermost spawned process
  std::string job_start;         // its /proc/<pid>/stat starttime; empty in a record written
                                 // before the job started (or by a controller older than it)
  // What the mechanism needs to find its leftovers (Mechanism::journal_locators(), e.g. podman's
  // container name and storage root); read back by its sweep_leftovers().
  std::map<std::string, std::string> mechanism_locators;
  std::string group_backend;  // resgroup::backend_name()
  std::vector<std::string> group_locators;
  std::string owned_root;
  std::string created_at;  // RFC 3339 UTC
};

struct JournalEntry {
  std::string file;  // path of the record
  bool readable = false;
  std::string problem;  // why it could not be read (corrupt, too large, ...)
  GrantRecord record;
};

// The starttime (/proc/<pid>/stat field 22) of the calling process: GrantRecord::controller_start.
Result<std::string> own_process_start();
// True while the controller that wrote `record` runs: same pid, same starttime, not a zombie.
// Sweep never touches the run of a live controller.
bool controller_alive(const GrantRecord& record, const std::string& proc_root = "/proc");
// The record as one JSON document ("schema": "sealrun-grant-v1"), and back (strict: every field
// present with its type; the error names the first problem).
std::string grant_record_to_json(const GrantRecord& record);
Result<GrantRecord> grant_record_from_json(std::string_view text);

class GrantJournal {
 public:
  // Opens (creating if needed) <state_dir>/grants with mode 0700.
  static Result<GrantJournal> open(const std::string& state_dir);
  // The same below a state directory the caller has checked and holds open (`state_dirfd`;
  // `state_dir` names it in messages): grants/ is created and opened from that descriptor, and a
  // link there is refused.
  static Result<GrantJournal> open_in(int state_dirfd, const std::string& state_dir);
  // Whether <state_dir>/grants holds a record for run `id` (without creating anything).
  static bool has_record(const std::string& state_dir, const std::string& id);
  static bool has_record_in(int state_dirfd, const std::string& id);
  // Atomic write + fsync, under the lock. With DirSync::kLater the grants/ directory is not
  // fsynced: for an update that adds only what a reboot destroys anyway (a resource group, a
  // pid), so after a power failure the previous complete record, already durable, says all that
  // is left to sweep (core/atomic_write.h).
  Status record(const GrantRecord& record, DirSync dir_sync = DirSync::kNow);
  Status forget(const std::string& id);      // removes the record once cleanup is confirmed
  Result<std::vector<JournalEntry>> list();  // every record, corrupt ones reported, not skipped
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  UniqueFd dirfd_;
};

}  // namespace sealrun
