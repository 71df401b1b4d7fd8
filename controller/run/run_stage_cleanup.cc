// SPDX-License-Identifier: Apache-2.0
// Stage 9 of the run (run_stages.h): always runs, whatever stage failed. Stops the census and the
// job, confirms the stop, reads the final memory figures, removes the group and what the mechanism
// made, and releases what the run holds. The grant record is forgotten only once everything it
// names is confirmed gone; otherwise it stays for `sealrun sweep`.
#include <fmt/format.h>

#include "controller/run/limits_hit.h"
#include "controller/run/run_dirs.h"
#include "controller/run/run_handover.h"
#include "controller/run/run_owned_space.h"
#include "controller/run/run_result_space.h"
#include "controller/run/run_stages.h"
#include "controller/run/view_recheck.h"
#include "core/exit_codes.h"
#include "core/stage_trace.h"

namespace sealrun::run {

namespace {

void stop_census(RunContext& run) {
  if (!run.census) return;
  run.census->stop();
  run.receipt.samples = run.census->samples();
  run.receipt.samples_dropped = run.census->dropped();
  if (auto trip = run.census->trip()) {
    run.receipt.guard = receipt::GuardRecord{trip->name, trip->limit, trip->observed, trip->t_ms};
    run.record_failure({kExitGuardTripped, "growth guard tripped: " + trip->describe()});
  }
  // A census that could not measure (ACCEPTANCE 32): in enforcing mode its guards did not hold,
  // which stops the run like a trip; report-only mode records it and goes on.
  if (auto failure = run.census->census_failure()) {
    if (run.grant && run.grant->mode == GrantMode::kEnforcing) {
      if (!run.receipt.guard)
        run.receipt.guard =
            receipt::GuardRecord{failure->name, failure->limit, failure->observed, failure->t_ms};
      run.record_failure(
          {kExitGuardTripped, "the growth census could not measure, so its guards do not hold: " +
                                  failure->describe()});
    } else {
      run.warn("the growth census could not measure (report-only mode: recorded, not stopped): " +
               failure->describe());
    }
  }
}

// The job's processes and group: stopped, confirmed empty, the memory figures read, removed.
void stop_job_and_group(RunContext& run) {
  bool spawned = run.job != nullptr;
  run.receipt.stop_confirmed = !spawned;
  run.stop.exclusive([&] {
    int64_t grace = run.stop_grace_ms();
    if (run.job && !run.job_exit) run.cleanup_action("stop the job", run.job->stop(grace));
    if (run.group) {
      auto stop = run.group->stop(grace);
      if (stop) {
        run.receipt.stop_confirmed = stop->confirmed;
        std::string actions;
        for (const auto& a : stop->actions) actions += (actions.empty() ? "" : "; ") + a;
        run.cleanup_action(
            "stop the resource group",
            stop->confirmed ? ok_status() : Status(Error::make("not confirmed empty: " + actions)),
            actions);
      } else {
        run.cleanup_action("stop the resource group", Status(stop.error()));
      }
      if (auto mem = run.group->memory_report(); mem && run.receipt.memory) {
        auto& m = *run.receipt.memory;
        m.peak_bytes = mem->peak_bytes;
        m.events_high = mem->events_high;
        m.events_max = mem->events_max;
        m.events_oom = mem->events_oom;
        m.events_oom_kill = mem->events_oom_kill;
        m.swap_used_bytes = mem->swap_used_bytes;
        run.pids_refused = mem->events_pids_max;
        // The kernel killed part of the job for memory although the job said it succeeded (a
        // build tool that ignores a dead child): that is not a build to vouch for.
        if (mem->events_oom_kill > 0 && run.exit_code() == kExitOk && run.job_exit)
          run.record_failure(
              {kExitJobFailed,
               fmt::format("the job exited 0, but {} process(es) in its group were OOM-killed at "
                           "its memory limit: the build is incomplete",
                           mem->events_oom_kill)});
      }
      run.cleanup_action("remove the resource group", run.group->remove());
    } else if (spawned) {
      // Without a group only the outermost process can be confirmed gone; the mechanism's pid
      // namespace (bwrap --die-with-parent / podman's) takes the rest with it.
      run.receipt.stop_confirmed = run.job_exit.has_value();
    }
  });
}

void clean_mechanism(RunContext& run) {
  if (!run.job) return;
  auto actions = run.job->cleanup();
  // The mechanism's own words (with pids and container ids) are details; the action label stays
  // stable so that `receipt diff` of two runs of the same thing shows no difference.
  if (actions)
    for (const auto& a : *actions)
      run.receipt.cleanup.push_back({run.grant->mechanism + " cleanup", true, a});
  else
    run.cleanup_action("remove what the mechanism created", Status(actions.error()));
}

}  // namespace

void stage_cleanup(RunContext& run) {
  run.stop.disarm();
  stop_census(run);
  trace::mark("cleanup.stop_job_and_group");
  stop_job_and_group(run);
  trace::mark("cleanup.mechanism");
  clean_mechanism(run);
  record_limits_hit(run);
  trace::mark("cleanup.result_and_owned_space");
  remove_result_and_owned_space(run);  // at once (run_result_space.h)
  // Before the image root's lock or anything else the check reads is let go.
  trace::mark("cleanup.view_recheck_joined");
  finish_view_recheck(run);
  trace::mark("cleanup.hand_over");
  hand_over_outputs(run);
  trace::mark("cleanup.roots_and_temps");
  if (run.owned_claimed && !run.owned_fs)
    run.cleanup_action("remove the owned root",
                       remove_owned_root(*run.state, run.layout, run.req.id),
                       run.layout.owned_root);
  if (!run.export_dir.empty())
    run.cleanup_action("remove the source export", remove_export_dir(*run.state, run.export_dir),
                       run.export_dir);
  if (!run.temp_dir.empty())
    run.cleanup_action("remove the controller's temporaries",
                       remove_temp_dir(*run.state, run.temp_dir), run.temp_dir);
  bool all_ok = true;
  for (const auto& c : run.receipt.cleanup) all_ok = all_ok && c.ok;
  bool confirmed = run.job == nullptr || run.receipt.stop_confirmed;
  trace::mark("cleanup.journal");
  if (run.journal.recorded()) {
    if (all_ok && confirmed) {
      // The run's own uid goes back first: a record left by a failed release keeps it for sweep.
      Status given_back = ok_status();
      if (run.job_ids) {
        given_back = give_back_job_ids(run);
        run.cleanup_action("give the run's uid back", given_back);
      }
      if (given_back) run.cleanup_action("forget the grant record", run.journal.forget());
    } else
      run.warn("the grant record stays for `sealrun sweep`: not everything it names is gone");
  }
  if (!confirmed)
    run.record_failure({kExitStopUnconfirmed, "the job's stop could not be confirmed"});
  for (const auto& c : run.receipt.cleanup)
    if (!c.ok)
      run.record_failure({kExitStopUnconfirmed, "cleanup failed: " + c.action + ": " + c.detail});
}

}  // namespace sealrun::run
