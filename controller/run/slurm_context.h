// SPDX-License-Identifier: Apache-2.0
// Where in a Slurm cluster a run happened, for its receipt: the job, the step, the node, read from
// the SLURM_* variables Slurm puts in a job's environment. A pure function of an environment map,
// so the receipt code passes the controller's environment and the tests pass tables.
//
// What it returns (every key only when its variable is present and well formed):
//   job_id         SLURM_JOB_ID (else SLURM_JOBID), a number
//   step_id        SLURM_STEP_ID (else SLURM_STEPID) as a string ("0", "1", ...); "batch" for the
//                  batch script (Slurm sets no step id there, but ENVIRONMENT=BATCH)
//   node           SLURMD_NODENAME
//   cluster        SLURM_CLUSTER_NAME
//   partition      SLURM_JOB_PARTITION
//   user           SLURM_JOB_USER
//   array_job_id, array_task_id   SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID (numbers)
//   proc_id, local_id             SLURM_PROCID, SLURM_LOCALID (the task's global and local rank)
//   mem_per_node_mb, mem_per_cpu_mb   SLURM_MEM_PER_NODE, SLURM_MEM_PER_CPU (the allocation asked
//                  for, in MiB; the limit in force is the memory group's, read back elsewhere)
// These are what the job's environment says: a job's owner can set them, so they place a receipt
// in the site's accounting, they do not prove it (a node's signing key does).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace sealrun {

// nullopt when the environment holds no valid Slurm job id (not inside a Slurm job).
std::optional<nlohmann::json> slurm_context(const std::map<std::string, std::string>& env);

// Inside a Slurm job, what fixes an ordinary user's refusal for want of a pids group (exit 4 with
// process_count missing): sealrun's SPANK plugin, which gives each step a pids group owned by the
// job's user (contrib/slurm/README.md). "" outside Slurm, for root (it makes its groups anywhere)
// or when process_count is not what is missing. A sentence to append to the refusal.
std::string slurm_spank_advice(const std::map<std::string, std::string>& env,
                               bool process_count_missing, bool is_root);

// The process's own environment as a map, for slurm_context(environ_map()).
std::map<std::string, std::string> environ_map();

}  // namespace sealrun
