// SPDX-License-Identifier: Apache-2.0
// The admission of one remote-execution action: the runner's standing configuration (its
// toolchain, its `--set` limits and required dimensions) plus what the action asks (argv,
// environment, working directory) plus its input root pinned as a `tree` source, frozen with the
// same library `sealrun admit freeze` uses. The source is mounted writable and the outputs are
// collected from it (mounts.source_writable, mounts.outputs_from "source"), because an action
// writes its outputs into its input root; what the admission pins is the input root before the run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "admission/freeze.h"
#include "core/result.h"
#include "remote/action_request.h"

namespace sealrun::remote {

// What every action of one runner shares.
struct RunnerPins {
  std::string toolchain;        // host directory
  std::string toolchain_mount;  // where the job sees it (empty: the same path)
  // The toolchain as pinned when the runner started: every action's admission carries this pin
  // (no hashing per action), and each run verifies the tree against it.
  std::optional<admission::ToolchainPin> toolchain_pin;
  // Host trees ("HOST_DIR[=JOB_PATH]", --tree), pinned once at start like the toolchain.
  std::vector<std::string> trees;
  std::vector<admission::TreePin> tree_pins;
  // "dotted.key=VALUE" assignments applied to every action (limits.*, containment.*, ...).
  std::vector<std::string> sets;
  // The admitted result_max_bytes and ceiling_bytes (from `sets` or the defaults), meant for the
  // outputs. With outputs collected from the input root the growth census measures the input root
  // itself, so each action's admission raises both by what its input root occupies before the
  // run. Zero: leave the admission's values as they are.
  uint64_t outputs_max_bytes = 0;
  uint64_t ceiling_bytes = 0;
};

// Keys a runner's --set may name: the limits, the containment, the job's other mounts and the
// expiry. Everything else comes from the action (command, env, source) or from --toolchain.
Status check_runner_set(const std::string& assignment);

// The freeze request for `action`, whose input root is the host directory `input_root`, occupying
// `input_bytes` (allocated, as the growth census counts them) before the run.
admission::FreezeRequest action_freeze_request(const RunnerPins& pins, const CheckedAction& action,
                                               const std::string& input_root, uint64_t input_bytes,
                                               const std::string& out);

}  // namespace sealrun::remote
