// SPDX-License-Identifier: Apache-2.0
// `sealrun sweep --images`: removes the unpacked image roots under STATE/images/ (docs/view.md)
// that no run holds. Each is held shared (flock on images/<hex>) by every run whose job may see
// it, so one that is in use is reported and kept; the next bwrap run of that image unpacks it
// again from its pinned archive.
#pragma once

#include <vector>

#include "controller/state_dir.h"
#include "core/sweep_step.h"

namespace sealrun::run {

std::vector<SweepStep> sweep_images(const StateDir& state);

}  // namespace sealrun::run
