// SPDX-License-Identifier: Apache-2.0
// The proving run of `admit freeze --learn`: the learned admission, written to a temporary file,
// is run once more through the run pipeline exactly as `sealrun run` runs it (its pins verified,
// bwrap as the job user, the learned view only: no host trees). Learning writes its admission
// only when this run ends `built`, as the learning run did; otherwise the admission is run once
// more with the lookup tracer attached (learn/lookup_tracer.h, here also tracing every open, so an
// open that fails in the learned view is seen), and the error says what the proving run lacked:
// the host paths that run looked up or opened that exist on the host but not in the learned view
// (learn/lookup_closure.h lacking_in_view), the proving run's exit and reason, and the end of its
// stderr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "controller/run/run_pipeline.h"
#include "core/result.h"
#include "learn/closure.h"

namespace sealrun::cli {

struct ProveRequest {
  std::string admission_path;  // the learned admission (a temporary file)
  std::string sha256;          // of its bytes
  std::string state_dir;       // the learning's own, thrown away with it
  int live_output_fd = -1;
  std::vector<std::string> roots;     // the host trees learning showed (what is judged)
  std::vector<std::string> excluded;  // the job's own places (not recorded)
  std::vector<std::string> places;    // what the view shows below (trees, toolchain, mounts)
  learn::Closure closure;             // what the learned view pins of the host
};

// Ok when the proving run ends `built` (exit 0); else an error naming what it lacked.
Status prove_learned(const ProveRequest& request);

// "; its stderr ended with:\n..." from the job's stderr record of `outcome`, or "".
std::string learn_stderr_tail(const run::RunOutcome& outcome);

}  // namespace sealrun::cli
