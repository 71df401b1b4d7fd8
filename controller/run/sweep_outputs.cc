// SPDX-License-Identifier: Apache-2.0
// remove_unreceipted_outputs(): see sweep_outputs.h.
#include "controller/run/sweep_outputs.h"

#include "controller/run/run_plan.h"

namespace sealrun::run {

SweepStep remove_unreceipted_outputs(const StateDir& state, const std::string& id) {
  RunLayout layout = layout_for(state.path(), id);
  SweepStep s{"outputs " + layout.output_dir, "", false};
  if (!state.exists(layout.results_root)) {
    s.outcome = "none";
    return s;
  }
  if (state.exists(layout.receipt_path)) {
    s.outcome = "kept: the run's receipt vouches for them";
    return s;
  }
  // outputs.jsonl is written before the receipt: without the receipt it vouches for nothing.
  const std::string list = layout.results_root + "/outputs.jsonl";
  Status st = state.exists(list) ? state.remove(list) : ok_status();
  if (st) st = state.remove_tree(layout.output_dir);
  if (st) st = state.make_dir(layout.output_dir, 0700);
  s.outcome = st ? "removed (no receipt vouches for them: the controller was killed)"
                 : "remove failed: " + st.error().message();
  s.left = !st.ok();
  return s;
}

}  // namespace sealrun::run
