// SPDX-License-Identifier: Apache-2.0
// Bounded JSON parsing for metadata read out of image archives (index.json, manifests, configs):
// a size cap, a nesting-depth cap and duplicate-key refusal (two readers that pick different
// duplicates could disagree about what an image is). nlohmann's exceptions stop here.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/result.h"

namespace sealrun {

inline constexpr size_t kMaxImageJsonBytes = 8 * 1024 * 1024;
inline constexpr int kMaxImageJsonDepth = 64;

// Parses `bytes` as one JSON document; `what` names it in errors.
Result<nlohmann::json> parse_bounded_json(std::string_view bytes, const std::string& what,
                                          size_t max_bytes = kMaxImageJsonBytes,
                                          int max_depth = kMaxImageJsonDepth);

}  // namespace sealrun
