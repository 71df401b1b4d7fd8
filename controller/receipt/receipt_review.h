// SPDX-License-Identifier: Apache-2.0
// Receipt review as pure functions on a parsed receipt: a summary for a person and the in-toto /
// SLSA provenance export (`receipt diff` is receipt_diff.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sealrun::receipt {

// Sizes in binary units (receipt_facts.h); at most 50 outputs unless `all_outputs`.
std::string summary_text(const nlohmann::json& receipt, bool all_outputs = false);

// An in-toto Statement v1 whose subjects are the outputs and whose predicate is SLSA provenance v1.
nlohmann::json to_in_toto(const nlohmann::json& receipt);

}  // namespace sealrun::receipt
