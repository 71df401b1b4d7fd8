// SPDX-License-Identifier: Apache-2.0
// See systemd_scope_ops.h: confirmed stops and removal of a scope, by name.
#include "containment/resgroup/systemd_scope_ops.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

#include "core/syscall.h"

namespace sealrun::resgroup::systemd {
namespace {

constexpr const char* kUnitInterface = "org.freedesktop.systemd1.Unit";
constexpr int64_t kJobTimeoutMs = 30000;
constexpr int64_t kConfirmTimeoutMs = 10000;
constexpr int64_t kPollMs = 20;

void sleep_ms(int64_t ms) { usleep(static_cast<useconds_t>(ms * 1000)); }

void record(StopReport& report, const std::string& action, const Status& status) {
  report.actions.push_back(status.ok() ? action : action + ": " + status.error().message());
}

std::optional<std::vector<pid_t>> job_processes(const std::string& procs_file, pid_t keeper) {
  auto pids = read_cgroup_procs(procs_file);
  if (pids) std::erase(*pids, keeper);
  return pids;
}

}  // namespace

std::optional<std::string> read_cgroup_text(const std::string& path) {
  auto fd = open_at(AT_FDCWD, path, O_RDONLY | O_NOFOLLOW);
  if (!fd.ok()) return std::nullopt;
  auto text = read_up_to(fd->get(), 64 * 1024, path);
  if (!text.ok()) return std::nullopt;
  return std::move(text).value();
}

std::optional<std::vector<pid_t>> read_cgroup_procs(const std::string& path) {
  auto text = read_cgroup_text(path);
  if (!text) return std::nullopt;
  std::vector<pid_t> pids;
  std::string_view rest = *text;
  while (!rest.empty()) {
    size_t eol = std::min(rest.find('\n'), rest.size());
    pid_t pid = 0;
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + eol, pid);
    if (ec == std::errc() && p == rest.data() + eol && pid > 0) pids.push_back(pid);
    rest.remove_prefix(std::min(eol + 1, rest.size()));
  }
  return pids;
}

std::string scope_procs_file(CgroupMode mode, const std::string& cgroupfs_root,
                             const std::string& control_group) {
  return mode == CgroupMode::kLegacy ? cgroupfs_root + "/systemd" + control_group + "/cgroup.procs"
                                     : cgroupfs_root + control_group + "/cgroup.procs";
}

CgroupMode detect_cgroup_mode(const std::string& cgroupfs_root) {
  struct statfs fs {};
  if (statfs(cgroupfs_root.c_str(), &fs) == 0 &&
      static_cast<unsigned long>(fs.f_type) == CGROUP2_SUPER_MAGIC) {
    return CgroupMode::kUnified;
  }
  return CgroupMode::kLegacy;
}

StopReport stop_scope(SystemdManagerClient& client, const std::string& unit,
                      const std::string& procs_file, int64_t grace_ms,
                      const ScopeStopHooks& hooks) {
  StopReport report;
  auto before = job_processes(procs_file, hooks.keeper);
  report.processes_signalled = before ? before->size() : 0;
  if (before && !before->empty()) {
    record(report, fmt::format("TERM {} processes", before->size()),
           client.kill_unit(unit, "all", SIGTERM));
    int64_t deadline = monotonic_ms() + grace_ms;
    for (;;) {
      auto left = job_processes(procs_file, hooks.keeper);
      if (!left || left->empty()) break;
      if (monotonic_ms() >= deadline) {
        report.actions.push_back(
            fmt::format("{} processes outlived the {} ms grace", left->size(), grace_ms));
        break;
      }
      sleep_ms(kPollMs);
    }
  } else {
    report.actions.push_back("no job process left to TERM");
  }
  if (hooks.before_kill) hooks.before_kill();
  auto path = client.unit_path(unit);
  if (path.ok() && path->has_value()) {
    record(report, "KILL the scope", client.kill_unit(unit, "all", SIGKILL));
  }
  if (hooks.after_kill) hooks.after_kill();
  path = client.unit_path(unit);
  if (path.ok() && path->has_value()) {
    auto job = client.stop_unit(unit, kJobTimeoutMs);
    report.actions.push_back(job.ok() ? fmt::format("StopUnit: {}", *job)
                                      : "StopUnit: " + job.error().message());
  }
  // Confirmed = the kernel lists no process in the scope's group and the manager no longer has
  // the unit active (unloaded, inactive or failed).
  int64_t deadline = monotonic_ms() + kConfirmTimeoutMs;
  for (;;) {
    auto pids = read_cgroup_procs(procs_file);
    bool empty = !pids || pids->empty();
    std::string state = "unloaded";
    if (auto loaded = client.unit_path(unit); !loaded.ok()) {
      state = "unknown (" + loaded.error().message() + ")";
    } else if (loaded->has_value()) {
      auto s = client.get_string(**loaded, kUnitInterface, "ActiveState");
      state = s.ok() ? *s : "unloaded";  // it may go between the two calls
    }
    bool ended = state == "unloaded" || state == "inactive" || state == "failed";
    if (empty && ended) {
      report.confirmed = true;
      report.actions.push_back(
          fmt::format("empty: no process left in {}; unit {}", procs_file, state));
      break;
    }
    if (monotonic_ms() >= deadline) {
      report.actions.push_back(fmt::format("NOT confirmed: {} processes remain in {}; unit {}",
                                           pids ? pids->size() : 0, procs_file, state));
      break;
    }
    sleep_ms(kPollMs);
  }
  return report;
}

Status wait_scope_gone(SystemdManagerClient& client, const std::string& unit,
                       const std::string& procs_file) {
  int64_t deadline = monotonic_ms() + kConfirmTimeoutMs;
  for (;;) {
    auto path = SEALRUN_TRY_CTX(client.unit_path(unit), "remove " + unit);
    bool cgroup_gone = !read_cgroup_text(procs_file).has_value();
    if (!path && cgroup_gone) return ok_status();
    std::string state = "unloaded";
    if (path) {
      auto s = client.get_string(*path, kUnitInterface, "ActiveState");
      state = s.ok() ? *s : "state unknown";
      // A failed unit stays loaded until reset (CollectMode normally spares us this).
      if (state == "failed") (void)client.reset_failed_unit(unit);
    }
    if (monotonic_ms() >= deadline) {
      return Error::make(fmt::format("remove {}: not gone after {} ms (unit {}, cgroup {})", unit,
                                     kConfirmTimeoutMs, state,
                                     cgroup_gone ? "removed" : "still present"));
    }
    sleep_ms(kPollMs);
  }
}

}  // namespace sealrun::resgroup::systemd
