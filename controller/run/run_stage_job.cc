// SPDX-License-Identifier: Apache-2.0
// Stages 6 and 7 of the run (run_stages.h): the census and the contained job. What follows the
// job (stage 8) is run_stage_post.cc.
#include <fcntl.h>
#include <fmt/format.h>

#include "census/memory_usage.h"
#include "controller/run/live_job_log.h"
#include "controller/run/run_closure_bound.h"
#include "controller/run/run_outputs.h"
#include "controller/run/run_owned_space.h"
#include "controller/run/run_progress.h"
#include "controller/run/run_result_space.h"
#include "controller/run/run_stages.h"
#include "core/exit_codes.h"
#include "core/proc.h"
#include "core/stage_trace.h"
#include "core/syscall.h"

namespace sealrun::run {

namespace {

void stop_job_now(RunContext& run) {
  if (run.group)
    (void)run.group->stop(run.stop_grace_ms());
  else if (run.job)
    (void)run.job->stop(run.stop_grace_ms());
}

// The job's output shown as it arrives, read through descriptors of its own opened now, before the
// job can write (live_output.h). Not shown is a warning, never a reason to stop the run.
std::unique_ptr<LiveOutput> open_live_output(RunContext& run, int logs_fd) {
  LiveOutputConfig config;
  config.out_fd = run.req.live_output_fd;
  config.max_bytes = kLogReadMaxBytes;
  config.kept_where = run.layout.results_root + "/logs/";
  // Without a terminal the job's wall time is said when it has been silent (run_progress.h).
  if (progress_style() == ProgressStyle::kPlain) config.heartbeat_ms = kPlainProgressIntervalMs;
  if (run.req.learning && !run.req.learning->host_trees.empty())
    config.heartbeat_what = "learning job";
  auto live = std::make_unique<LiveOutput>(std::move(config));
  for (const char* name : {"job.stdout", "job.stderr"})
    if (auto st = live->add_stream(logs_fd, name); !st) {
      run.warn("the job's output is not shown as it arrives: " + st.error().message());
      return nullptr;
    }
  return live;
}

// What runs once the mechanism has set up the sandbox, before the command's first instruction:
// the learning run's hook, and the check that each closure file bound is the one hashed
// (run_closure_bound.h), whose outcome lands in `bound`. A mechanism without such a moment
// (Mechanism::has_sandbox_ready_hook: podman) gets neither.
std::function<Status(pid_t)> sandbox_ready_hook(RunContext& run, std::optional<Status>& bound) {
  std::function<Status(pid_t)> learning;
  if (run.req.learning) learning = run.req.learning->on_sandbox_ready;
  const bool check = !run.closure_identities.empty() && run.chosen->has_sandbox_ready_hook();
  if (!check) return learning;
  return [&run, &bound, learning](pid_t pid) -> Status {
    bound = check_closure_bound(pid, run.closure_identities);
    if (!*bound) return bound->error();
    return learning ? learning(pid) : ok_status();
  };
}

}  // namespace

StageStatus stage_prepare_census(RunContext& run) {
  const auto& limits = run.doc().limits;
  const bool enforcing = run.grant && run.grant->mode == GrantMode::kEnforcing;
  auto config = census_config(limits, job_layout(run), run.owned_fs ? &*run.owned_fs : nullptr,
                              owned_max_inodes(limits));
  // Outputs written into a writable source are the run's results: guard their growth there.
  guard_result_space(run, config);
  // The group's memory in use at each sample, for the receipt's timeline (census/memory_usage.h).
  if (run.group)
    config.memory_usage =
        census::counter_reader([group = run.group.get()] { return group->open_memory_usage(); });
  run.census = std::make_unique<census::CensusThread>(
      std::move(config), [&run, enforcing](const census::GuardTrip& trip) {
        // A census that cannot measure is not a zero: its guards do not hold, so in enforcing
        // mode the job stops as if one had tripped (ACCEPTANCE 32); report-only mode records it.
        if (trip.census_failed() && !enforcing) return;
        run.stop.request({trip.census_failed()
                              ? "the growth census could not measure, so its guards do not hold: " +
                                    trip.describe()
                              : "growth guard tripped: " + trip.describe(),
                          kExitGuardTripped});
      });
  return stage_ok();
}

StageStatus stage_run_job(RunContext& run) {
  const std::string& logs = run.layout.logs_dir;
  auto logs_fd = run.state->open(logs, O_RDONLY | O_DIRECTORY);  // never through a link
  auto out = logs_fd ? open_at(logs_fd->get(), "job.stdout",
                               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600)
                     : Result<UniqueFd>(logs_fd.error());
  auto err = logs_fd ? open_at(logs_fd->get(), "job.stderr",
                               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600)
                     : Result<UniqueFd>(logs_fd.error());
  if (!out || !err)
    return stage_fail(kExitContainmentUnavailable, "cannot create the job's log files in " + logs);
  std::unique_ptr<LiveOutput> live;  // stopped (after a last read) by the end of this stage
  if (run.req.live_output_fd >= 0) live = open_live_output(run, logs_fd->get());
  receipt::CommandRecord cmd;
  cmd.label = "job";
  cmd.argv = run.doc().command.argv;
  cmd.started = utc_timestamp_now();
  JobIo io{-1, out->get(), err->get(), {}};
  std::optional<Status> bound;  // the closure as bound, when it was looked at
  io.on_sandbox_ready = sandbox_ready_hook(run, bound);
  if (run.req.learning) io.traced_syscalls = run.req.learning->traced_syscalls;
  trace::mark("job.spawn");
  auto job = run.chosen->spawn(*run.grant, run.group.get(), io);
  trace::mark("job.spawned");
  if (bound) {
    const std::string expected =
        fmt::format("{} file(s), each the file hashed", run.closure_identities.size());
    run.receipt.verifications.push_back({"host_files (as bound in the job)", expected,
                                         *bound ? expected : bound->error().message(),
                                         bound->ok()});
    if (!*bound)
      return stage_fail(
          kExitAdmissionRefused,
          "admission refused: host_files (as bound in the job): " + bound->error().message());
  }
  if (!job)
    return stage_fail(kExitContainmentUnavailable,
                      "the contained job could not be started: " + job.error().message());
  run.job = std::move(*job);
  if (live)
    if (auto st = live->start(); !st) run.warn(st.error().message());
  out->reset();
  err->reset();
  // Now sweep can also find the job's outermost process; its starttime with the pid names it, so
  // a recycled pid is never mistaken for the job. Not fsync'd (the live record): a process does not
  // outlive a reboot, and until then the renamed record is what sweep reads.
  if (auto st = run.journal.update(
          [&](GrantRecord& r) {
            r.job_pid = run.job->pid();
            if (auto start = process_starttime(run.job->pid()); start) r.job_start = *start;
          },
          RecordDurability::kUntilReboot);
      !st)
    run.warn("grant journal: " + st.error().message());

  trace::mark("job.census_start");
  if (auto st = run.census->start(); !st)
    run.stop.request(
        {"the growth census could not start, so guards were unenforced: " + st.error().message(),
         kExitJobFailed});
  run.stop.arm([&run] { stop_job_now(run); });

  trace::mark("job.wait");
  auto exit = run.job->wait();
  trace::mark("job.exited");
  if (run.req.learning && run.req.learning->on_job_end) run.req.learning->on_job_end();
  cmd.finished = utc_timestamp_now();
  if (live) live->stop();
  StageStatus status;
  if (exit) {
    run.job_exit = *exit;
    if (exit->status.code >= 0) cmd.exit = exit->status.code;
    cmd.signal = exit->status.signal;
    cmd.timed_out = exit->timed_out;
  } else {
    status = stage_fail(kExitJobFailed, "waiting for the job failed: " + exit.error().message());
  }
  if (auto s = summarise_stream(logs_fd->get(), "job.stdout"); s) cmd.stdout_record = *s;
  if (auto s = summarise_stream(logs_fd->get(), "job.stderr"); s) cmd.stderr_record = *s;
  run.receipt.commands.push_back(cmd);
  return status;
}

}  // namespace sealrun::run
