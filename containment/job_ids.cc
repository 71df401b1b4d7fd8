// SPDX-License-Identifier: Apache-2.0
// A uid of its own for every run: see job_ids.h.
#include "containment/job_ids.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <nlohmann/json.hpp>
#include <set>

#include "containment/grant_journal.h"
#include "containment/process_ids.h"
#include "core/bounded_file.h"
#include "core/decimal.h"
#include "core/proc.h"
#include "core/strict_json.h"
#include "core/syscall.h"
#include "core/trusted_dir.h"

namespace sealrun {

namespace {

// Below this an image's own ids live; from the top this many are left to nobody, nogroup and
// whatever else images put near 65534.
constexpr uint64_t kTopReserve = 1024;
constexpr uint64_t kMinRange = 4096;

Result<SubidRange> read_range(const std::string& path, const JobUser& user) {
  auto text =
      SEALRUN_TRY_CTX(read_bounded_file(AT_FDCWD, path, 1 << 20), "the job user's subordinate ids");
  uint64_t id = path.find("gid") != std::string::npos ? user.gid : user.uid;
  return find_subid_range(text, user.name, id, path);
}

std::string record_json(const JobIdHolder& h, const JobIds& ids) {
  nlohmann::json j = {{"uid", ids.uid},
                      {"gid", ids.gid},
                      {"state_dir", h.state_dir},
                      {"run_id", h.run_id},
                      {"controller_pid", h.controller_pid},
                      {"controller_start", h.controller_start},
                      {"boot_id", h.boot_id},
                      {"created_at", utc_timestamp_now()}};
  return j.dump() + "\n";
}

Result<JobIdHolder> read_record(int dirfd, const std::string& name) {
  auto text = SEALRUN_TRY(read_bounded_file(dirfd, name, 64 * 1024));
  auto j = SEALRUN_TRY(parse_strict_json(text, 2));
  if (!j.is_object()) return Error::make("not a JSON object");
  JobIdHolder h;
  try {
    h.state_dir = j.at("state_dir").get<std::string>();
    h.run_id = j.at("run_id").get<std::string>();
    h.controller_pid = j.at("controller_pid").get<pid_t>();
    h.controller_start = j.at("controller_start").get<std::string>();
    h.boot_id = j.at("boot_id").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    return Error::make(fmt::format("record {}: {}", name, e.what()));
  }
  return h;
}

// A held slot whose run is over in every way but the release: its controller is gone (or was in
// another boot) and its state directory keeps no grant record of the run.
bool holder_finished(const JobIdHolder& h, const std::string& boot_id) {
  bool other_boot = !h.boot_id.empty() && !boot_id.empty() && h.boot_id != boot_id;
  if (!other_boot && process_is_alive(h.controller_pid, h.controller_start)) return false;
  return !GrantJournal::has_record(h.state_dir, h.run_id);
}

// The registry directory (made root's, 0700, when absent; refused when anyone else could write
// it or a path to it) and its lock, held for the caller's scope.
struct LockedRegistry {
  UniqueFd dir;
  UniqueFd lock;
};
Result<LockedRegistry> lock_registry(const std::string& path) {
  std::string parent = path.substr(0, path.rfind('/'));
  if (!parent.empty()) (void)open_trusted_dir(parent, true, 0755);  // /var/lib/sealrun
  auto dir = SEALRUN_TRY_CTX(open_trusted_dir(path, true, 0700), "the job id registry");
  auto lock = SEALRUN_TRY(open_at(dir.fd.get(), ".lock", O_RDWR | O_CREAT | O_NOFOLLOW, 0600));
  if (retry_eintr([&] { return ::flock(lock.get(), LOCK_EX); }) != 0)
    return Error::from_errno("lock " + path + "/.lock");
  return LockedRegistry{std::move(dir.fd), std::move(lock)};
}

}  // namespace

Result<SubidRange> find_subid_range(std::string_view text, const std::string& name, uint64_t id,
                                    const std::string& file) {
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    size_t a = line.find(':');
    size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (line.empty() || line[0] == '#' || b == std::string_view::npos) continue;
    std::string_view owner = line.substr(0, a);
    auto start = parse_decimal<uint64_t>(line.substr(a + 1, b - a - 1));
    auto count = parse_decimal<uint64_t>(line.substr(b + 1));
    if (!start || !count || *count == 0) continue;
    if (owner == name || parse_decimal<uint64_t>(owner) == std::optional<uint64_t>(id))
      return SubidRange{*start, *count};
  }
  return Error::make(fmt::format(
      "{} gives the job user {} no subordinate ids; add a range (e.g. `usermod --add-subuids "
      "100000-165535 --add-subgids 100000-165535 {}`, as `bash .ci/setup` does)",
      file, name, name));
}

Result<SlotSlice> slot_slice(uint64_t range_count) {
  if (range_count < kMinRange)
    return Error::make(fmt::format(
        "the job user's subordinate range holds {} ids; a uid of its own per run needs at least "
        "{} (65536 is usual)",
        range_count, kMinRange));
  return SlotSlice{range_count / 2, range_count - kTopReserve - range_count / 2};
}

Result<JobIdPool> parse_pool_spec(const std::string& spec) {
  size_t colon = spec.find(':');
  auto first = parse_decimal<uint64_t>(std::string_view(spec).substr(0, colon));
  uint64_t count = 0;
  if (colon != std::string::npos)
    count = parse_decimal<uint64_t>(std::string_view(spec).substr(colon + 1)).value_or(0);
  if (!first || count == 0)
    return Error::make(fmt::format(
        "job id pool \"{}\" is not FIRST:COUNT (slot indices, COUNT at least 1)", spec));
  JobIdPool p;
  p.first = *first;
  p.count = count;
  return p;
}

