// SPDX-License-Identifier: Apache-2.0
// `sealrun probe` for rootless podman: is podman here, which version, does rootless podman with
// runc + cgroupfs start a container on this host, and what does that container really get? No
// image is needed: a throwaway image is imported from a root file system made on the fly from the
// host's static busybox, started with exactly the flags a job gets (run_argv), and each dimension
// is read back from inside (capabilities, NoNewPrivs and Seccomp from /proc/self/status, network
// interfaces from /proc/net/dev, a write to /, an unshare(CLONE_NEWUSER) attempt, PID 1).
#pragma once

#include <string>

#include "containment/mechanism.h"
#include "containment/podman.h"
#include "containment/podman_argv.h"
#include "containment/podman_runner.h"

namespace sealrun::podman {

struct ProbeOutcome {
  MechanismProbe probe;
  HostFacts facts;  // valid when probe.available
};

// The seccomp profile the probe (and every job) runs under, as OCI JSON.
std::string job_seccomp_profile_json();

// Host facts that need no container: podman and runc paths, catatonit. `podman info` adds the
// cgroup version (see detect_cgroups_v2).
Result<HostFacts> basic_host_facts(const PodmanOptions& options);
// `podman info` as the job user in `layout`: cgroup version, rootless, version.
struct PodmanInfo {
  std::string version;
  bool rootless = false;
  bool cgroups_v2 = false;
  std::string runtime;
  std::string cgroup_manager;
};
Result<PodmanInfo> podman_info(const JobUser& user, const StorageLayout& layout,
                               const HostFacts& facts, int64_t timeout_ms);

ProbeOutcome run_probe(const PodmanOptions& options);

// The probe works in a new directory "podman-probe-XXXXXX" in PodmanOptions::probe_dir, its
// storage in <that>/owned/podman, its container named after the controller's pid.
inline constexpr const char* kProbeDirPrefix = "podman-probe-";
// The probe container's run id for the controller whose temporaries are `controller_temp_dir`
// (<state>/tmp/<pid>.<start>): "probe-<pid>".
std::string probe_run_id(const std::string& controller_temp_dir);

}  // namespace sealrun::podman
