// SPDX-License-Identifier: Apache-2.0
// `sealrun sweep [--state-dir DIR] [--json] [--images] [--state-only]`: finds what killed
// controllers left — grant records, resource groups, job processes, what each mechanism left
// (through its own sweep), verified source exports, the temporaries of dead controllers and what
// mechanisms kept there (a probe's storage and pause process), stray short links — and removes it,
// reporting each action. With --images it also removes the unpacked image roots no run holds
// (image_sweep.h). With --state-only it leaves alone what no record or temporary of this state
// directory names (stray resource groups: they may be another state directory's). A state
// directory anyone but root (or the caller) could write is refused (exit 2): sweep would act on
// records such a user could forge.
// A record whose controller is still alive (same pid and starttime) is never touched. A record that
// cannot be read is reported and kept (it may name something that still runs). Exit 0 when nothing
// is left behind, 7 when something sealrun owns could not be removed.
#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "containment/grant_journal.h"
#include "containment/ownedfs/ownedfs.h"
#include "containment/ownedfs/private_ns.h"
#include "containment/resgroup/cgroupfs_sweep.h"
#include "containment/sweep_run.h"
#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "controller/common/host_config.h"
#include "controller/run/image_sweep.h"
#include "controller/run/run_dirs.h"
#include "controller/run/run_fileordering.h"
#include "controller/run/run_handover.h"
#include "controller/run/run_result_space.h"
#include "controller/run/sweep_outputs.h"
#include "core/exit_codes.h"

