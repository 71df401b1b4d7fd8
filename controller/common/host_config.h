// SPDX-License-Identifier: Apache-2.0
// Configuration the controller reads from its environment, once, and passes down: the job user's
// name ($SEALRUN_JOB_USER, default "sealrun") and where each run's own uid comes from
// ($SEALRUN_JOB_ID_POOL, $SEALRUN_JOB_ID_REGISTRY: containment/job_ids.h). No library below the
// controller reads the environment for configuration.
#pragma once

#include <string>

#include "containment/mechanism_registry.h"

namespace sealrun::cli {

std::string configured_job_user();
MechanismContext mechanism_context();

}  // namespace sealrun::cli
