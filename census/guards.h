// The growth guards as a pure decision: given the admitted limits and one observation, which guard
// (if any) trips. Checked in a fixed order so the receipt names the same guard for the same facts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "census/sample.h"

namespace sealrun::census {

struct GuardLimits {
  uint64_t owned_max_bytes = 8ULL << 30;   // owned tree must stay below
  uint64_t result_max_bytes = 1ULL << 30;  // result tree must stay below
  uint64_t free_min_bytes = 1ULL << 30;    // free space must stay at or above
  uint64_t ceiling_bytes = 10ULL << 30;    // owned + result + reserve must stay at or below
  uint64_t reserve_bytes = 512ULL << 20;
};

struct GuardTrip {
  std::string name;  // the admission's limit key: "owned_max_bytes", ...
  uint64_t limit = 0;
  uint64_t observed = 0;
  int64_t t_ms = 0;
  std::string describe() const;  // "owned_max_bytes: observed 9000 bytes, limit 8000 bytes"
};

std::optional<GuardTrip> evaluate_guards(const GuardLimits& limits, const Sample& sample);

}  // namespace sealrun::census
