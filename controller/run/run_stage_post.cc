// SPDX-License-Identifier: Apache-2.0
// Stage 8 of the run (run_stages.h): after the job. Explains how the job ended, then records what
// it left — the outputs (walked and hashed by output_walk.h, listed in results/<id>/outputs.jsonl),
// the kept logs — and checks that what the view bound from the host (toolchain, trees, closure
// files) is unchanged.
//
// Everything here faces what a hostile job left behind, so all of it is bounded and
// interruptible: it runs under the run's outer deadline (limits.outer_s, counted from the run's
// start) and ends as soon as the StopSwitch holds a request (SIGTERM to the controller, a guard).
// Then the run is not built and `not_finished` says what was left undone. A run whose outputs
// cannot be recorded in full (too many, too deep, over the allowance, unreadable) is not built
// either: a receipt never says `built` over outputs it does not pin.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include "controller/receipt/output_walk.h"
#include "controller/run/run_outputs.h"
#include "controller/run/run_progress.h"
#include "controller/run/run_result_space.h"
#include "controller/run/run_stages.h"
#include "controller/run/source_outputs.h"
#include "controller/run/view_recheck.h"
#include "core/exit_codes.h"
#include "core/stage_trace.h"
#include "core/syscall.h"
#include "fingerprint/cached_tree.h"

