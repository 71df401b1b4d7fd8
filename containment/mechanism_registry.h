// The one place that knows every mechanism: a table of {kind, strength, needs an image, factory}.
// Callers (the run pipeline, `probe`, `sweep`) ask it for mechanisms by kind and for the
// candidates of a run, strongest first; they never name a mechanism themselves. Adding a mechanism
// = its own files + its line in kMechanismTable (mechanism_registry.cc) + its name in
// core/mechanism_kind.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "containment/mechanism.h"
#include "core/job_user.h"
#include "core/mechanism_kind.h"
#include "core/result.h"

namespace sealrun {

// What every mechanism is given when it is made: configuration the controller reads once.
struct MechanismContext {
  std::string job_user = kDefaultJobUser;  // the unprivileged user rootless mechanisms run as
};

std::unique_ptr<Mechanism> make_mechanism(MechanismKind kind, const MechanismContext& context);

// The mechanisms to try for a run, strongest first. `admitted` is what the admission allows
// (nullopt: any), `requested` what `run --mechanism` asks (nullopt: auto); an explicit request
// must agree with the admission and be able to run this job (e.g. podman needs a pinned image).
// With an image, a mechanism that runs the image's root is stronger than one that binds the host.
Result<std::vector<MechanismKind>> mechanism_candidates(bool has_image, MechanismChoice admitted,
                                                        MechanismChoice requested);

// Every known mechanism, in table order (for `probe`).
std::vector<MechanismKind> all_mechanisms();

}  // namespace sealrun
