// SPDX-License-Identifier: Apache-2.0
// The grant journal: a record, under the state directory, of every grant in force (owner, run id,
// mechanism, limits, pid, container, resource group), so that `sealrun sweep` can find what a
// killed controller left. One file per run in <state>/grants/<id>.json, written atomically and
// fsync'd before anything it names exists; updates that add only what a reboot destroys go to
// <id>.json.live, atomically but without fsync. Guarded by <state>/grants/.lock (flock).
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
  // The run's own uid and gid (job_ids.h), held until its cleanup is confirmed; -1: none.
  int64_t job_uid = -1;
  int64_t job_gid = -1;
  pid_t job_pid = 0;      // outermost spawned process
  std::string job_start;  // its /proc/<pid>/stat starttime; empty in a record written
                          // before the job started (or by a controller older than it)
  // What the mechanism needs to find its leftovers (Mechanism::journal_locators(), e.g. podman's
  // container name and storage root); read back by its sweep_leftovers().
  std::map<std::string, std::string> mechanism_locators;
  std::string group_backend;  // resgroup::backend_name()
  std::vector<std::string> group_locators;
  std::string owned_root;
  std::string created_at;  // RFC 3339 UTC
  // The boot the record was written in (/proc/sys/kernel/random/boot_id); stamped by
  // GrantJournal::record when empty. Empty in records of older controllers.
  std::string boot_id;
};

// How GrantJournal::record writes.
//   kDurable:     <id>.json, the file and grants/ fsync'd: for the first record and any update
//                 naming what outlives a reboot (podman's storage), durable before it exists.
//   kUntilReboot: <id>.json.live, atomic for every reader but never fsync'd: for an update that
//                 adds only processes, cgroups or a mechanism's name. A SIGKILLed controller
//                 leaves it complete (the page cache survives); a power failure may leave it
//                 missing, old or torn, and also takes away everything it adds, which list()
//                 tells by the durable record's boot id (docs/resource-groups.md).
enum class RecordDurability { kDurable, kUntilReboot };

struct JournalEntry {
  std::string file;  // path of the record
  bool readable = false;
  std::string problem;     // why it could not be read (corrupt, too large, ...)
  bool temporary = false;  // a temporary of an interrupted write (remove_dead_temporary)
  GrantRecord record;
};

// The starttime (/proc/<pid>/stat field 22) of the calling process: GrantRecord::controller_start.
Result<std::string> own_process_start();
// Whether `record` was written before this boot (its boot id known and not this one's): then the
// processes and groups it names are gone, and a pid with its start time may be another process.
bool recorded_in_another_boot(const GrantRecord& record, const std::string& proc_root = "/proc");
// True while the controller that wrote `record` runs: same boot (when recorded), same pid, same
// starttime, not a zombie. Sweep never touches the run of a live controller.
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
  // Atomic write under the lock, durable or not (RecordDurability); the boot id is stamped when
  // the record has none. A durable write after a live one rewrites the live one too, so that the
  // newest version is the one list() reads.
  Status record(const GrantRecord& record,
                RecordDurability durability = RecordDurability::kDurable);
  // Removes the record (the live version first) once cleanup is confirmed.
  Status forget(const std::string& id);
  // Every record, corrupt ones reported, not skipped. A run's live version is read when it is
  // there; one that cannot be read is reported, unless the durable record is from another boot
  // (then everything the live one could add is gone, and the durable one is listed).
  Result<std::vector<JournalEntry>> list();
  // Removes the temporary `name` (a JournalEntry with `temporary`, ".<record>.tmp-<pid>-<random>")
  // when the process that wrote it is gone: a write it never renamed changed no record, and the
  // record it was to replace, if any, is whole. Returns false (and keeps it) while a process of
  // that pid runs.
  Result<bool> remove_dead_temporary(const std::string& name,
                                     const std::string& proc_root = "/proc");
  const std::string& dir() const { return dir_; }

 private:
  // One record file of grants/, read bounded and parsed; its id must match the name.
  Result<GrantRecord> read_entry(const std::string& name) const;

  std::string dir_;
  UniqueFd dirfd_;
  std::string boot_id_;  // this boot's; empty when it cannot be read
};

}  // namespace sealrun
