// SPDX-License-Identifier: Apache-2.0
// The grant journal (grant_journal.h): one JSON record per run under <state>/grants (0700), and
// its live version (<id>.json.live, never fsync'd) once an update adds only what a reboot destroys;
// written atomically under a shared flock on <state>/grants/.lock (each run writes only its own
// records), listed under a shared one; a dead writer's temporary is removed under an exclusive one.
// Records are parsed from bounded reads with nlohmann; a record that cannot be read or parsed is
// listed with its problem, never skipped, because sweep must know that something is unaccounted
// for.
#include "containment/grant_journal.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/atomic_write.h"
#include "core/bounded_file.h"
#include "core/json_field.h"
#include "core/proc.h"
#include "core/run_id.h"
#include "core/strict_json.h"
#include "core/syscall.h"

namespace sealrun {
namespace {

constexpr size_t kMaxRecordBytes = 64 * 1024;
constexpr const char* kSchema = "sealrun-grant-v1";
constexpr const char* kLockName = ".lock";

// Holds an flock for its lifetime (released when the descriptor closes).
class JournalLock {
 public:
  static Result<JournalLock> take(int dirfd, const std::string& dir, bool exclusive) {
    auto fd = SEALRUN_TRY(open_at(dirfd, kLockName, O_RDWR | O_CREAT | O_NOFOLLOW, 0600));
    if (retry_eintr([&] { return ::flock(fd.get(), exclusive ? LOCK_EX : LOCK_SH); }) != 0)
      return Error::from_errno(fmt::format("flock {}/{}", dir, kLockName));
    return JournalLock(std::move(fd));
  }

