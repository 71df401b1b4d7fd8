// SPDX-License-Identifier: Apache-2.0
// What a person (or a CI log) sees of a run on stderr while it runs, shared by `sealrun run` and
// `sealrun rebuild` (issue 29 part 5): the job's output as it arrives (`job| `, live_output.h),
// the progress of the long steps (run_progress.h: redrawn on a terminal, plain lines every 5 s
// elsewhere, with "job running N s" while a job is silent), and after the job its end in a line
// or two (how it ended, time, memory peak, a tripped guard). `quiet` shows none of that (errors and
// the command's result are the caller's and are still printed); `json` keeps the live output but
// leaves out the summary, which is for a person.
#pragma once

#include <string>

#include "controller/run/run_pipeline.h"

namespace sealrun::run {

struct ConsoleOptions {
  std::string command = "run";  // names the summary line: "sealrun <command>: <id>: ..."
  bool quiet = false;
  bool json = false;
};

// Runs `request` through the pipeline with the console `options` asks for.
RunOutcome run_with_console(RunRequest request, const PipelineDeps& deps,
                            const ConsoleOptions& options);

}  // namespace sealrun::run
