// SPDX-License-Identifier: Apache-2.0
// Configuration from the environment: see host_config.h.
#include "controller/common/host_config.h"

#include <cstdlib>

namespace sealrun::cli {

std::string configured_job_user() {
  const char* env = std::getenv("SEALRUN_JOB_USER");
  return env != nullptr && *env != '\0' ? env : kDefaultJobUser;
}

MechanismContext mechanism_context() {
  MechanismContext c;
  c.job_user = configured_job_user();
  // Where each run's own uid comes from (containment/job_ids.h): a site that shares the job
  // user's subordinate range, or a test, narrows the pool or keeps a registry of its own.
  if (const char* spec = std::getenv("SEALRUN_JOB_ID_POOL"); spec != nullptr && *spec != '\0') {
    auto pool = parse_pool_spec(spec);
    if (pool)
      c.job_id_pool = *pool;
    else
      c.job_id_pool.invalid = "$SEALRUN_JOB_ID_POOL: " + pool.error().message();
  }
  if (const char* dir = std::getenv("SEALRUN_JOB_ID_REGISTRY"); dir != nullptr && *dir != '\0')
    c.job_id_pool.registry = dir;
  // Test-only: a copy of bwrap whose bytes differ, to show the probe cache notices
  // (docs/containment.md).
  if (const char* bwrap = std::getenv("SEALRUN_TEST_BWRAP"); bwrap != nullptr && *bwrap != '\0')
    c.test_bwrap_path = bwrap;
  return c;
}

}  // namespace sealrun::cli
