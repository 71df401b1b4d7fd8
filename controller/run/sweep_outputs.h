// SPDX-License-Identifier: Apache-2.0
// What `sealrun sweep` does with the outputs of a run whose controller was killed after its job
// ran: a run has outputs only with a receipt that vouches for them. Outputs without one (the
// controller was killed after taking them off /out's file system, or — without a result space —
// while the job wrote them in place) are removed; results/<id> itself stays, holding the empty
// out/ and logs/, so the id stays used (it named a run that executed). A run with a receipt is
// not touched. (A run killed during its job with a result space has no outputs in results/<id>
// at all: they were on its file system, which sweep tears down with the image.)
#pragma once

#include <string>

#include "controller/common/state_dir.h"
#include "core/sweep_step.h"

namespace sealrun::run {

SweepStep remove_unreceipted_outputs(const StateDir& state, const std::string& id);

}  // namespace sealrun::run
