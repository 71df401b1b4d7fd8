// SPDX-License-Identifier: Apache-2.0
// A mechanism's probe as JSON: what `sealrun probe --json` prints for each mechanism and what the
// bwrap probe cache stores (bwrap_probe_cache.h) — one spelling for both.
#pragma once

#include <nlohmann/json.hpp>

#include "containment/mechanism.h"

namespace sealrun {

// {name, available, path, version, unavailable_reason, enforceable, dimensions: [{dimension,
// enforceable, why}]}
nlohmann::json probe_to_json(const MechanismProbe& p);

}  // namespace sealrun
