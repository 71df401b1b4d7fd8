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
#include <linux/magic.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>

#include "containment/resgroup/sd_bus_manager.h"
#include "containment/resgroup/systemd_readback.h"
#include "core/process.h"
#include "core/syscall.h"

namespace sealrun::resgroup {
namespace {

using systemd::CgroupMode;

constexpr const char* kScopeInterface = "org.freedesktop.systemd1.Scope";
constexpr const char* kUnitInterface = "org.freedesktop.systemd1.Unit";
constexpr int64_t kJobTimeoutMs = 30000;
constexpr int64_t kConfirmTimeoutMs = 10000;
constexpr int64_t kPollMs = 20;

CgroupMode detect_mode(const std::string& cgroupfs_root) {
  struct statfs fs {};
  if (statfs(cgroupfs_root.c_str(), &fs) == 0 &&
      static_cast<unsigned long>(fs.f_type) == CGROUP2_SUPER_MAGIC) {
    return CgroupMode::kUnified;
  }
  return CgroupMode::kLegacy;
}

// A small cgroup interface file, or nullopt when it is absent or unreadable.
std::optional<std::string> read_small(const std::string& path) {
  auto fd = open_at(AT_FDCWD, path, O_RDONLY | O_NOFOLLOW);
  if (!fd.ok()) return std::nullopt;
  auto text = read_up_to(fd->get(), 64 * 1024, path);
  if (!text.ok()) return std::nullopt;
  return std::move(text).value();
}

std::optional<uint64_t> read_limit(const std::string& path) {
  auto text = read_small(path);
  if (!text) return std::nullopt;
  return systemd::parse_limit(*text);
}

// Pids listed in a cgroup.procs file; nullopt when the group directory is gone.
std::optional<std::vector<pid_t>> read_procs(const std::string& path) {
  auto text = read_small(path);
  if (!text) return std::nullopt;
  std::vector<pid_t> pids;
  size_t pos = 0;
  while (pos < text->size()) {
    size_t eol = text->find('\n', pos);
    if (eol == std::string::npos) eol = text->size();
    if (eol > pos) pids.push_back(static_cast<pid_t>(std::stol(text->substr(pos, eol - pos))));
    pos = eol + 1;
  }
  return pids;
}

void sleep_ms(int64_t ms) { usleep(static_cast<useconds_t>(ms * 1000)); }

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
        mode_(detect_mode(target_.cgroupfs_root)) {}

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
    auto result = client_.start_transient_unit(unit_, props, kJobTimeoutMs);
    if (!result.ok() || *result != "done") {
      keeper_.kill_and_reap();
      if (!result.ok()) return std::move(result).error();
      (void)client_.stop_unit(unit_, kJobTimeoutMs);
      return Error::make(
          fmt::format("start of scope {} ended with job result \"{}\"", unit_, *result));
    }
    adopted_ = true;
    auto path = SEALRUN_TRY_CTX(client_.unit_path(unit_), "scope just started");
    if (!path) return Error::make(fmt::format("scope {} vanished right after it started", unit_));
    unit_path_ = *path;
    control_group_ = SEALRUN_TRY(client_.get_string(unit_path_, kScopeInterface, "ControlGroup"));
    if (control_group_.empty() || control_group_[0] != '/') {
      return Error::make(
          fmt::format("scope {} reports no control group (\"{}\")", unit_, control_group_));
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
    return systemd::evaluate_readback(limits_, o, static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
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

  Result<StopReport> stop(int64_t grace_ms) override {
    StopReport report;
    if (!adopted_) {
      report.confirmed = true;
      report.actions.push_back("scope never started: nothing to stop");
      return report;
    }
    stopped_ = true;
    (void)memory_report();
    auto before = job_processes();
    report.processes_signalled = before ? before->size() : 0;
    record(report, fmt::format("TERM {} processes", report.processes_signalled),
           client_.kill_unit(unit_, "all", SIGTERM));
    int64_t deadline = monotonic_ms() + grace_ms;
    while (monotonic_ms() < deadline) {
      auto left = job_processes();
      if (!left || left->empty()) break;
      sleep_ms(kPollMs);
    }
    auto left = job_processes();
    if (left && !left->empty()) {
      report.actions.push_back(
          fmt::format("{} processes outlived the {} ms grace", left->size(), grace_ms));
    }
    // The final figures, taken while the keeper still holds the cgroup open.
    (void)memory_report();
    record(report, "KILL the scope", client_.kill_unit(unit_, "all", SIGKILL));
    keeper_.kill_and_reap();
    auto path = client_.unit_path(unit_);
    if (path.ok() && path->has_value()) {
      auto job = client_.stop_unit(unit_, kJobTimeoutMs);
      report.actions.push_back(job.ok() ? fmt::format("StopUnit: {}", *job)
                                        : "StopUnit: " + job.error().message());
    }
    report.confirmed = wait_until_empty();
    report.actions.push_back(report.confirmed
                                 ? "empty: no process left in " + control_group_
                                 : "NOT confirmed: processes remain in " + control_group_);
    return report;
  }

  Status remove() override {
    if (!adopted_) return ok_status();
    if (!stopped_) return Error::make(fmt::format("remove {}: stop it first", unit_));
    int64_t deadline = monotonic_ms() + kConfirmTimeoutMs;
    for (;;) {
      auto path = SEALRUN_TRY_CTX(client_.unit_path(unit_), "remove " + unit_);
      if (!path) break;
      auto state = client_.get_string(*path, kUnitInterface, "ActiveState");
      // A failed unit stays loaded until reset (CollectMode normally spares us this).
      if (state.ok() && *state == "failed") (void)client_.reset_failed_unit(unit_);
      if (monotonic_ms() >= deadline) {
        return Error::make(fmt::format("remove {}: the manager still has the unit loaded ({})",
                                       unit_, state.ok() ? *state : "state unknown"));
      }
      sleep_ms(kPollMs);
    }
    if (read_small(procs_file())) {
      return Error::make(
          fmt::format("remove {}: the cgroup {} still exists", unit_, control_group_));
    }
    return ok_status();
  }

 private:
  std::string memory_dir() const {
    return mode_ == CgroupMode::kLegacy ? target_.cgroupfs_root + "/memory" + control_group_
                                        : target_.cgroupfs_root + control_group_;
  }
  // On v1 the name=systemd hierarchy is the one systemd always keeps a unit's processes in.
  std::string procs_file() const {
    return mode_ == CgroupMode::kLegacy
               ? target_.cgroupfs_root + "/systemd" + control_group_ + "/cgroup.procs"
               : target_.cgroupfs_root + control_group_ + "/cgroup.procs";
  }
  // The scope's processes other than the keeper; nullopt when the cgroup is gone.
  std::optional<std::vector<pid_t>> job_processes() const {
    auto pids = read_procs(procs_file());
    if (!pids) return std::nullopt;
    std::erase(*pids, keeper_.pid());
    return pids;
  }
  std::optional<MemoryReport> read_memory_files() const {
    std::string dir = memory_dir();
    if (mode_ == CgroupMode::kLegacy) {
      systemd::V1MemoryFiles f{read_small(dir + "/memory.max_usage_in_bytes"),
                               read_small(dir + "/memory.failcnt"),
                               read_small(dir + "/memory.oom_control")};
      if (!f.max_usage_in_bytes && !f.oom_control) return std::nullopt;
      return systemd::memory_report_v1(f);
    }
    systemd::V2MemoryFiles f{read_small(dir + "/memory.peak"), read_small(dir + "/memory.events"),
                             read_small(dir + "/memory.swap.current")};
    if (!f.events) return std::nullopt;
    return systemd::memory_report_v2(f);
  }
  bool wait_until_empty() const {
    int64_t deadline = monotonic_ms() + kConfirmTimeoutMs;
    for (;;) {
      auto pids = read_procs(procs_file());
      if (!pids || pids->empty()) return true;
      if (monotonic_ms() >= deadline) return false;
      sleep_ms(kPollMs);
    }
  }
  static void record(StopReport& report, const std::string& action, const Status& status) {
    report.actions.push_back(status.ok() ? action : action + ": " + status.error().message());
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
  CgroupMode mode = detect_mode(target.cgroupfs_root);
  probe.available = true;
  if (mode == CgroupMode::kUnified) {
    auto controllers = read_small(target.cgroupfs_root + "/cgroup.controllers").value_or("");
    bool memory = controllers.find("memory") != std::string::npos;
    probe.memory_max = probe.memory_high = probe.swap_max = memory;
    probe.pids_max = controllers.find("pids") != std::string::npos;
  } else {
    probe.memory_max = read_small(target.cgroupfs_root + "/memory/memory.limit_in_bytes") ||
                       read_small(target.cgroupfs_root + "/memory/cgroup.procs");
    probe.pids_max = read_small(target.cgroupfs_root + "/pids/cgroup.procs").has_value();
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

}  // namespace sealrun::resgroup
