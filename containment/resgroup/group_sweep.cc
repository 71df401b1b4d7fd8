// SPDX-License-Identifier: Apache-2.0
// Sweeping the groups a grant record names, whatever their back end (resource_group.h): the
// dispatch that keeps back-end names out of `sealrun sweep`. Each back end re-derives the group's
// name from the record (run id, creator pid and starttime) and refuses a locator that differs.
#include <fmt/format.h>

#include "containment/resgroup/cgroupfs_sweep.h"
#include "containment/resgroup/resource_group.h"
#include "containment/resgroup/systemd_readback.h"
#include "containment/resgroup/systemd_scope.h"

namespace sealrun::resgroup {
namespace {

std::vector<SweepStep> sweep_systemd_scopes(const RecordedGroups& r, int64_t grace_ms) {
  std::vector<SweepStep> steps;
  auto want = systemd::scope_unit_name(r.run_id);
  for (const auto& unit : r.locators) {
    std::string what = "systemd scope " + unit;
    if (!want || unit != *want) {
      steps.push_back(
          {what,
           fmt::format("refused: not this run's scope {}", want ? *want : want.error().message()),
           true});
      continue;
    }
    auto s = stop_leftover_scope(unit, grace_ms);
    if (!s)
      steps.push_back({what, "stop failed: " + s.error().message(), true});
    else
      steps.push_back({what,
                       s->confirmed
                           ? fmt::format("stopped {} processes, unloaded", s->processes_signalled)
                           : "stop NOT confirmed",
                       !s->confirmed});
  }
  return steps;
}

}  // namespace

std::vector<SweepStep> sweep_recorded(const RecordedGroups& r, int64_t grace_ms) {
  if (r.backend.empty() || r.backend == backend_name(Backend::kNone)) return {};
  if (r.backend == backend_name(Backend::kSystemd)) return sweep_systemd_scopes(r, grace_ms);
  return sweep_recorded_groups(r.backend, r.locators, r.run_id, r.controller_pid,
                               r.controller_start, grace_ms);
}

}  // namespace sealrun::resgroup
