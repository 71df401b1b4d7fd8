// SPDX-License-Identifier: Apache-2.0
// A receipt as the 0.2.0 writer produces it (with `sealrun_version` and `admission`, whose inputs
// come from inputs_from_pins), for the export tests and the independent checks.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "attest/inputs.h"

namespace sealrun::attest::testing {

// Pins of every kind: a git source, two toolchains, a tree, an image, a host tool, a closure file.
AdmissionPins sample_pins();

// A built, enforcing receipt with two outputs (one whose name is not UTF-8: `path_b64`).
nlohmann::json sample_receipt();

// The receipt's bytes as the writer emits them (two-space indent, trailing newline).
std::string receipt_bytes(const nlohmann::json& receipt);

}  // namespace sealrun::attest::testing
