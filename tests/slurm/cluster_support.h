// SPDX-License-Identifier: Apache-2.0
// What the slurm-labelled tests share: the running test cluster (tests/fixtures/slurm_cluster.sh,
// started by the CTest fixture `slurm_cluster`), running Slurm's clients and build/sealrun as
// root or as the ordinary job user, a workspace that user owns (source, toolchain, admissions,
// state directory), and polling Slurm's job state (sbatch --wait polls only every 2 s).
#pragma once

#include <sys/types.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/process.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing::slurm {

struct Identity {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};
Identity root_identity();
// The ordinary user: $SEALRUN_JOB_USER, default "sealrun" (.ci/setup creates it).
Identity ordinary_user();

std::string cluster_dir();
std::string slurm_conf();
std::string sealrun_bin();

// Runs argv (argv[0] looked up on PATH unless absolute) as `who`, in `cwd`, with SLURM_CONF set.
Captured run_as(const Identity& who, std::vector<std::string> argv, const std::string& cwd,
                int64_t timeout_ms = 120000);

bool wait_until(const std::function<bool()>& done, int64_t timeout_ms, int64_t interval_ms = 20);
// The node answers and is idle or partly allocated (not down, drained or completing).
bool node_ready();

struct JobInfo {
  std::string state;      // COMPLETED, FAILED, CANCELLED, RUNNING, ...
  std::string exit_code;  // "0:0"
  std::string requeue;    // "0" or "1"
};
std::optional<JobInfo> job_info(uint64_t job_id);
// Polls until the job has left PENDING/RUNNING/COMPLETING.
std::optional<JobInfo> wait_job_finished(uint64_t job_id, int64_t timeout_ms = 60000);

struct Frozen {
  std::string path;
  std::string sha256;
};

// A temp directory the identity owns, with src/, tc/ and state/.
class Workspace {
 public:
  explicit Workspace(Identity who);
  const Identity& who() const { return who_; }
  std::string dir() const { return dir_.str(); }
  std::string state() const { return dir_ / "state"; }
  // `sealrun admit freeze` (as the owner) of `/bin/sh -c script` with small limits, plus `sets`.
  Frozen freeze(const std::string& name, const std::string& script,
                const std::vector<std::string>& sets = {});
  // The sealrun command line of an admitted run into state(): `S run ADM --sha256 H --id ID ...`.
  std::vector<std::string> run_argv(const Frozen& a, const std::string& id) const;
  // The same as one line for `sbatch --wrap` (with `exec`).
  std::string run_line(const Frozen& a, const std::string& id) const;
  // sbatch --parsable as the owner; the job id, or nullopt (err holds sbatch's stderr).
  std::optional<uint64_t> sbatch(const std::string& wrap, std::string* err,
                                 const std::vector<std::string>& extra = {});
  std::string receipt_path(const std::string& id) const;
  nlohmann::json receipt(const std::string& id) const;

 private:
  Identity who_;
  TempDir dir_;
};

// Directories named sealrun-<id>.* anywhere under the v1 memory, pids and freezer hierarchies.
std::vector<std::string> sealrun_groups(const std::string& run_id);
// Pids whose command line contains `marker` (zombies and this process excepted).
std::vector<pid_t> processes_with(const std::string& marker);
// Each pid with its command line and /proc stat line, for a failure message.
std::string describe_processes(const std::vector<pid_t>& pids);
// Asserts what a receipt of an enforced run shows: every required dimension enforced, memory and
// pids limits applied as read back.
void expect_fully_enforced(const nlohmann::json& receipt);

}  // namespace sealrun::testing::slurm
