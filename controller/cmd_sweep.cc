// `sealrun sweep [--state-dir DIR] [--json]`: finds what killed controllers left — grant records,
// resource groups, job processes, what each mechanism left (through its own sweep), verified
// source exports — and removes it, reporting each action.
// A record whose controller is still alive (same pid and starttime) is never touched. A record that
// cannot be read is reported and kept (it may name something that still runs). Exit 0 when nothing
// is left behind, 7 when something sealrun owns could not be removed.
#include <fmt/format.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "containment/grant_journal.h"
#include "containment/resgroup/cgroupfs_sweep.h"
#include "containment/sweep_run.h"
#include "controller/commands.h"
#include "controller/exit_codes.h"
#include "controller/host_config.h"
#include "controller/output.h"
#include "controller/run_dirs.h"

namespace sealrun::cli {
namespace {

struct SweepOptions {
  std::string state_dir = "./sealrun-state";
  bool json = false;
  int64_t grace_ms = 1000;
};

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
        std::vector<SweepStep> steps = sweep_recorded_run(r, opt.grace_ms, mechanism_context());
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
  for (auto& s : run::sweep_exports(opt.state_dir)) report.push_back({"", std::move(s)});

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
