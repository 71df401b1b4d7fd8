// SPDX-License-Identifier: Apache-2.0
// The systemd back end (see systemd_scope.h): a transient scope started over sd-bus that holds the
// job, read back from the manager's unit properties and the kernel's cgroup files, stopped with
// KillUnit TERM, a grace period, KillUnit KILL and StopUnit, and confirmed gone.
//
// The keeper. A scope ends the moment its last process exits, and systemd then removes its cgroup
// — with the peak and the OOM-kill count the receipt needs. So the scope is started holding the job
// and a keeper: a child of ours that ignores SIGTERM and sleeps, keeping the cgroup populated until
// stop() has taken the final figures. It costs one task (TasksMax = pids_max + 1; the read-back
// says so) and no memory worth counting. It dies with the thread that made it (PDEATHSIG), so a
// killed controller leaves no keeper behind, and stop()'s SIGKILL ends it.
#include "containment/resgroup/systemd_scope.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "containment/resgroup/cgroupfs_io.h"
#include "containment/resgroup/sd_bus_manager.h"
#include "containment/resgroup/systemd_readback.h"
#include "containment/resgroup/systemd_scope_ops.h"
#include "core/process.h"
#include "core/run_id.h"
#include "core/syscall.h"

namespace sealrun::resgroup {
namespace {

using systemd::CgroupMode;

constexpr const char* kScopeInterface = "org.freedesktop.systemd1.Scope";
constexpr int64_t kJobTimeoutMs = 30000;

std::optional<uint64_t> read_limit(const std::string& path) {
  auto text = systemd::read_cgroup_text(path);
  if (!text) return std::nullopt;
  return systemd::parse_limit(*text);
}

// The keeper process (see the top of this file): forked, not exec'ed, so between fork and its
// endless pause() it only makes async-signal-safe calls.
class Keeper {
 public:
  Keeper() = default;
  Keeper(const Keeper&) = delete;
  Keeper& operator=(const Keeper&) = delete;
  ~Keeper() { kill_and_reap(); }

  Status start() {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) return Error::from_errno("fork the scope keeper");
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(0);
      struct sigaction ignore {};
      ignore.sa_handler = SIG_IGN;
      sigaction(SIGTERM, &ignore, nullptr);
      // Hold none of the controller's descriptors: an inherited pipe end would keep a reader
      // waiting for an EOF that never comes.
      syscall(SYS_close_range, 0U, ~0U, 0U);
      for (;;) pause();
    }
    pid_ = pid;
    pidfd_.reset(pidfd_open_raw(pid, 0));
    if (!pidfd_) {
      Error e = Error::from_errno("pidfd_open the scope keeper");
      kill(pid, SIGKILL);  // our own unreaped child: its pid cannot have been recycled
      waitpid(pid, nullptr, 0);
      pid_ = -1;
      return e;
    }
    return ok_status();
  }
  pid_t pid() const { return pid_; }
  void kill_and_reap() {
    if (pid_ <= 0) return;
    pidfd_send_signal_raw(pidfd_.get(), SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    pidfd_.reset();
  }

 private:
  pid_t pid_ = -1;
  UniqueFd pidfd_;
};

class SystemdScope final : public ResourceGroup {
 public:
  SystemdScope(SystemdManagerClient client, std::string unit, std::string run_id,
               GroupLimits limits, SystemdTarget target)
      : client_(std::move(client)),
        unit_(std::move(unit)),
        run_id_(std::move(run_id)),
        limits_(limits),
        target_(std::move(target)),
        mode_(systemd::detect_cgroup_mode(target_.cgroupfs_root)) {}

  ~SystemdScope() override {
    // A scope that was never stopped (an error path of the caller) is still ended here.
    if (adopted_ && !stopped_) {
      (void)client_.kill_unit(unit_, "all", SIGKILL);
      keeper_.kill_and_reap();
      (void)client_.stop_unit(unit_, kJobTimeoutMs);
    }
  }

  Backend backend() const override { return Backend::kSystemd; }
  std::vector<std::string> locators() const override { return {unit_}; }
  std::vector<int> join_fds() const override { return {}; }  // systemd moves the pid itself

