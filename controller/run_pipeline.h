// `sealrun run`: the pipeline of CONTRACT.md, in order — admission, owned roots, grant, resource
// group, census, the contained job, post-run checks — with a cleanup that always runs (stop the
// census, stop and remove the job's processes and container, confirm the stop, read the final
// memory figures) and a receipt that is always written atomically.
#pragma once

#include <string>

#include "containment/spec.h"
#include "controller/receipt.h"

namespace sealrun::run {

struct RunRequest {
  std::string admission_path;
  std::string sha256;
  std::string id;
  std::string mechanism = "auto";  // auto | bwrap | podman
  GrantMode mode = GrantMode::kEnforcing;
  std::string state_dir = "sealrun-state";
};

struct RunOutcome {
  int exit_code = 0;         // CONTRACT.md exit codes
  std::string receipt_path;  // empty when no receipt could be written (e.g. the id was taken)
  receipt::Receipt receipt;
  std::string message;  // for stderr when something went wrong outside the receipt
};

RunOutcome run_pipeline(const RunRequest& request);

}  // namespace sealrun::run
