// A uid and gid of its own for every run (docs/containment.md, "Each run's own uid"). When the
// controller is root, each run's job runs as a host uid/gid that no other run, no login user and
// no file outside the run's own roots has: one slot of a slice of the job user's subordinate range
// (/etc/subuid, /etc/subgid — the range rootless podman maps a container's ids onto), held from
// before anything is handed to the job until the run's cleanup is confirmed.
//
// The split of the range (count C, first id S): rootless podman maps in-namespace id k (1..C) to
// S+k-1, and an image's files keep their own ids (root, ordinary users well below C/2, nobody and
// nogroup at 65534). The slots are the offsets [C/2, C-1024): above every ordinary image id, below
// nobody's. Under podman a run's job runs with `--user` = its offset + 1 (so its host uid is its
// slot), never as an id podman maps for another run's processes.
//
// The registry is host-wide (one per host, whatever the state directory): <registry>/<uid>, one
// file per slot held, written with O_EXCL under <registry>/.lock (flock) and fsync'd, naming the
// holder (state directory, run id, controller pid, start time, boot). A slot is taken only when it
// has no record and no process on the host has its uid or gid; it is given back by the run's
// cleanup, by `sweep` once a killed run's leftovers are gone, or reclaimed by a later allocation
// when its holder is dead and the holder's state directory has no grant record for the run (the
// run's sweep or cleanup finished everything but the release).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/job_user.h"
#include "core/result.h"

namespace sealrun {

inline constexpr const char* kDefaultJobIdRegistry = "/var/lib/sealrun/job-ids";

// One "name:start:count" line of /etc/subuid or /etc/subgid.
struct SubidRange {
  uint64_t start = 0;
  uint64_t count = 0;
};

// The first range of `text` (the file's bytes; `file` names it in errors) whose owner field is
// `name` or the decimal `id`. Comment (#) and malformed lines are skipped.
Result<SubidRange> find_subid_range(std::string_view text, const std::string& name, uint64_t id,
                                    const std::string& file);

// Offsets of the range that are run slots (see above): [first, first + count).
struct SlotSlice {
  uint64_t first = 0;
  uint64_t count = 0;
};
// The slice of a range of `range_count` ids; an error when the range is too small (< 4096).
Result<SlotSlice> slot_slice(uint64_t range_count);

// The controller's choice of registry and pool ($SEALRUN_JOB_ID_REGISTRY, $SEALRUN_JOB_ID_POOL =
// "FIRST:COUNT", slot indices within the slice: a site that shares the range, or a test).
struct JobIdPool {
  std::string registry = kDefaultJobIdRegistry;
  uint64_t first = 0;
  std::optional<uint64_t> count;  // nullopt: to the end of the slice
  std::string invalid;            // why the configured pool was refused; allocation then fails
};
// Parses "FIRST:COUNT" (decimal, COUNT > 0).
Result<JobIdPool> parse_pool_spec(const std::string& spec);

// What holds a slot.
struct JobIdHolder {
  std::string state_dir;
  std::string run_id;
  pid_t controller_pid = 0;
  std::string controller_start;
  std::string boot_id;  // stamped by allocate_job_ids
};

struct JobIds {
  uid_t uid = 0;
  gid_t gid = 0;
  uint32_t podman_user = 0;  // the in-namespace id podman's --user gives it (offset + 1)
  uint64_t slot = 0;         // index within the slice
};

// Takes a free slot of `job_user`'s subordinate ranges for `holder` (see above). The error says
// which range, how many slots and what to do when none is free.
Result<JobIds> allocate_job_ids(const JobUser& job_user, const JobIdPool& pool, JobIdHolder holder,
                                const std::string& etc_dir = "/etc");
// Gives `uid`'s slot back when its record names `state_dir` and `run_id` (else an error, and the
// record stays). A slot without a record is already free: ok.
Status release_job_ids(const JobIdPool& pool, uid_t uid, const std::string& state_dir,
                       const std::string& run_id);
// Whether any process on the host (zombies aside) has `uid` or `gid` among its real, effective,
// saved or file system ids (/proc/<pid>/status).
bool id_has_process(uid_t uid, gid_t gid);

}  // namespace sealrun