namespace sealrun::run {

namespace {

// Why post-run work must stop now: a request on the StopSwitch, or the outer deadline.
StopCheck post_run_stop_check(RunContext& run) {
  const uint64_t outer_s = run.doc().limits.outer_s;
  const int64_t deadline = run.started_ms + static_cast<int64_t>(outer_s) * 1000;
  return [&run, deadline, outer_s]() -> std::optional<std::string> {
    if (auto why = run.stop.requested()) return why->reason;
    if (monotonic_ms() >= deadline)
      return fmt::format("the run's outer time limit (limits.outer_s = {} s) passed", outer_s);
    return std::nullopt;
  };
}

// The exit code an interruption means: the stop's own (5 for a signal, 6 for a guard), else 5.
int interruption_code(RunContext& run) {
  auto why = run.stop.requested();
  return why ? why->exit_code : kExitJobFailed;
}

void not_finished(RunContext& run, int code, const std::string& what, const std::string& why) {
  run.receipt.not_finished.push_back(what + ": " + why);
  run.record_failure({code, fmt::format("post-run work was not finished ({}): {}", what, why)});
}

// How the job ended, in the words a person needs: a stop that was asked for (guard, signal,
// deadline) explains it better than the signal the job died of, an OOM kill in the job's group
// better than "signal 9"; so they are recorded first.
void explain_job_end(RunContext& run) {
  const auto& doc = run.doc();
  if (auto why = run.stop.requested()) run.record_failure({why->exit_code, why->reason});
  if (!run.job_exit || run.job_exit->status.success()) return;
  std::optional<resgroup::MemoryReport> memory;
  if (run.group)
    if (auto m = run.group->memory_report(); m) memory = *m;
  if (memory && memory->events_oom_kill > 0) {
    run.record_failure(
        {kExitJobFailed, fmt::format("out of memory: the job was OOM-killed at its memory limit "
                                     "(memory_max_bytes {}; {} OOM kill(s))",
                                     doc.limits.memory_max_bytes, memory->events_oom_kill)});
  } else {
    run.record_failure(
        {kExitJobFailed, run.job_exit->timed_out
                             ? fmt::format("the job ran past its wall-clock limit of {} s and "
                                           "was stopped",
                                           doc.limits.wall_clock_s)
                             : "the job ended with " + run.job_exit->status.describe()});
  }
}

// The job's streams live in the owned space; one ftruncate(2) makes them any apparent size
// without a block allocated, which a census of allocated blocks never sees. Judged here by
// apparent size against limits.owned_max_bytes.
void check_log_sizes(RunContext& run) {
  uint64_t total = 0;
  std::string sizes;
  for (const char* name : {"job.stdout", "job.stderr"}) {
    auto st = lstat_at(AT_FDCWD, run.layout.logs_dir + "/" + name);
    if (!st) continue;
    uint64_t n = std::max<uint64_t>(static_cast<uint64_t>(st->st_size),
                                    static_cast<uint64_t>(st->st_blocks) * 512);
    total += n;
    sizes += fmt::format("{}{} {} bytes", sizes.empty() ? "" : ", ", name, n);
  }
  uint64_t limit = run.doc().limits.owned_max_bytes;
  if (total > limit)
    run.record_failure(
        {kExitJobFailed, fmt::format("the job's logs have an apparent size of {} bytes ({}), more "
                                     "than limits.owned_max_bytes ({} bytes); only their last {} "
                                     "bytes each were read",
                                     total, sizes, limit, kLogReadMaxBytes)});
}

// Walks /out (or, with outputs_from "source", the source copy: source_outputs.h), records every
// output (the receipt and outputs.jsonl); returns the bytes used.
uint64_t record_outputs(RunContext& run, const StopCheck& stop) {
  OutputLimits limits;
  limits.max_bytes = run.doc().limits.result_max_bytes;
  const bool from_source = run.doc().mounts.outputs_from == admission::OutputsFrom::kSource;
  TerminalProgress progress("outputs");  // redrawn, plain every 5 s, or none (run_progress.h)
  auto walk = walk_outputs(from_source ? run.admitted->source_root() : run.layout.output_dir,
                           limits, stop, progress.on_progress());
  if (!walk) {
    std::string why = walk.error().message();
    run.receipt.not_finished.push_back("outputs: not recorded: " + why);
    run.record_failure({kExitJobFailed, "the outputs could not be recorded: " + why});
    return 0;
  }
  if (walk->interrupted) {
    not_finished(run, interruption_code(run), "outputs not recorded", *walk->interrupted);
    return walk->bytes;
  }
  if (from_source) {
    keep_changed_source_files(*walk, run.doc().source.manifest);
    auto moved = move_source_outputs(*run.state, run.admitted->source_root(), run.layout.output_dir,
                                     *walk, stop);
    if (!moved) {
      run.receipt.not_finished.push_back("outputs: not recorded: " + moved.error().message());
      run.record_failure({kExitJobFailed, "the outputs could not be taken from the source: " +
                                              moved.error().message()});
      return walk->bytes;
    }
  }
  if (auto st = write_output_list(*run.state, run.layout.results_root, walk->outputs); !st) {
    run.receipt.not_finished.push_back("outputs: not recorded: " + st.error().message());
    run.record_failure(
        {kExitJobFailed, "the output list could not be written: " + st.error().message()});
    return walk->bytes;
  }
  run.receipt.outputs = std::move(walk->outputs);
  run.receipt.outputs_recorded = true;
  run.receipt.outputs_bytes = walk->bytes;
  return walk->bytes;
}

// The logs are kept beside the receipt, within what is left of the result allowance. Bounded
// (kLogReadMaxBytes each), so they are kept even after a stop: they are what explains it.
void keep_logs(RunContext& run, uint64_t used) {
  uint64_t max = run.doc().limits.result_max_bytes;
  uint64_t allowance = max > used ? max - used : 0;
  uint64_t per_log = std::min<uint64_t>(allowance / 2, kLogReadMaxBytes);
  std::string kept_dir = run.layout.results_root + "/logs";
  // Both directories are opened beneath the held state directory, never through a link.
  auto from = run.state->open(run.layout.logs_dir, O_RDONLY | O_DIRECTORY);
  auto to = run.state->make_dir(kept_dir, 0755)
                ? run.state->open(kept_dir, O_RDONLY | O_DIRECTORY)
                : Result<UniqueFd>(Error::make("cannot make " + kept_dir));
  // Logs that cannot be kept are post-run work not finished (the run is not `built`), not a
  // cleanup that could not be confirmed: nothing is left behind because of them. (Seen when the
  // owned space that held them was unmounted under the run.)
  if (!from || !to) {
    not_finished(run, interruption_code(run), "the job's logs not kept",
                 (from ? to.error() : from.error()).message());
    return;
  }
  for (const char* name : {"job.stdout", "job.stderr"}) {
    auto kept = keep_log_tail(from->get(), name, to->get(), name, per_log);
    if (kept)
      run.cleanup_action(fmt::format("keep log {}", name), ok_status(),
                         fmt::format("{} bytes kept", *kept));
    else
      not_finished(run, interruption_code(run), fmt::format("log {} not kept", name),
                   kept.error().message());
  }
}

}  // namespace

StageStatus stage_post_run(RunContext& run) {
  explain_job_end(run);
  StopCheck stop = post_run_stop_check(run);
  // The pinned view checked again on a thread of its own while the outputs are recorded and the
  // cleanup runs; the cleanup joins it and records what it found (view_recheck.h).
  trace::mark("post.recheck_view_started");
  if (auto why = stop())
    not_finished(run, interruption_code(run), "re-check of the pinned view not done", *why);
  else
    start_view_recheck(run);
  check_log_sizes(run);
  trace::mark("post.outputs");
  uint64_t used = take_result_space(run, stop) ? record_outputs(run, stop) : 0;
  trace::mark("post.keep_logs");
  keep_logs(run, used);
  return stage_ok();
}

}  // namespace sealrun::run
