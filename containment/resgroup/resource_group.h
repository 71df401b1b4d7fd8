// SPDX-License-Identifier: Apache-2.0
// Resource groups: the kernel-side box a job runs in, with memory and pids limits. Three back ends,
// chosen by what the host offers: systemd over sd-bus (a transient scope), a delegated cgroup v2
// subtree, cgroup v1 hierarchies. Each is created as a child of the controller's own groups only,
// its limits are read back before the job starts, and stop() ends with the group confirmed empty.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/sweep_step.h"
#include "core/unique_fd.h"

namespace sealrun::resgroup {

enum class Backend { kSystemd, kCgroupV2, kCgroupV1, kNone };
std::string_view backend_name(Backend b);  // "systemd", "cgroup-v2", "cgroup-v1", "none"

struct GroupLimits {
  uint64_t memory_high_bytes = 7ULL << 30;
  uint64_t memory_max_bytes = 8ULL << 30;
  uint64_t swap_max_bytes = 0;
  uint64_t pids_max = 4096;
};

// One limit as applied: what was asked, what the kernel/manager reports back, and whether it is
// really in force (e.g. MemoryHigh on a cgroup v1 host: applied=false, with a note).
struct LimitReadback {
  std::string name;  // "memory_high_bytes", "memory_max_bytes", "swap_max_bytes", "pids_max"
  uint64_t requested = 0;
  std::optional<uint64_t> observed;
  bool applied = false;
  std::string note;
  // What binds the job: the lower of this group's own value and any ancestor's (a Slurm step, a
  // systemd slice, a CI runner's group may set a lower one), and the group that sets it.
  std::optional<uint64_t> effective;
  std::string effective_set_by;
};

// Fills in `l.effective`/`effective_set_by`: the group's own observed value, unless an ancestor's
// (`ancestor`, from lowest_limit_up_the_tree) is lower. `own_path` names the group itself.
void settle_effective(LimitReadback& l, const std::string& own_path,
                      const std::optional<std::pair<uint64_t, std::string>>& ancestor);

struct MemoryReport {
  std::optional<uint64_t> peak_bytes;
  uint64_t events_high = 0;
  uint64_t events_max = 0;
  uint64_t events_oom = 0;
  uint64_t events_oom_kill = 0;
  std::optional<uint64_t> swap_used_bytes;
  // Forks refused at pids.max (pids.events "max", v1 and v2 alike); 0 where not read (systemd).
  uint64_t events_pids_max = 0;
};

struct StopReport {
  bool confirmed = false;            // the group is empty (and removed, if remove() ran)
  uint64_t processes_signalled = 0;  // processes seen in the group when the stop began
  std::vector<std::string> actions;  // "TERM 3 processes", "KILL via freezer", "empty", ...
};

// What a back end can do on this host, found by trying (used by `sealrun probe` and the grant).
struct BackendProbe {
  Backend backend = Backend::kNone;
  bool available = false;
  std::string why;  // how it was checked, or why it is unavailable
  bool memory_max = false;
  bool memory_high = false;
  bool swap_max = false;
  bool pids_max = false;
};

class ResourceGroup {
 public:
  virtual ~ResourceGroup() = default;
  virtual Backend backend() const = 0;
  // What sweep needs to find it again: cgroup directories or the unit name.
  virtual std::vector<std::string> locators() const = 0;
  // cgroupfs back ends: descriptors of cgroup.procs files the spawned child writes "0" into
  // before exec (SpawnOptions::join_cgroup_fds). Empty for systemd.
  virtual std::vector<int> join_fds() const = 0;
  // Called with the held child's pid before it is released (systemd: StartTransientUnit with it).
  virtual Status adopt(pid_t pid) = 0;
  virtual Result<std::vector<LimitReadback>> read_back() = 0;
  virtual Result<MemoryReport> memory_report() = 0;
  // A read-only descriptor of the group's current-usage counter (v2 memory.current, v1
  // memory.usage_in_bytes), for the census's memory samples; call it after adopt().
  virtual Result<UniqueFd> open_memory_usage() const {
    return Error::make("this resource group has no memory usage counter");
  }
  // TERM to every process, grace_ms, then KILL the whole group race-free, then confirm it empty.
  virtual Result<StopReport> stop(int64_t grace_ms) = 0;
  // Removes the (empty) group; sealrun only ever removes groups it created.
  virtual Status remove() = 0;
};

std::vector<BackendProbe> probe_backends();

// What a grant record says about the run's groups, for `sealrun sweep`.
struct RecordedGroups {
  std::string backend;  // backend_name() as recorded
  std::vector<std::string> locators;
  std::string run_id;
  pid_t controller_pid = 0;
  std::string controller_start;
};
// Stops (TERM, grace, KILL, confirmed empty) and removes the groups of a killed run, whatever the
// back end; a locator that is not the group this record's run makes is refused, never touched.
std::vector<SweepStep> sweep_recorded(const RecordedGroups& groups, int64_t grace_ms);
// Creates the group for run `run_id` with the strongest available back end (or `preferred`).
Result<std::unique_ptr<ResourceGroup>> create_group(const std::string& run_id,
                                                    const GroupLimits& limits,
                                                    std::optional<Backend> preferred = {});
// The same with the back ends as `probes` (probe_backends(), strongest first) found them a moment
// ago: a run probes once, for its grant, and creates its group from that answer.
Result<std::unique_ptr<ResourceGroup>> create_group(const std::string& run_id,
                                                    const GroupLimits& limits,
                                                    const std::vector<BackendProbe>& probes);

}  // namespace sealrun::resgroup
