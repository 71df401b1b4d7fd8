// Configuration the controller reads from its environment, once, and passes down: the job user's
// name ($SEALRUN_JOB_USER, default "sealrun"). No library below the controller reads the
// environment for configuration.
#pragma once

#include <string>

#include "containment/mechanism_registry.h"

namespace sealrun::cli {

std::string configured_job_user();
MechanismContext mechanism_context();

}  // namespace sealrun::cli
