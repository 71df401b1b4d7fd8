// SPDX-License-Identifier: Apache-2.0
// How the receipt spells its outputs and chooses which to list when it must shrink. The same JSON
// object per output is a line of results/<id>/outputs.jsonl and (when listed) an element of the
// receipt's `outputs`, so a verifier can match the two byte for byte (docs/receipt.md).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller/receipt/receipt.h"

namespace sealrun::receipt {

// The outputs of one receipt, rendered once and listed at any budget.
class ListedOutputs {
 public:
  explicit ListedOutputs(const Receipt& receipt);

  // Indices (in path order) of the outputs to list within `budget` bytes of compact JSON:
  // regular files first, then the other kinds, each in path order, taken while they fit.
  std::vector<size_t> select(size_t budget) const;

  std::vector<nlohmann::json> items;  // output_json() of every output, in path order
  bool recorded = false;              // the full list was recorded: total and digest hold
  uint64_t total = 0;
  std::string list_sha256;  // SHA-256 of output_list_bytes()

 private:
  std::vector<size_t> sizes_;     // compact JSON bytes of each item, with its separator
  std::vector<size_t> priority_;  // regular files, then the rest
};

}  // namespace sealrun::receipt