Result<JobIds> allocate_job_ids(const JobUser& job_user, const JobIdPool& pool, JobIdHolder holder,
                                const std::string& etc_dir) {
  if (!pool.invalid.empty()) return Error::make(pool.invalid);
  SubidRange uids = SEALRUN_TRY(read_range(etc_dir + "/subuid", job_user));
  SubidRange gids = SEALRUN_TRY(read_range(etc_dir + "/subgid", job_user));
  SlotSlice slice = SEALRUN_TRY(slot_slice(std::min(uids.count, gids.count)));
  uint64_t first = std::min(pool.first, slice.count);
  uint64_t last = pool.count ? std::min(slice.count, first + *pool.count) : slice.count;
  if (auto boot = current_boot_id(); boot) holder.boot_id = *boot;
  // The pass over /proc comes before the lock, so that runs starting together do not queue behind
  // one another's (it reads every process's status: milliseconds on a busy host). Nothing is
  // missed by taking it early: a process gets a slot's ids only from the run that holds the slot,
  // after that run's record exists (which the check under the lock then sees), and a run gives its
  // slot back only once no process of it is left; a process seen here that has ended since only
  // makes the slot look busy (another is taken). Processes outside sealrun that take such ids are
  // not ordered by the lock either way.
  IdsInUse in_use = ids_in_use();
  auto reg = SEALRUN_TRY(lock_registry(pool.registry));
  uint64_t held = 0, busy = 0;
  for (uint64_t slot = first; slot < last; ++slot) {
    uint64_t offset = slice.first + slot;
    JobIds ids{static_cast<uid_t>(uids.start + offset), static_cast<gid_t>(gids.start + offset),
               static_cast<uint32_t>(offset + 1), slot};
    std::string name = std::to_string(ids.uid);
    struct stat st {};
    if (::fstatat(reg.dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      auto h = read_record(reg.dir.get(), name);
      // A record that cannot be read is kept: it may be a live run's (never guess it free).
      if (!h || !holder_finished(*h, holder.boot_id) || in_use.uids.count(ids.uid) != 0 ||
          in_use.gids.count(ids.gid) != 0) {
        ++held;
        continue;
      }
      if (::unlinkat(reg.dir.get(), name.c_str(), 0) != 0) {
        ++held;
        continue;
      }
    }
    // A process with the id that no record names: something outside sealrun uses it.
    if (in_use.uids.count(ids.uid) != 0 || in_use.gids.count(ids.gid) != 0) {
      ++busy;
      continue;
    }
    auto fd =
        SEALRUN_TRY(open_at(reg.dir.get(), name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600));
    // The O_EXCL file holds the slot from here on: the lock is let go before the record is written
    // and made durable (two fsyncs), which no other allocation needs to wait for. Another
    // allocation that reads this record half-written keeps the slot (an unreadable record is
    // never guessed free), and only this run removes it until its controller has ended.
    reg.lock.reset();
    Status wrote = write_all(fd.get(), record_json(holder, ids), pool.registry + "/" + name);
    if (wrote && ::fsync(fd.get()) != 0) wrote = Error::from_errno("fsync " + name);
    if (wrote && ::fsync(reg.dir.get()) != 0) wrote = Error::from_errno("fsync " + pool.registry);
    if (!wrote) {
      ::unlinkat(reg.dir.get(), name.c_str(), 0);
      return std::move(wrote).error().context("record the run's job uid");
    }
    return ids;
  }
  return Error::make(fmt::format(
      "no free job uid: all {} slots of the pool (uids {}–{} of {}'s subordinate range {}:{}) are "
      "taken ({} held by runs that are running or were killed and not swept, records in {}; {} "
      "used by processes outside sealrun). Wait for runs to end, run `sealrun sweep` on the state "
      "directory of a killed run, or widen the pool ($SEALRUN_JOB_ID_POOL)",
      last - first, uids.start + slice.first + first, uids.start + slice.first + last - 1,
      job_user.name, uids.start, uids.count, held, pool.registry, busy));
}

Status release_job_ids(const JobIdPool& pool, uid_t uid, const std::string& state_dir,
                       const std::string& run_id) {
  auto reg = SEALRUN_TRY(lock_registry(pool.registry));
  std::string name = std::to_string(uid);
  struct stat st {};
  if (::fstatat(reg.dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return ok_status();
  auto h = SEALRUN_TRY_CTX(read_record(reg.dir.get(), name),
                           fmt::format("job id record {}/{}", pool.registry, name));
  if (h.state_dir != state_dir || h.run_id != run_id)
    return Error::make(fmt::format("job uid {} is held by run {} of {}, not by run {} of {}: kept",
                                   uid, h.run_id, h.state_dir, run_id, state_dir));
  // Not fsync'd: a release lost to a power failure leaves a record whose holder is dead and whose
  // grant record is gone, which the next allocation reclaims.
  if (::unlinkat(reg.dir.get(), name.c_str(), 0) != 0)
    return Error::from_errno(fmt::format("remove {}/{}", pool.registry, name));
  return ok_status();
}

bool id_has_process(uid_t uid, gid_t gid) {
  IdsInUse in_use = ids_in_use();
  return in_use.uids.count(uid) != 0 || in_use.gids.count(gid) != 0;
}

}  // namespace sealrun
