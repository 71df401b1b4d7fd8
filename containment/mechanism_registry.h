// SPDX-License-Identifier: Apache-2.0
// The one place that knows every mechanism: a table of {kind, strength, needs an image, factory}.
// Callers (the run pipeline, `probe`, `sweep`) ask it for mechanisms by kind and for the
// candidates of a run, strongest first; they never name a mechanism themselves. Adding a mechanism
// = its own files + its line in kMechanismTable (mechanism_registry.cc) + its name in
// core/mechanism_kind.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "containment/job_ids.h"
#include "containment/mechanism.h"
#include "core/job_user.h"
#include "core/mechanism_kind.h"
#include "core/result.h"

namespace sealrun {

// What every mechanism is given when it is made: configuration the controller reads once, and
// where a mechanism may keep what it makes outside a run's owned root — always somewhere `sealrun
// sweep` looks, so that nothing a killed controller leaves is invisible to it.
struct MechanismContext {
  std::string job_user = kDefaultJobUser;  // the unprivileged user rootless mechanisms run as
  // This controller's private directory for a mechanism's temporaries (podman's probe storage):
  // <state>/tmp/<pid>.<starttime>, named after the controller so that sweep can prove it gone and
  // hand what is left to sweep_strays(). Empty: the mechanism's own fallback (for `sealrun probe`,
  // which has no state directory).
  std::string scratch_dir;
  // A directory with a short path for links a mechanism needs at a short path (podman's
  // --runroot must be at most 50 characters). Root's or the caller's own, never writable by
  // anyone else; sweep_strays() removes the links in it whose target is gone.
  std::string short_link_dir = default_short_link_dir();
  // Where a mechanism may cache its probe's findings (the run's STATE/probe-cache, root's and
  // private); empty: probe afresh (`sealrun probe`).
  std::string probe_cache_dir;
  // Where each run's own uid comes from (job_ids.h): the host-wide registry and the pool.
  JobIdPool job_id_pool;
  // Test-only (docs/containment.md): the bwrap binary to run instead of the one on PATH, so that a
  // test can show the probe cache notices a changed binary. The controller sets it from
  // $SEALRUN_TEST_BWRAP (controller/common/host_config.cc); no library reads the environment.
  std::string test_bwrap_path;
};

// The mechanism of `kind`; an error for a kind that has no line in the table.
Result<std::unique_ptr<Mechanism>> make_mechanism(MechanismKind kind,
                                                  const MechanismContext& context);

// The mechanisms that can run a learning or proving job (Mechanism::has_sandbox_ready_hook), in
// table order.
std::vector<MechanismKind> learning_mechanisms(const MechanismContext& context);

// For `sealrun sweep`: every mechanism's sweep_strays() (Mechanism::sweep_strays) over the
// temporaries of dead controllers ({dir, the controller's starttime}) and the short link
// directory. The caller removes each dir afterwards, unless a step reports something left.
std::vector<SweepStep> sweep_mechanism_strays(const MechanismContext& context,
                                              const std::vector<StrayDir>& dead_dirs);

// The mechanisms to try for a run, strongest first. `admitted` is what the admission allows
// (nullopt: any), `requested` what `run --mechanism` asks (nullopt: auto); an explicit request
// must agree with the admission and be able to run this job (e.g. podman needs a pinned image).
// With an image, a mechanism that runs the image's root is stronger than one that binds the host.
Result<std::vector<MechanismKind>> mechanism_candidates(bool has_image, MechanismChoice admitted,
                                                        MechanismChoice requested);

// Every known mechanism, in table order (for `probe`).
std::vector<MechanismKind> all_mechanisms();

}  // namespace sealrun
