// Receipt review as pure functions on a parsed receipt: a summary for a person, a stable diff of
// two receipts, and the in-toto / SLSA provenance export.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sealrun::receipt {

// Sizes in binary units (receipt_facts.h); at most 50 outputs unless `all_outputs`.
std::string summary_text(const nlohmann::json& receipt, bool all_outputs = false);

struct Difference {
  std::string path;  // "commands[0].exit"
  std::string a, b;  // JSON values, "(absent)" when missing on one side
};
// Leaves out timestamps, durations, census samples and the digest unless with_timings.
std::vector<Difference> diff_receipts(const nlohmann::json& a, const nlohmann::json& b,
                                      bool with_timings);

// An in-toto Statement v1 whose subjects are the outputs and whose predicate is SLSA provenance v1.
nlohmann::json to_in_toto(const nlohmann::json& receipt);

}  // namespace sealrun::receipt