  Status adopt(pid_t pid) override {
    if (adopted_) return Error::make(fmt::format("{}: adopt called twice", unit_));
    SEALRUN_TRY_CTX(keeper_.start(), unit_);
    std::vector<uint32_t> pids{static_cast<uint32_t>(pid), static_cast<uint32_t>(keeper_.pid())};
    auto props = systemd::scope_properties(limits_, pids, fmt::format("sealrun run {}", run_id_));
    bool submitted = false;
    auto result = client_.start_transient_unit(unit_, props, kJobTimeoutMs, &submitted);
    if (!result.ok() || *result != "done") {
      keeper_.kill_and_reap();
      // Only a unit this call made is ours to end; a refused call (UnitExists: a concurrent run
      // with the same id) made nothing, and the existing unit is not touched.
      if (submitted) {
        (void)client_.kill_unit(unit_, "all", SIGKILL);
        (void)client_.stop_unit(unit_, kJobTimeoutMs);
      }
      if (!result.ok()) return std::move(result).error();
      return Error::make(
          fmt::format("start of scope {} ended with job result \"{}\"", unit_, *result));
    }
    adopted_ = true;
    auto path = SEALRUN_TRY_CTX(client_.unit_path(unit_), "scope just started");
    if (!path) return Error::make(fmt::format("scope {} vanished right after it started", unit_));
    unit_path_ = *path;
    control_group_ = SEALRUN_TRY(client_.get_string(unit_path_, kScopeInterface, "ControlGroup"));
    if (control_group_.size() < 2 || control_group_[0] != '/') {
      return Error::make(
          fmt::format("scope {} reports no control group (\"{}\")", unit_, control_group_));
    }
    // The kernel must show the job in the scope where we look; otherwise every later reading
    // (limits, peak, "empty") would be of the wrong place and prove nothing.
    auto members = systemd::read_cgroup_procs(procs_file());
    if (!members || std::find(members->begin(), members->end(), pid) == members->end()) {
      return Error::make(fmt::format(
          "scope {} started, but {} does not list pid {}: the manager's cgroups are not visible "
          "at {} (SystemdTarget.cgroupfs_root)",
          unit_, procs_file(), pid, target_.cgroupfs_root));
    }
    return ok_status();
  }

