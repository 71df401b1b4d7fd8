// SPDX-License-Identifier: Apache-2.0
// run_with_console(): see run_console.h.
#include "controller/run/run_console.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "controller/run/run_progress.h"
#include "core/bytes_text.h"
#include "core/syscall.h"

namespace sealrun::run {

namespace {

// After the live output, the job's end in a line or two (the verdict and the receipt's path are
// on stdout, the reason of a failure is said by the caller).
void print_run_summary(const std::string& command, const receipt::Receipt& r, int64_t elapsed_ms) {
  if (r.state == "not_run") return;
  std::string line = fmt::format("sealrun {}: {}: ", command, r.id);
  for (const auto& c : r.commands) {
    if (c.label != "job") continue;
    if (c.exit)
      line += fmt::format("the job exited {}", *c.exit);
    else if (c.signal != 0)
      line += fmt::format("the job was killed by signal {}", c.signal);
    else
      line += "the job's end is unknown";
    if (c.timed_out) line += " (its time limit was reached)";
    line += ", ";
  }
  line += fmt::format("{} in {:.2f} s", r.state, elapsed_ms / 1000.0);
  if (r.memory && r.memory->peak_bytes)
    line += ", memory peak " + binary_size_text(*r.memory->peak_bytes);
  fmt::print(stderr, "{}\n", line);
  if (r.guard)
    fmt::print(stderr,
               "sealrun {}: {}: growth guard {} tripped at {:.2f} s: {} observed, limit {}\n",
               command, r.id, r.guard->name, r.guard->t_ms / 1000.0,
               binary_size_text(r.guard->observed), binary_size_text(r.guard->limit));
}

}  // namespace

RunOutcome run_with_console(RunRequest request, const PipelineDeps& deps,
                            const ConsoleOptions& options) {
  // The process's progress style (run_progress.h): every stage's progress follows --quiet.
  if (options.quiet) set_progress_quiet(true);
  request.live_output_fd = options.quiet ? -1 : STDERR_FILENO;
  const int64_t started_ms = monotonic_ms();
  RunOutcome o = run_pipeline(request, deps);
  if (!options.quiet && !options.json)
    print_run_summary(options.command, o.receipt, monotonic_ms() - started_ms);
  std::fflush(stderr);
  return o;
}

}  // namespace sealrun::run
