// SPDX-License-Identifier: Apache-2.0
// The canonical layout of admission bytes (keys sorted, two-space indent, array members one per
// line, one trailing newline) for any JSON value, so that fields added on top of an admission's
// JSON (admit freeze --learn's closure) are written exactly as canonical_admission_bytes() writes
// the rest.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace sealrun::admission {

std::string canonical_json_bytes(const nlohmann::json& doc);

}  // namespace sealrun::admission
