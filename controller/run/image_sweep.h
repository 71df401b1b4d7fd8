// SPDX-License-Identifier: Apache-2.0
// `sealrun sweep --images`: removes the unpacked image roots under STATE/images/ and the pin
// images under STATE/pins/ (docs/view.md) that no run holds. Each is held shared (flock on
// images/<hex>, pins/<key>) by every run whose job may see it, so one that is in use is reported
// and kept; the next run that needs it unpacks or builds it again from what the admission pins.
#pragma once

#include <vector>

#include "controller/common/state_dir.h"
#include "core/sweep_step.h"

namespace sealrun::run {

std::vector<SweepStep> sweep_images(const StateDir& state);

}  // namespace sealrun::run
