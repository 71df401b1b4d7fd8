// Configuration from the environment: see host_config.h.
#include "controller/host_config.h"

#include <cstdlib>

namespace sealrun::cli {

std::string configured_job_user() {
  const char* env = std::getenv("SEALRUN_JOB_USER");
  return env != nullptr && *env != '\0' ? env : kDefaultJobUser;
}

MechanismContext mechanism_context() {
  MechanismContext c;
  c.job_user = configured_job_user();
  return c;
}

}  // namespace sealrun::cli
