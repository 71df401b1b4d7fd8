// `sealrun sweep [--state-dir DIR] [--json]`: finds what killed controllers left — grant records,
// resource groups, job processes, podman containers — and removes it, reporting each action.
// A record whose controller is still alive (same pid and starttime) is never touched. A record that
// cannot be read is reported and kept (it may name something that still runs). Exit 0 when nothing
// is left behind, 7 when something sealrun owns could not be removed.
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>

#include "containment/grant_journal.h"
#include "containment/job_user.h"
#include "containment/podman.h"
#include "containment/podman_argv.h"
#include "containment/resgroup/cgroupfs_sweep.h"
#include "containment/resgroup/systemd_scope.h"
#include "controller/commands.h"
#include "controller/exit_codes.h"
#include "controller/output.h"
#include "controller/run_dirs.h"
#include "core/process.h"

namespace sealrun::cli {
namespace {

using resgroup::SweepStep;

struct SweepOptions {
  std::string state_dir = "./sealrun-state";
  bool json = false;
  int64_t grace_ms = 1000;
};

uint64_t to_u64(std::string_view s) {
  uint64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

// Real uid of a process ("Uid:" in /proc/<pid>/status), or -1.
int64_t process_uid(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Uid:", 0) == 0)
      return static_cast<int64_t>(to_u64(line.substr(5, line.find('\t', 5) - 5)));
  return -1;
}

// The recorded job pid, if a process with that pid still runs and is the job: it has the recorded
// starttime (records of older controllers have none: then it must have started after the
// controller) and runs as the job user. Otherwise the pid was recycled and is not ours.
SweepStep sweep_job_pid(const GrantRecord& r) {
  SweepStep s{fmt::format("job pid {}", r.job_pid), "", false};
  UniqueFd pidfd(pidfd_open_raw(r.job_pid, 0));
  if (!pidfd) {
    s.outcome = "not running";
    return s;
  }
  auto start = resgroup::process_starttime("/proc", r.job_pid);
  bool same = start.ok() && (r.job_start.empty() ? to_u64(*start) >= to_u64(r.controller_start)
                                                 : *start == r.job_start);
  bool user_ok = true;
  if (!r.job_user.empty()) {
    auto u = lookup_job_user(r.job_user);
    user_ok = u.ok() && process_uid(r.job_pid) == static_cast<int64_t>(u->uid);
  }
  // The pidfd pins the process we just checked; if it already exited, there is nothing to do.
  if (pidfd_send_signal_raw(pidfd.get(), 0) != 0) {
    s.outcome = "not running";
    return s;
  }
  if (!same || !user_ok) {
    const char* why = !same ? (r.job_start.empty() ? "started before the controller"
                                                   : "started at another time than the job")
                            : "not the job user's";
    s.outcome = fmt::format("pid now belongs to another process ({}): not touched", why);
    return s;
  }
  pidfd_send_signal_raw(pidfd.get(), SIGKILL);
  struct pollfd p {
    pidfd.get(), POLLIN, 0
  };
  if (::poll(&p, 1, 5000) == 1) {
    s.outcome = "killed";
  } else {
    s.outcome = "SIGKILL sent but the process did not exit within 5 s";
    s.left = true;
  }
  return s;
}

SweepStep sweep_container(const GrantRecord& r) {
  SweepStep s{fmt::format("podman container {}", r.container_name), "", false};
  if (r.owned_root.empty()) {
    s.outcome = "refused: the record names no owned root to find its podman storage";
    s.left = true;
    return s;
  }
  auto layout = podman::storage_layout(r.owned_root);
  // Re-derived from the owned root; a record pointing podman elsewhere is refused.
  if (layout.graph_root != r.podman_root || r.container_name != podman::container_name(r.id)) {
    s.outcome = fmt::format("refused: recorded storage {} / name {} are not this run's ({} / {})",
                            r.podman_root, r.container_name, layout.graph_root,
                            podman::container_name(r.id));
    s.left = true;
    return s;
  }
  // The mechanism's own sweep: the container (podman rm -f), the rootless pause process, the
  // storage and its runroot link, each reported.
  auto actions = podman::sweep_podman_storage(r.owned_root, r.id);
  if (!actions) {
    s.outcome = "podman sweep failed: " + actions.error().message();
    s.left = true;
    return s;
  }
  for (const auto& a : *actions) s.outcome += (s.outcome.empty() ? "" : "; ") + a;
  if (s.outcome.empty()) s.outcome = "nothing of podman's was left";
  return s;
}

SweepStep sweep_owned_root(const GrantRecord& r, const std::string& state_dir) {
  SweepStep s{"owned root " + r.owned_root, "", false};
  struct stat st {};
  if (r.owned_root.empty() || ::lstat(r.owned_root.c_str(), &st) != 0) {
    s.outcome = "already gone";
    return s;
  }
  auto removed = run::remove_recorded_owned_root(state_dir, r.owned_root, r.id);
  s.outcome = removed ? "removed (marker checked)" : "not removed: " + removed.error().message();
  s.left = !removed.ok();
  return s;
}

std::vector<SweepStep> sweep_groups(const GrantRecord& r, int64_t grace_ms) {
  if (r.group_backend == resgroup::backend_name(resgroup::Backend::kSystemd)) {
    std::vector<SweepStep> steps;
    std::string want = "sealrun-" + r.id + ".scope";
    for (const auto& unit : r.group_locators) {
      if (unit != want) {
        steps.push_back({"systemd scope " + unit, "refused: not this run's scope " + want, true});
        continue;
      }
      auto s = resgroup::stop_leftover_scope(unit, grace_ms);
      if (!s)
        steps.push_back({"systemd scope " + unit, "stop failed: " + s.error().message(), true});
      else
        steps.push_back({"systemd scope " + unit,
                         s->confirmed
                             ? fmt::format("stopped {} processes, unloaded", s->processes_signalled)
                             : "stop NOT confirmed",
                         !s->confirmed});
    }
    return steps;
  }
  if (r.group_backend.empty() || r.group_backend == "none") return {};
  return resgroup::sweep_recorded_groups(r.group_backend, r.group_locators, r.id, r.controller_pid,
                                         r.controller_start, grace_ms);
}

int run_sweep(const SweepOptions& opt) {
  std::vector<std::pair<std::string, SweepStep>> report;  // {run id or "", step}
  int records_removed = 0;
  struct stat st {};
  if (::stat(opt.state_dir.c_str(), &st) != 0) {
    report.push_back(
        {"", {"grant journal " + opt.state_dir + "/grants", "no state directory", false}});
  } else {
    auto journal = GrantJournal::open(opt.state_dir);
    if (!journal) {
      report.push_back({"", {"grant journal", "unreadable: " + journal.error().message(), true}});
    } else if (auto entries = journal->list(); !entries) {
      report.push_back({"", {"grant journal", "unreadable: " + entries.error().message(), true}});
    } else {
      for (const auto& e : *entries) {
        if (!e.readable) {
          report.push_back(
              {"", {"record " + e.file, e.problem + "; kept for a person to inspect", true}});
          continue;
        }
        const GrantRecord& r = e.record;
        if (controller_alive(r)) {
          report.push_back(
              {r.id,
               {"run " + r.id,
                fmt::format("controller pid {} is alive: not touched", r.controller_pid), false}});
          continue;
        }
        std::vector<SweepStep> steps = sweep_groups(r, opt.grace_ms);
        if (r.job_pid > 0) steps.push_back(sweep_job_pid(r));
        if (!r.container_name.empty()) steps.push_back(sweep_container(r));
        steps.push_back(sweep_owned_root(r, opt.state_dir));
        bool left = false;
        for (const auto& s : steps) left |= s.left;
        if (!left) {
          auto f = journal->forget(r.id);
          steps.push_back({"record " + e.file,
                           f ? "removed" : "remove failed: " + f.error().message(), !f.ok()});
          if (f) ++records_removed;
        } else {
          steps.push_back({"record " + e.file, "kept: something of this run is left", true});
        }
        for (auto& s : steps) report.push_back({r.id, std::move(s)});
      }
    }
  }
  for (auto& s : resgroup::sweep_stray_groups(opt.grace_ms)) report.push_back({"", std::move(s)});

  int left = 0;
  for (const auto& [id, s] : report) left += s.left ? 1 : 0;
  if (opt.json) {
    nlohmann::json actions = nlohmann::json::array();
    for (const auto& [id, s] : report)
      actions.push_back({{"run", id}, {"what", s.what}, {"outcome", s.outcome}, {"left", s.left}});
    print_json({{"state_dir", opt.state_dir},
                {"actions", actions},
                {"records_removed", records_removed},
                {"left", left},
                {"clean", left == 0}});
  } else {
    for (const auto& [id, s] : report)
      fmt::print("{}{}: {}\n", id.empty() ? "" : "[" + id + "] ", s.what, s.outcome);
    fmt::print("{}\n", left == 0 ? "sweep: nothing left behind"
                                 : fmt::format("sweep: {} item(s) could not be removed", left));
  }
  if (left != 0)
    print_error("sweep", fmt::format("{} item(s) could not be removed (see above)", left));
  return left == 0 ? kExitOk : kExitStopUnconfirmed;
}

}  // namespace

void register_sweep(CLI::App& app, int* exit_code) {
  auto opt = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "find what a killed run left (resource groups, job processes, containers, grant "
      "records) and remove it, reporting each action");
  cmd->add_option("--state-dir", opt->state_dir, "state directory holding grants/")
      ->capture_default_str();
  cmd->add_flag("--json", opt->json, "print the actions as one JSON document");
  cmd->add_option("--grace-ms", opt->grace_ms, "TERM-to-KILL grace per group, in milliseconds")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{60000}));
  cmd->callback([opt, exit_code] { *exit_code = run_sweep(*opt); });
}

}  // namespace sealrun::cli