namespace sealrun::cli {
namespace {

struct SweepOptions {
  std::string state_dir = "./sealrun-state";
  bool json = false;
  int64_t grace_ms = 1000;
  bool images = false;
  bool state_only = false;  // leave what no record of this state directory names to others
};

SweepStep sweep_owned_root(const GrantRecord& r, const run::StateDir& state) {
  SweepStep s{"owned root " + r.owned_root, "", false};
  auto rel = state.below(r.owned_root);
  if (r.owned_root.empty() || !rel || !state.exists(*rel)) {
    s.outcome = "already gone";
    return s;
  }
  auto removed = run::remove_recorded_owned_root(state, r.owned_root, r.id);
  s.outcome = removed ? "removed (marker checked)" : "not removed: " + removed.error().message();
  s.left = !removed.ok();
  return s;
}

// The runs the grant journal names: each one's groups, processes, mechanism leftovers, owned root.
void sweep_records(const run::StateDir& state, const SweepOptions& opt,
                   const MechanismContext& context,
                   std::vector<std::pair<std::string, SweepStep>>& report, int& records_removed) {
  auto journal = GrantJournal::open_in(state.fd(), state.path());
  if (!journal) {
    report.push_back({"", {"grant journal", "unreadable: " + journal.error().message(), true}});
    return;
  }
  auto entries = journal->list();
  if (!entries) {
    report.push_back({"", {"grant journal", "unreadable: " + entries.error().message(), true}});
    return;
  }
  for (const auto& e : *entries) {
    if (e.temporary) {  // a write its controller never finished (killed mid-write)
      auto removed = journal->remove_dead_temporary(e.file.substr(e.file.rfind('/') + 1));
      if (removed && *removed) {
        report.push_back(
            {"",
             {"record " + e.file, "removed (an interrupted write; its writer is gone)", false}});
        continue;
      }
    }
    if (!e.readable) {
      report.push_back(
          {"", {"record " + e.file, e.problem + "; kept for a person to inspect", true}});
      continue;
    }
    const GrantRecord& r = e.record;
    if (controller_alive(r)) {
      report.push_back(
          {r.id,
           {"run " + r.id, fmt::format("controller pid {} is alive: not touched", r.controller_pid),
            false}});
      continue;
    }
    std::vector<SweepStep> steps;
    {
      // The run's owned file systems live on in its dead controller's mount namespace while a
      // process of the run does (containment/ownedfs/private_ns.h): swept from inside it.
      std::error_code ec;
      auto visit = ownedfs::visit_namespace_with_mount(
          std::filesystem::weakly_canonical(r.owned_root, ec).string());
      if (!visit)
        steps.push_back({"mount namespace of run " + r.id, visit.error().message(), false});
      else if (*visit)
        steps.push_back({"mount namespace of run " + r.id,
                         fmt::format("entered (kept by pid {})", (*visit)->pid()), false});
      for (auto& s : sweep_recorded_run(r, opt.grace_ms, context)) steps.push_back(std::move(s));
      // Its processes are stopped: the owned file system is no longer held, and the owned root is
      // a plain directory again once it is gone.
      for (auto& s : ownedfs::sweep_owned_fs_of_run(state.path(), r.id))
        steps.push_back(std::move(s));
      for (auto& s : run::sweep_result_space(state, r.id)) steps.push_back(std::move(s));
      for (auto& s : run::sweep_reordered_copies(r)) steps.push_back(std::move(s));
      steps.push_back(sweep_owned_root(r, state));
    }
    bool left = false;
    for (const auto& s : steps) left |= s.left;
    // A run killed before its job started gives its id back when it left nothing in results/.
    if (!left && r.job_pid == 0) steps.push_back(run::release_empty_results(state, r.id));
    if (!left && r.job_pid != 0) steps.push_back(run::remove_unreceipted_outputs(state, r.id));
    // The run's own uid: its outputs handed over, then given back (run_handover.h).
    if (!left)
      for (auto& s : run::sweep_job_ids(state, r, context.job_id_pool)) {
        left |= s.left;
        steps.push_back(std::move(s));
      }
    if (!left) {
      auto f = journal->forget(r.id);
      steps.push_back(
          {"record " + e.file, f ? "removed" : "remove failed: " + f.error().message(), !f.ok()});
      if (f) ++records_removed;
    } else {
      steps.push_back({"record " + e.file, "kept: something of this run is left", true});
    }
    for (auto& s : steps) report.push_back({r.id, std::move(s)});
  }
}

// What killed controllers left that no record names, first what runs: what the mechanisms started
// from the temporaries under tmp/ (a probe's storage and its pause process). Stopped before the
// records are swept, since such a process holds a copy of every mount of its time in its mount
// namespace, a run's owned file system included. Returns whether something was left.
bool stop_strays(const std::vector<StrayDir>& dead, const MechanismContext& context,
                 std::vector<std::pair<std::string, SweepStep>>& report) {
  bool left = false;
  for (auto& s : sweep_mechanism_strays(context, dead)) {
    left |= s.left;
    report.push_back({"", std::move(s)});
  }
  return left;
}

// Then the temporaries themselves (and stray links), unless something of a mechanism in them is
// left.
void remove_dead_temporaries(const run::StateDir* state, const std::vector<StrayDir>& dead,
                             bool left, std::vector<std::pair<std::string, SweepStep>>& report) {
  for (const StrayDir& d : dead) {
    Status st = left ? Status(Error::make("something of a mechanism in it is left (see above)"))
                     : run::remove_temp_dir(*state, d.path);
    report.push_back(
        {"",
         {"temporaries " + d.path,
          st ? "removed (their controller is gone)" : "not removed: " + st.error().message(),
          !st.ok()}});
  }
}

int run_sweep(const SweepOptions& opt) {
  std::vector<std::pair<std::string, SweepStep>> report;  // {run id or "", step}
  int records_removed = 0;
  MechanismContext context = mechanism_context();
  std::optional<run::StateDir> state;
  struct stat st {};
  if (::stat(opt.state_dir.c_str(), &st) != 0) {
    report.push_back(
        {"", {"grant journal " + opt.state_dir + "/grants", "no state directory", false}});
  } else {
    // Sweep removes what records name, as root: the records must be ones only root could write.
    auto opened = run::StateDir::open(opt.state_dir, false);
    if (!opened) {
      print_error("sweep", "--state-dir: " + opened.error().message());
      return kExitUsage;
    }
    state.emplace(std::move(*opened));
  }
  std::vector<StrayDir> dead = state ? run::dead_temp_dirs(*state) : std::vector<StrayDir>{};
  bool strays_left = stop_strays(dead, context, report);
  if (state) sweep_records(*state, opt, context, report, records_removed);
  // Resource groups no record names may be another state directory's (another CI on this host):
  // --state-only leaves them to that one's sweep.
  if (!opt.state_only)
    for (auto& s : resgroup::sweep_stray_groups(opt.grace_ms)) report.push_back({"", std::move(s)});
  if (state)
    for (auto& s : run::sweep_exports(*state)) report.push_back({"", std::move(s)});
  remove_dead_temporaries(state ? &*state : nullptr, dead, strays_left, report);
  // Owned file systems no grant record names (their run's record was lost).
  if (state)
    for (auto& s : ownedfs::sweep_owned_fs(opt.state_dir)) report.push_back({"", std::move(s)});
  if (state && opt.images)
    for (auto& s : run::sweep_images(*state)) report.push_back({"", std::move(s)});

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
  cmd->add_flag("--images", opt->images,
                "also remove the unpacked image roots (STATE/images/) no run is using; a later "
                "bwrap run unpacks its image again");
  cmd->add_flag("--state-only", opt->state_only,
                "touch only what this state directory's records and temporaries name: leave "
                "resource groups no record names (another state directory's) alone");
  cmd->add_option("--grace-ms", opt->grace_ms, "TERM-to-KILL grace per group, in milliseconds")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{60000}));
  cmd->callback([opt, exit_code] { *exit_code = run_sweep(*opt); });
}

}  // namespace sealrun::cli
