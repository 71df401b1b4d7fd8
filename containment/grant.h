// SPDX-License-Identifier: Apache-2.0
// Grants: the answer to a ContainmentSpec. acquire_grant() asks each mechanism (strongest first)
// what it can enforce here, picks the strongest available one, and either states exactly what is
// enforced or refuses: in enforcing mode a required dimension that is not enforced means no grant
// and no process. Report-only mode records the shortfall and proceeds. The grant carries a frozen
// copy of the spec (environment included), so later changes to the caller's data cannot widen it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "containment/mechanism.h"
#include "containment/resgroup/resource_group.h"
#include "containment/spec.h"
#include "core/dimension.h"
#include "core/result.h"

namespace sealrun {

struct Grant {
  std::string mechanism;  // the mechanism chosen
  GrantMode mode = GrantMode::kEnforcing;
  DimensionSet requested;
  DimensionSet required;
  DimensionSet enforced;             // ⊆ requested, always
  DimensionSet unenforced_required;  // required - enforced (empty unless report-only)
  DimensionSet degraded;             // requested - enforced
  std::vector<std::string> tried;    // mechanisms asked, in order, with their verdicts
  ContainmentSpec spec;              // frozen at acquisition
  // For a person, to be shown once by the caller (e.g. the report-only shortfall).
  std::vector<std::string> warnings;
};

// Dimensions that a resource group (not the mechanism) enforces, from resgroup::probe_backends().
struct GroupCapabilities {
  bool memory = false;
  bool process_count = false;
  std::string backend;  // for messages
};

// What the available back ends among `probes` (resgroup::probe_backends(), strongest first) can
// limit, and the first of them by name.
GroupCapabilities group_capabilities(const std::vector<resgroup::BackendProbe>& probes);
// The dimensions those are: memory, process_count.
DimensionSet group_dimensions(const GroupCapabilities& groups);

// `mechanisms` are ranked strongest first. On refusal the error names every missing dimension and
// every mechanism tried.
Result<Grant> acquire_grant(const ContainmentSpec& spec, const std::vector<Mechanism*>& mechanisms,
                            const GroupCapabilities& groups);

// (probe's enforceable ∪ the group's dimensions) ∩ requested; empty when the probe is unavailable.
DimensionSet enforced_dimensions(const MechanismProbe& probe, const GroupCapabilities& groups,
                                 const DimensionSet& requested);

// Re-check at the point of spawn: the grant must not claim more than `probe` shows the mechanism
// can enforce (a hand-made or stale grant is refused).
Status recheck_grant(const Grant& grant, const MechanismProbe& probe,
                     const GroupCapabilities& groups);

}  // namespace sealrun
