// Stages 6–8 of the run (run_stages.h): the census, the contained job, and what follows it.
#include <fcntl.h>
#include <fmt/format.h>

#include "controller/exit_codes.h"
#include "controller/run_outputs.h"
#include "controller/run_stages.h"
#include "core/proc.h"
#include "core/syscall.h"
#include "fingerprint/tree.h"

namespace sealrun::run {

namespace {

void stop_job_now(RunContext& run) {
  if (run.group)
    (void)run.group->stop(run.stop_grace_ms());
  else if (run.job)
    (void)run.job->stop(run.stop_grace_ms());
}

}  // namespace

StageStatus stage_prepare_census(RunContext& run) {
  auto config = census_config(run.doc().limits, run.layout);
  // Outputs written into a writable source are the run's results: guard their growth there.
  if (run.doc().mounts.outputs_from == admission::OutputsFrom::kSource)
    config.result_root = run.admitted->source_root();
  run.census = std::make_unique<census::CensusThread>(
      std::move(config), [&run](const census::GuardTrip& trip) {
        run.stop.request({"growth guard tripped: " + trip.describe(), kExitGuardTripped});
      });
  return stage_ok();
}

StageStatus stage_run_job(RunContext& run) {
  const std::string& logs = run.layout.logs_dir;
  auto out = open_at(AT_FDCWD, logs + "/job.stdout", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
  auto err = open_at(AT_FDCWD, logs + "/job.stderr", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
  if (!out || !err)
    return stage_fail(kExitContainmentUnavailable, "cannot create the job's log files in " + logs);
  receipt::CommandRecord cmd;
  cmd.label = "job";
  cmd.argv = run.doc().command.argv;
  cmd.started = utc_timestamp_now();
  auto job = run.chosen->spawn(*run.grant, run.group.get(), JobIo{-1, out->get(), err->get()});
  if (!job)
    return stage_fail(kExitContainmentUnavailable,
                      "the contained job could not be started: " + job.error().message());
  run.job = std::move(*job);
  out->reset();
  err->reset();
  // Now sweep can also find the job's outermost process; its starttime with the pid names it, so
  // a recycled pid is never mistaken for the job.
  run.journal.update(
      [&](GrantRecord& r) {
        r.job_pid = run.job->pid();
        if (auto start = process_starttime(run.job->pid()); start) r.job_start = *start;
      },
      run.warnings);

  if (auto st = run.census->start(); !st)
    run.stop.request(
        {"the growth census could not start, so guards were unenforced: " + st.error().message(),
         kExitJobFailed});
  run.stop.arm([&run] { stop_job_now(run); });

  auto exit = run.job->wait();
  cmd.finished = utc_timestamp_now();
  StageStatus status;
  if (exit) {
    run.job_exit = *exit;
    if (exit->status.code >= 0) cmd.exit = exit->status.code;
    cmd.signal = exit->status.signal;
    cmd.timed_out = exit->timed_out;
  } else {
    status = stage_fail(kExitJobFailed, "waiting for the job failed: " + exit.error().message());
  }
  if (auto s = summarise_stream(logs + "/job.stdout"); s) cmd.stdout_record = *s;
  if (auto s = summarise_stream(logs + "/job.stderr"); s) cmd.stderr_record = *s;
  run.receipt.commands.push_back(cmd);
  return status;
}

StageStatus stage_post_run(RunContext& run) {
  const auto& doc = run.doc();
  // A stop that was asked for (guard, signal, deadline) explains the job's end better than the
  // signal the job died of; an OOM kill in the job's group better than "signal 9". So they are
  // recorded first, and the first reason of the most serious code is the one a person reads.
  if (auto why = run.stop.requested()) run.record_failure({why->exit_code, why->reason});
  if (run.job_exit && !run.job_exit->status.success()) {
    std::optional<resgroup::MemoryReport> memory;
    if (run.group)
      if (auto m = run.group->memory_report(); m) memory = *m;
    if (memory && memory->events_oom_kill > 0) {
      run.record_failure(
          {kExitJobFailed,
           fmt::format("out of memory: the job was OOM-killed at its memory limit "
                       "(memory_max_bytes {}; {} OOM kill(s))",
                       doc.limits.memory_max_bytes, memory->events_oom_kill)});
    } else {
      run.record_failure(
          {kExitJobFailed,
           run.job_exit->timed_out
               ? fmt::format("the job ran past its wall-clock limit of {} s and was stopped",
                             doc.limits.wall_clock_s)
               : "the job ended with " + run.job_exit->status.describe()});
    }
  }

  // The toolchain must be exactly what was admitted, after the job as before it.
  auto after = tree_digest(doc.toolchain.root);
  std::string observed = after ? after->sha256 : after.error().message();
  bool same = after && after->sha256 == doc.toolchain.tree_sha256;
  run.receipt.verifications.push_back(
      {"toolchain.tree_sha256 (after the run)", doc.toolchain.tree_sha256, observed, same});
  if (!same) run.record_failure({kExitJobFailed, "the toolchain changed during the run"});

  // With outputs_from "source", what the job changed in its copy of the source joins /out first.
  if (doc.mounts.outputs_from == admission::OutputsFrom::kSource)
    if (auto moved = move_changed_files(run.admitted->source_root(), doc.source.manifest,
                                        run.layout.output_dir);
        !moved)
      run.record_failure({kExitJobFailed, "the outputs in the source could not be collected: " +
                                              moved.error().message()});
  auto outputs = collect_outputs(run.layout.output_dir);
  if (outputs) {
    run.receipt.outputs = outputs->outputs;
    for (const auto& ignored : outputs->ignored)
      run.receipt.cleanup.push_back({"ignore output " + ignored, true, ""});
  } else {
    run.record_failure(
        {kExitJobFailed, "the outputs could not be collected: " + outputs.error().message()});
  }
  // Logs are kept beside the receipt, within what is left of the result allowance.
  uint64_t used = outputs ? outputs->total_bytes : 0;
  uint64_t allowance = doc.limits.result_max_bytes > used ? doc.limits.result_max_bytes - used : 0;
  uint64_t per_log = std::min<uint64_t>(allowance / 2, 16ULL << 20);
  std::string kept_dir = run.layout.results_root + "/logs";
  if (make_dir_at(AT_FDCWD, kept_dir, 0755)) {
    for (const char* name : {"job.stdout", "job.stderr"}) {
      auto kept = keep_log_tail(run.layout.logs_dir + "/" + name, kept_dir + "/" + name, per_log);
      run.cleanup_action(fmt::format("keep log {}", name),
                         kept.ok() ? ok_status() : Status(kept.error()),
                         kept ? fmt::format("{} bytes kept", *kept) : "");
    }
  }
  return stage_ok();
}

}  // namespace sealrun::run