  Result<std::vector<LimitReadback>> read_back() override {
    if (!adopted_) return Error::make(fmt::format("{}: read_back before adopt", unit_));
    systemd::ScopeObservation o;
    o.mode = mode_;
    auto prop = [&](const char* name) -> std::optional<uint64_t> {
      auto v = client_.get_u64(unit_path_, kScopeInterface, name);
      if (!v.ok()) return std::nullopt;
      return *v;
    };
    o.property_memory_high = prop("MemoryHigh");
    o.property_memory_max = prop("MemoryMax");
    o.property_swap_max = prop("MemorySwapMax");
    o.property_tasks_max = prop("TasksMax");
    if (mode_ == CgroupMode::kLegacy) {
      std::string mem = memory_dir();
      o.file_memory_max = read_limit(mem + "/memory.limit_in_bytes");
      o.file_swap_max = read_limit(mem + "/memory.memsw.limit_in_bytes");
      o.file_pids_max = read_limit(target_.cgroupfs_root + "/pids" + control_group_ + "/pids.max");
    } else {
      std::string dir = memory_dir();
      o.file_memory_high = read_limit(dir + "/memory.high");
      o.file_memory_max = read_limit(dir + "/memory.max");
      o.file_swap_max = read_limit(dir + "/memory.swap.max");
      o.file_pids_max = read_limit(dir + "/pids.max");
    }
    auto out = systemd::evaluate_readback(limits_, o, static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
    // The scope sits in a slice the manager (or a site) may limit lower: that one binds.
    bool legacy = mode_ == CgroupMode::kLegacy;
    for (auto& l : out) {
      const char* file = l.name == "memory_max_bytes"
                             ? (legacy ? "memory.limit_in_bytes" : "memory.max")
                         : l.name == "pids_max" ? "pids.max"
                                                : nullptr;
      if (file == nullptr) continue;
      std::string root =
          l.name == "pids_max" && legacy ? target_.cgroupfs_root + "/pids" : memory_root();
      std::optional<std::pair<uint64_t, std::string>> above;
      if (auto dir = open_at(AT_FDCWD, root + control_group_, O_RDONLY | O_DIRECTORY); dir)
        if (auto a = lowest_limit_up_the_tree(dir->get(), control_group_, file))
          above = std::make_pair(a->value, a->path);
      settle_effective(l, unit_, above);
    }
    return out;
  }

  Result<MemoryReport> memory_report() override {
    if (!adopted_) return Error::make(fmt::format("{}: memory_report before adopt", unit_));
    if (auto live = read_memory_files()) {
      last_report_ = *live;
      return *live;
    }
    // The scope's cgroup is gone (after stop): the figures taken just before its final SIGKILL.
    if (last_report_) return *last_report_;
    return Error::make(fmt::format("{}: the cgroup {} is gone and no memory figures were taken",
                                   unit_, memory_dir()));
  }

  Result<UniqueFd> open_memory_usage() const override {
    if (!adopted_) return Error::make(fmt::format("{}: memory usage before adopt", unit_));
    return open_at(AT_FDCWD,
                   memory_dir() + (mode_ == CgroupMode::kLegacy ? "/memory.usage_in_bytes"
                                                                : "/memory.current"),
                   O_RDONLY);
  }

  Result<StopReport> stop(int64_t grace_ms) override {
    if (!adopted_) {
      StopReport report;
      report.confirmed = true;
      report.actions.push_back("scope never started: nothing to stop");
      return report;
    }
    stopped_ = true;
    (void)memory_report();
    systemd::ScopeStopHooks hooks;
    hooks.keeper = keeper_.pid();
    // The final figures, taken while the keeper still holds the cgroup (and its counters).
    hooks.before_kill = [this] { (void)memory_report(); };
    hooks.after_kill = [this] { keeper_.kill_and_reap(); };
    return systemd::stop_scope(client_, unit_, procs_file(), grace_ms, hooks);
  }

  Status remove() override {
    if (!adopted_) return ok_status();
    if (!stopped_) return Error::make(fmt::format("remove {}: stop it first", unit_));
    return systemd::wait_scope_gone(client_, unit_, procs_file());
  }

 private:
  // The hierarchy the memory controller is in ("<root>/memory" on v1, the unified one on v2).
  std::string memory_root() const {
    return mode_ == CgroupMode::kLegacy ? target_.cgroupfs_root + "/memory" : target_.cgroupfs_root;
  }
  std::string memory_dir() const {
    return mode_ == CgroupMode::kLegacy ? target_.cgroupfs_root + "/memory" + control_group_
                                        : target_.cgroupfs_root + control_group_;
  }
  std::string procs_file() const {
    return systemd::scope_procs_file(mode_, target_.cgroupfs_root, control_group_);
  }
  std::optional<MemoryReport> read_memory_files() const {
    std::string dir = memory_dir();
    if (mode_ == CgroupMode::kLegacy) {
      systemd::V1MemoryFiles f{systemd::read_cgroup_text(dir + "/memory.max_usage_in_bytes"),
                               systemd::read_cgroup_text(dir + "/memory.failcnt"),
                               systemd::read_cgroup_text(dir + "/memory.oom_control")};
      if (!f.max_usage_in_bytes && !f.oom_control) return std::nullopt;
      return systemd::memory_report_v1(f);
    }
    systemd::V2MemoryFiles f{systemd::read_cgroup_text(dir + "/memory.peak"),
                             systemd::read_cgroup_text(dir + "/memory.events"),
                             systemd::read_cgroup_text(dir + "/memory.swap.current")};
    if (!f.events) return std::nullopt;
    return systemd::memory_report_v2(f);
  }

  SystemdManagerClient client_;
  std::string unit_;
  std::string run_id_;
  GroupLimits limits_;
  SystemdTarget target_;
  CgroupMode mode_;
  Keeper keeper_;
  bool adopted_ = false;
  bool stopped_ = false;
  std::string unit_path_;
  std::string control_group_;
  std::optional<MemoryReport> last_report_;
};

}  // namespace

BackendProbe probe_systemd(const SystemdTarget& target) {
  BackendProbe probe;
  probe.backend = Backend::kSystemd;
  auto client = SystemdManagerClient::connect(target.bus_address);
  if (!client.ok()) {
    probe.why = "no systemd manager reachable: " + client.error().message();
    return probe;
  }
  auto version = client->version();
  if (!version.ok()) {
    probe.why = fmt::format("{} answers, but not as a systemd manager: {}", client->address(),
                            version.error().message());
    return probe;
  }
  CgroupMode mode = systemd::detect_cgroup_mode(target.cgroupfs_root);
  probe.available = true;
  if (mode == CgroupMode::kUnified) {
    auto controllers =
        systemd::read_cgroup_text(target.cgroupfs_root + "/cgroup.controllers").value_or("");
    bool memory = controllers.find("memory") != std::string::npos;
    probe.memory_max = probe.memory_high = probe.swap_max = memory;
    probe.pids_max = controllers.find("pids") != std::string::npos;
  } else {
    probe.memory_max =
        systemd::read_cgroup_text(target.cgroupfs_root + "/memory/memory.limit_in_bytes") ||
        systemd::read_cgroup_text(target.cgroupfs_root + "/memory/cgroup.procs");
    probe.pids_max =
        systemd::read_cgroup_text(target.cgroupfs_root + "/pids/cgroup.procs").has_value();
  }
  probe.why = fmt::format(
      "systemd {} on {}; {} at {}{}", *version, client->address(), cgroup_mode_name(mode),
      target.cgroupfs_root,
      mode == CgroupMode::kLegacy ? ": MemoryHigh and MemorySwapMax are not applied on v1" : "");
  return probe;
}

Result<std::unique_ptr<ResourceGroup>> create_systemd_group(const std::string& run_id,
                                                            const GroupLimits& limits,
                                                            const SystemdTarget& target) {
  std::string unit = SEALRUN_TRY(systemd::scope_unit_name(run_id));
  auto client = SEALRUN_TRY_CTX(SystemdManagerClient::connect(target.bus_address),
                                "systemd resource group for run " + run_id);
  // Refuse to reuse a unit name: a scope with this name belongs to another run.
  auto existing = SEALRUN_TRY(client.unit_path(unit));
  if (existing) {
    return Error::make(
        fmt::format("a unit named {} already exists: run id {} is in use", unit, run_id));
  }
  return std::unique_ptr<ResourceGroup>(
      new SystemdScope(std::move(client), std::move(unit), run_id, limits, target));
}

Result<std::vector<std::string>> list_sealrun_scopes(const SystemdTarget& target) {
  auto client =
      SEALRUN_TRY_CTX(SystemdManagerClient::connect(target.bus_address), "list sealrun scopes");
  return client.list_units("sealrun-*.scope");
}

Result<StopReport> stop_leftover_scope(const std::string& unit, int64_t grace_ms,
                                       const SystemdTarget& target) {
  constexpr std::string_view kPrefix = "sealrun-", kSuffix = ".scope";
  bool ours = unit.size() > kPrefix.size() + kSuffix.size() && unit.starts_with(kPrefix) &&
              unit.ends_with(kSuffix) &&
              is_valid_run_id(std::string_view(unit).substr(
                  kPrefix.size(), unit.size() - kPrefix.size() - kSuffix.size()));
  if (!ours) {
    return Error::make(fmt::format(
        "refusing to stop unit \"{}\": sealrun only stops its own sealrun-<run id>.scope units",
        unit));
  }
  auto client = SEALRUN_TRY_CTX(SystemdManagerClient::connect(target.bus_address),
                                "stop leftover scope " + unit);
  auto path = SEALRUN_TRY(client.unit_path(unit));
  if (!path) {
    StopReport report;
    report.confirmed = true;
    report.actions.push_back(unit + " is not loaded: nothing to stop");
    return report;
  }
  std::string control_group =
      SEALRUN_TRY(client.get_string(*path, kScopeInterface, "ControlGroup"));
  if (control_group == "/") {
    return Error::make(fmt::format("{} claims the root control group; not touching it", unit));
  }
  // No control group: the unit has no processes left; an empty path reads as "gone".
  std::string procs = control_group.empty() ? std::string()
                                            : systemd::scope_procs_file(
                                                  systemd::detect_cgroup_mode(target.cgroupfs_root),
                                                  target.cgroupfs_root, control_group);
  if (!procs.empty() && !systemd::read_cgroup_text(procs)) {
    auto state = client.get_string(*path, "org.freedesktop.systemd1.Unit", "ActiveState");
    if (state.ok() && *state != "inactive" && *state != "failed") {
      return Error::make(
          fmt::format("{} is {} but {} cannot be read: the manager's cgroups are not visible at {} "
                      "(SystemdTarget.cgroupfs_root)",
                      unit, *state, procs, target.cgroupfs_root));
    }
  }
  StopReport report = systemd::stop_scope(client, unit, procs, grace_ms, {});
  auto gone = systemd::wait_scope_gone(client, unit, procs);
  if (!gone.ok()) {
    report.confirmed = false;
    report.actions.push_back(gone.error().message());
  } else {
    report.actions.push_back(unit + " unloaded");
  }
  return report;
}

}  // namespace sealrun::resgroup