 private:
  explicit JournalLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

// Not ".live.json": a run id may end in ".live", and its record must not be another run's live one.
constexpr std::string_view kRecordSuffix = ".json";
constexpr std::string_view kLiveSuffix = ".json.live";

std::string record_file(const std::string& id) { return id + std::string(kRecordSuffix); }
std::string live_file(const std::string& id) { return id + std::string(kLiveSuffix); }

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

Result<std::string> own_process_start() { return own_starttime(); }

bool recorded_in_another_boot(const GrantRecord& record, const std::string& proc_root) {
  if (record.boot_id.empty()) return false;
  auto boot = current_boot_id(proc_root);
  return boot && *boot != record.boot_id;
}

bool controller_alive(const GrantRecord& record, const std::string& proc_root) {
  // After a reboot the same pid and starttime may name another process: the boot id tells.
  if (recorded_in_another_boot(record, proc_root)) return false;
  return process_is_alive(record.controller_pid, record.controller_start, proc_root);
}

std::string grant_record_to_json(const GrantRecord& r) {
  nlohmann::json j = {
      {"schema", kSchema},
      {"id", r.id},
      {"owner_uid", r.owner_uid},
      {"controller_pid", r.controller_pid},
      {"controller_start", r.controller_start},
      {"mechanism", r.mechanism},
      {"job_user", r.job_user},
      {"job_pid", r.job_pid},
      {"job_start", r.job_start},
      {"mechanism_locators", r.mechanism_locators},
      {"group_backend", r.group_backend},
      {"group_locators", r.group_locators},
      {"owned_root", r.owned_root},
      {"created_at", r.created_at},
      {"boot_id", r.boot_id},
  };
  // A run without ids of its own (a controller that is not root) writes none: -1 is not an id,
  // and the reader takes only ids in range.
  if (r.job_uid >= 0) j["job_uid"] = r.job_uid;
  if (r.job_gid >= 0) j["job_gid"] = r.job_gid;
  return j.dump(2) + "\n";
}

Result<GrantRecord> grant_record_from_json(std::string_view text) {
  // Records are flat: depth 4 is plenty, and a duplicated key is a forged or corrupt record.
  nlohmann::json j = SEALRUN_TRY_CTX(parse_strict_json(text, 4), "not JSON");
  if (!j.is_object()) return Error::make("not a JSON object");
  std::string schema = SEALRUN_TRY(json_string_field(j, "schema"));
  if (schema != kSchema)
    return Error::make(fmt::format("schema is '{}', expected '{}'", schema, kSchema));
  GrantRecord r;
  r.id = SEALRUN_TRY(json_string_field(j, "id"));
  if (!is_valid_run_id(r.id)) return Error::make(fmt::format("id '{}' is not valid", r.id));
  r.owner_uid = static_cast<uid_t>(SEALRUN_TRY(json_uint_field(j, "owner_uid", INT32_MAX)));
  r.controller_pid =
      static_cast<pid_t>(SEALRUN_TRY(json_uint_field(j, "controller_pid", INT32_MAX)));
  r.controller_start = SEALRUN_TRY(json_string_field(j, "controller_start"));
  r.mechanism = SEALRUN_TRY(json_string_field(j, "mechanism"));
  r.job_user = SEALRUN_TRY(json_string_field(j, "job_user"));
  r.job_pid = static_cast<pid_t>(SEALRUN_TRY(json_uint_field(j, "job_pid", INT32_MAX)));
  // Added after the first records were written: optional, so that a sweep by a newer sealrun can
  // still read an older controller's record (it then falls back to weaker checks).
  if (j.contains("job_start")) r.job_start = SEALRUN_TRY(json_string_field(j, "job_start"));
  if (j.contains("boot_id")) r.boot_id = SEALRUN_TRY(json_string_field(j, "boot_id"));
  if (j.contains("job_uid")) r.job_uid = SEALRUN_TRY(json_uint_field(j, "job_uid", INT32_MAX));
  if (j.contains("job_gid")) r.job_gid = SEALRUN_TRY(json_uint_field(j, "job_gid", INT32_MAX));
  if (j.contains("mechanism_locators")) {
    const auto& m = j["mechanism_locators"];
    if (!m.is_object()) return Error::make("field 'mechanism_locators' is not an object");
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (!it.value().is_string())
        return Error::make(fmt::format("mechanism_locators.{} is not a string", it.key()));
      r.mechanism_locators[it.key()] = it.value().get<std::string>();
    }
  }
  // Records of controllers older than the mechanism registry spelled podman's locators as
  // top-level fields; read them into the same place (empty strings meant "none").
  for (const char* key : {"container_name", "podman_root"}) {
    if (!j.contains(key)) continue;
    std::string v = SEALRUN_TRY(json_string_field(j, key));
    if (!v.empty()) r.mechanism_locators.emplace(key, v);
  }
  r.group_backend = SEALRUN_TRY(json_string_field(j, "group_backend"));
  r.group_locators = SEALRUN_TRY(json_strings_field(j, "group_locators"));
  r.owned_root = SEALRUN_TRY(json_string_field(j, "owned_root"));
  r.created_at = SEALRUN_TRY(json_string_field(j, "created_at"));
  if (r.controller_pid <= 0) return Error::make("controller_pid must be positive");
  return r;
}

bool GrantJournal::has_record(const std::string& state_dir, const std::string& id) {
  if (!is_valid_run_id(id)) return false;
  struct stat st {};
  return ::lstat(fmt::format("{}/grants/{}", state_dir, record_file(id)).c_str(), &st) == 0;
}

bool GrantJournal::has_record_in(int state_dirfd, const std::string& id) {
  if (!is_valid_run_id(id)) return false;
  struct stat st {};
  return ::fstatat(state_dirfd, ("grants/" + record_file(id)).c_str(), &st, AT_SYMLINK_NOFOLLOW) ==
         0;
}

Result<GrantJournal> GrantJournal::open(const std::string& state_dir) {
  if (state_dir.empty()) return Error::make("grant journal: the state directory is empty");
  if (::mkdir(state_dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Error::from_errno("grant journal: mkdir " + state_dir);
  auto state = SEALRUN_TRY_CTX(open_at(AT_FDCWD, state_dir, O_RDONLY | O_DIRECTORY),
                               "grant journal: open the state directory");
  return open_in(state.get(), state_dir);
}

Result<GrantJournal> GrantJournal::open_in(int state_dirfd, const std::string& state_dir) {
  if (::mkdirat(state_dirfd, "grants", 0700) != 0 && errno != EEXIST)
    return Error::from_errno(fmt::format("grant journal: mkdir {}/grants", state_dir));
  GrantJournal j;
  j.dir_ = state_dir + "/grants";
  j.dirfd_ = SEALRUN_TRY_CTX(open_at(state_dirfd, "grants", O_RDONLY | O_DIRECTORY | O_NOFOLLOW),
                             "grant journal: open " + j.dir_ + " (a symlink is refused)");
  auto st = SEALRUN_TRY(fstat_fd(j.dirfd_.get(), j.dir_));
  if (st.st_uid != ::geteuid())
    return Error::make(
        fmt::format("grant journal: {} belongs to uid {}, not to us (uid {}); "
                    "refusing to trust it",
                    j.dir_, st.st_uid, ::geteuid()));
  // Records name processes and groups to kill: nobody else may add or change them.
  if ((st.st_mode & 077) != 0 && ::fchmod(j.dirfd_.get(), 0700) != 0)
    return Error::from_errno("grant journal: chmod 0700 " + j.dir_);
  if (auto boot = current_boot_id()) j.boot_id_ = std::move(*boot);
  return j;
}

Status GrantJournal::record(const GrantRecord& record, RecordDurability durability) {
  if (!is_valid_run_id(record.id))
    return Error::make(
        fmt::format("grant journal: run id '{}' is not usable as a record name", record.id));
  // Shared: each run writes and forgets only its own records (files of their own, replaced by an
  // atomic rename), so runs in one state directory need not wait for one another's fsyncs; only
  // the removal of a dead writer's temporary excludes every writer.
  auto lock = SEALRUN_TRY_CTX(JournalLock::take(dirfd_.get(), dir_, false), "grant journal");
  GrantRecord stamped = record;
  if (stamped.boot_id.empty()) stamped.boot_id = boot_id_;
  std::string text = grant_record_to_json(stamped);
  // Through the held descriptor of grants/: a path swapped meanwhile cannot redirect it.
  std::string live = live_file(record.id);
  if (durability == RecordDurability::kUntilReboot)
    return write_file_volatile_in(dirfd_.get(), live, text, 0600, dir_ + "/" + live)
        .context("grant journal: record " + record.id);
  SEALRUN_TRY(write_file_atomic_in(dirfd_.get(), record_file(record.id), text, 0600,
                                   dir_ + "/" + record_file(record.id))
                  .context("grant journal: record " + record.id));
  struct stat st {};
  if (::fstatat(dirfd_.get(), live.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)  // older than this
    return write_file_volatile_in(dirfd_.get(), live, text, 0600, dir_ + "/" + live)
        .context("grant journal: record " + record.id);
  return ok_status();
}

Status GrantJournal::forget(const std::string& id) {
  if (!is_valid_run_id(id))
    return Error::make(fmt::format("grant journal: run id '{}' is not a record name", id));
  auto lock = SEALRUN_TRY_CTX(JournalLock::take(dirfd_.get(), dir_, false), "grant journal");
  // No directory fsync: a record is forgotten only once nothing it names is left, so one that a
  // crash brings back names only what is gone, and `sealrun sweep` finds it so and removes it.
  // The live version first: killed in between, the durable one alone is left, as a record.
  for (const std::string& name : {live_file(id), record_file(id)})
    if (::unlinkat(dirfd_.get(), name.c_str(), 0) != 0 && errno != ENOENT)
      return Error::from_errno(fmt::format("grant journal: remove {}/{}", dir_, name));
  return ok_status();
}

Result<bool> GrantJournal::remove_dead_temporary(const std::string& name,
                                                 const std::string& proc_root) {
  const std::optional<pid_t> writer = atomic_write_temporary_writer(name);
  if (!writer)
    return Error::make(fmt::format("grant journal: {} is not a temporary of a record write", name));
  auto lock = SEALRUN_TRY_CTX(JournalLock::take(dirfd_.get(), dir_, true), "grant journal");
  if (process_exists(*writer, proc_root)) return false;  // its writer may be alive
  if (::unlinkat(dirfd_.get(), name.c_str(), 0) != 0 && errno != ENOENT)
    return Error::from_errno(fmt::format("grant journal: remove {}/{}", dir_, name));
  return true;
}

Result<GrantRecord> GrantJournal::read_entry(const std::string& name) const {
  auto text = read_bounded_file(dirfd_.get(), name, kMaxRecordBytes);
  if (!text) return Error::make("unreadable: " + text.error().message());
  auto rec = grant_record_from_json(*text);
  if (!rec) return Error::make("corrupt: " + rec.error().message());
  if (name != record_file(rec->id) && name != live_file(rec->id))
    return Error::make(
        fmt::format("corrupt: record id '{}' does not match its file name", rec->id));
  return rec;
}

Result<std::vector<JournalEntry>> GrantJournal::list() {
  auto lock = SEALRUN_TRY_CTX(JournalLock::take(dirfd_.get(), dir_, false), "grant journal");
  int dup = ::fcntl(dirfd_.get(), F_DUPFD_CLOEXEC, 3);
  if (dup < 0) return Error::from_errno("grant journal: dup " + dir_);
  std::unique_ptr<DIR, int (*)(DIR*)> d(::fdopendir(dup), &::closedir);
  if (!d) {
    ::close(dup);
    return Error::from_errno("grant journal: read " + dir_);
  }
  ::rewinddir(d.get());
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d.get())) {
    std::string n = e->d_name;
    if (n != "." && n != ".." && n != kLockName) names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  std::vector<JournalEntry> out;
  for (const auto& n : names) {
    JournalEntry e;
    e.file = dir_ + "/" + n;
    bool live_name = ends_with(n, kLiveSuffix) && n[0] != '.';
    if (live_name) {  // read with its durable record; alone, it is reported
      const std::string durable = record_file(n.substr(0, n.size() - kLiveSuffix.size()));
      if (std::binary_search(names.begin(), names.end(), durable)) continue;
      e.problem = "live record without its durable record (<id>.json)";
      out.push_back(std::move(e));
      continue;
    }
    bool json_name = ends_with(n, kRecordSuffix) && n[0] != '.';
    if (!json_name) {
      e.temporary = atomic_write_temporary_writer(n).has_value();
      e.problem = e.temporary ? "leftover temporary file of an interrupted record write"
                              : "unexpected file in the grant journal (not <id>.json)";
      out.push_back(std::move(e));
      continue;
    }
    auto rec = read_entry(n);
    if (!rec) {
      e.problem = rec.error().message();
      out.push_back(std::move(e));
      continue;
    }
    const std::string live = live_file(n.substr(0, n.size() - kRecordSuffix.size()));
    if (std::binary_search(names.begin(), names.end(), live)) {
      auto newer = read_entry(live);
      if (newer) {
        rec = std::move(newer);
      } else if (rec->boot_id.empty() || boot_id_.empty() || rec->boot_id == boot_id_) {
        // Same boot (or unknown): the page cache kept every complete write, so this is damage.
        e.problem = "live record " + live + ": " + newer.error().message();
        out.push_back(std::move(e));
        continue;
      }  // else a power failure's leftover: what it added is gone with that boot
    }
    e.readable = true;
    e.record = std::move(*rec);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace sealrun
