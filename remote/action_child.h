// One action's `sealrun run`: the same pipeline as the command line, started as a child process of
// the runner (`/proc/self/exe run ADMISSION --sha256 HEX --id ID --state-dir DIR`), so the runner
// holds no job state of its own and a fault in one run cannot take the others down.
//
// The child gets SIGTERM if the runner dies (PR_SET_PDEATHSIG): `sealrun run` turns SIGTERM into a
// confirmed stop of its job and still writes its receipt, and what a killed run leaves is in its
// grant journal for `sealrun sweep`. A cancelled action is stopped the same way — SIGTERM to the
// child, then waiting for it to finish its stop and its receipt — never a SIGKILL of one process.
#pragma once

#include <sys/resource.h>

#include <functional>
#include <string>

#include "core/process.h"
#include "core/result.h"

namespace sealrun::remote {

struct ChildRequest {
  std::string sealrun;  // the executable ("/proc/self/exe" in the runner)
  std::string admission, sha256, id, state_dir;
  std::string log_dir;  // run.stdout / run.stderr of the child go here
};

struct ChildOutcome {
  ExitStatus status;         // of `sealrun run` (docs/contract.md, exit codes)
  struct rusage usage {};    // the child with everything it waited for (the job included)
  bool cancelled = false;    // the stop was asked by `cancelled()`, not by the run itself
  int64_t stop_wait_ms = 0;  // from SIGTERM to the child's exit, when cancelled
  std::string stderr_tail;   // the last bytes `sealrun run` wrote to stderr, for messages
};

// Starts the child and waits for it, polling `cancelled` every `poll_ms`; when it returns true the
// child gets SIGTERM once and is then waited for until it exits.
Result<ChildOutcome> run_child(const ChildRequest& request, const std::function<bool()>& cancelled,
                               int64_t poll_ms = 50);

}  // namespace sealrun::remote
