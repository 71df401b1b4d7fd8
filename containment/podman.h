// SPDX-License-Identifier: Apache-2.0
// The rootless podman mechanism: runs a job as a container of the verified image, with podman
// itself running as the unprivileged job user and keeping all of its state below the run's owned
// root. The boundary comes from podman's flags (podman_argv.h: no network, read-only root, no
// capabilities, no_new_privs, the job seccomp policy, only the admitted mounts writable); memory
// and pids limits come from the resource group the podman process is placed into before exec
// (on this cgroup v1 host conmon and the container inherit it: rootless podman with cgroupfs
// creates no groups of its own, checked by tests/containment/podman_integration_test.cc).
//
// What the caller must provide: an owned root the job user can *search* (o+x on it and on every
// parent; its contents may stay private), because podman runs as that user and takes paths, not
// descriptors; spawn() refuses otherwise, naming the directory. Writable mount sources must be
// writable by the job user, or be empty / below the owned root (then they are chowned to it);
// read-only sources whose root the job user cannot read are copied into the storage.
// Known podman behaviour: HOSTNAME (fixed to "sealrun") and HOME (from the image, "/" for busybox)
// are always in the job's environment besides the admitted variables.
#pragma once

#include <memory>
#include <string>

#include "containment/mechanism.h"
#include "containment/podman_argv.h"
#include "core/job_user.h"

namespace sealrun {

struct PodmanOptions {
  std::string podman_path;  // empty: found on PATH
  // The unprivileged user podman runs as when the controller is root (the controller passes the
  // configured name in).
  std::string job_user = kDefaultJobUser;
  // The probe builds a throwaway busybox image and storage in a new directory here (one the job
  // user can traverse: the controller's temporaries, MechanismContext::scratch_dir, where sweep
  // finds it after a killed controller); empty: /var/tmp. It is removed afterwards.
  std::string probe_dir;
  // Where the short --runroot links go (MechanismContext::short_link_dir).
  std::string link_dir = default_short_link_dir();
  std::string busybox_path = "/bin/busybox";
  // Time limits for podman's own housekeeping commands (load, kill, rm, ps, inspect).
  int64_t command_timeout_ms = 120 * 1000;
};

std::unique_ptr<Mechanism> make_podman_mechanism(PodmanOptions options = {});

namespace podman {
// For `sealrun sweep` after a killed controller: if <owned_root>/podman exists, removes the run's
// container (`podman rm -f` by name), kills the rootless pause process and whatever else still
// runs from the storage (started no earlier than `not_before`, the controller's starttime),
// removes the storage and the short runroot link (in `link_dir`). Each action is reported; an
// absent storage is reported, not an error.
Result<std::vector<std::string>> sweep_podman_storage(const std::string& owned_root,
                                                      const std::string& run_id,
                                                      const std::string& job_user,
                                                      const std::string& link_dir,
                                                      const std::string& not_before);

// How a job ended, from `podman run`'s own exit status: podman exits with the container's exit
// code, which is 128 + N when the job was killed by signal N (catatonit, podman's --init, exits
// so for a child killed by N; conmon records the same for an init killed by N). `podman inspect`
// shows the same number (State.ExitCode) and no signal, so a job that exits 129..192 on purpose
// cannot be told from one killed by a signal: it is read as the signal, as under bwrap.
ExitStatus job_status_from_podman(const ExitStatus& podman_run);

// The probe's verdicts, separated from running it so the parsing is unit-tested: `status` is the
// throwaway container's /proc/self/status, `checks` its "name=value" lines from the probe script.
std::vector<DimensionCheck> dimensions_from_probe(const std::string& status,
                                                  const std::string& checks,
                                                  const std::string& podman_stderr,
                                                  const HostFacts& facts);
}  // namespace podman

}  // namespace sealrun
