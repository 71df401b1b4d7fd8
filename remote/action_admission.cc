// SPDX-License-Identifier: Apache-2.0
// The admission of one action: see action_admission.h.
#include "remote/action_admission.h"

#include <fmt/format.h>

#include <array>
#include <string_view>

namespace sealrun::remote {

namespace {

// What a runner's --set may configure; the rest is the action's or --toolchain's to say.
constexpr std::array<std::string_view, 6> kRunnerKeys = {
    "limits.", "containment.", "mounts.output", "mounts.scratch", "mounts.tmp", "expires_at"};

}  // namespace

Status check_runner_set(const std::string& assignment) {
  size_t eq = assignment.find('=');
  std::string_view key = std::string_view(assignment).substr(0, eq);
  for (std::string_view allowed : kRunnerKeys) {
    bool prefix = allowed.back() == '.';
    if (prefix ? key.substr(0, allowed.size()) == allowed : key == allowed) return ok_status();
  }
  return Error::make(fmt::format(
      "--set {}: a runner sets only limits.*, containment.*, mounts.output, mounts.scratch, "
      "mounts.tmp and expires_at; the command, environment and source come from each action, "
      "the toolchain from --toolchain",
      assignment));
}

admission::FreezeRequest action_freeze_request(const RunnerPins& pins, const CheckedAction& action,
                                               const std::string& input_root, uint64_t input_bytes,
                                               const std::string& out) {
  admission::FreezeRequest r;
  r.out = out;
  r.sets = pins.sets;
  // A `tree` source always: an input root that happens to hold HEAD and objects/ must not be taken
  // for a git repository. Paths are absolute, so apply_set keeps them as strings.
  r.sets.push_back("source.kind=tree");
  r.sets.push_back("source.path=" + input_root);
  r.sets.push_back("mounts.source_writable=true");
  r.sets.push_back("mounts.outputs_from=source");
  r.sets.push_back("command.cwd=" + action.cwd);
  r.sets.push_back(fmt::format("source_date_epoch={}", action.source_date_epoch));
  // After the runner's own sets, so these win: the outputs allowance on top of the inputs.
  if (pins.outputs_max_bytes > 0)
    r.sets.push_back(
        fmt::format("limits.result_max_bytes={}", pins.outputs_max_bytes + input_bytes));
  if (pins.ceiling_bytes > 0)
    r.sets.push_back(fmt::format("limits.ceiling_bytes={}", pins.ceiling_bytes + input_bytes));
  if (pins.toolchain_pin) {
    r.toolchain_pin = pins.toolchain_pin;
  } else {
    r.toolchain = pins.toolchain;
    r.toolchain_mount = pins.toolchain_mount;
  }
  if (!pins.tree_pins.empty())
    r.tree_pins = pins.tree_pins;
  else
    r.trees = pins.trees;
  r.argv = action.argv;
  for (const auto& [name, value] : action.env) r.env.push_back(name + "=" + value);
  return r;
}

}  // namespace sealrun::remote
