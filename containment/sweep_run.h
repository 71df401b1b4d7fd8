// SPDX-License-Identifier: Apache-2.0
// Sweeping one run a killed controller left, from its grant record: its resource groups (whatever
// the back end), its outermost job process (killed only if it provably is the recorded one), and
// what its mechanism left (the mechanism's own sweep, through the registry). The controller's
// `sealrun sweep` walks the records and calls this; it names no mechanism and no back end.
// The run's owned root is the controller's (it knows the state directory's layout).
#pragma once

#include <vector>

#include "containment/grant_journal.h"
#include "containment/mechanism_registry.h"
#include "core/sweep_step.h"

namespace sealrun {

std::vector<SweepStep> sweep_recorded_run(const GrantRecord& record, int64_t grace_ms,
                                          const MechanismContext& context);

// The recorded job pid, if a process with that pid still runs and is the job (same starttime;
// records of older controllers have none: then it must have started after the controller, and
// run as the job user), is killed; otherwise the pid was recycled and is not touched.
SweepStep sweep_job_process(const GrantRecord& record);

}  // namespace sealrun
