// SPDX-License-Identifier: Apache-2.0
// Typed reads of one member of a JSON object that sealrun itself wrote but must not trust (grant
// records, owned file system records): the member must be there and of the expected type, and a
// number must be a non-negative integer within the caller's bound. Each failure names the field
// ("field 'job_pid' is not an integer"), and nothing here throws: nlohmann's get<T>() would on a
// wrong type, so the type is checked first. Documents from outside (admissions, receipts) are read
// by their own parsers with JSON paths in every message (admission/json_fields.h).
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/result.h"

namespace sealrun {

Result<std::string> json_string_field(const nlohmann::json& object, const char* key);
// An integer in 0..max.
Result<uint64_t> json_uint_field(const nlohmann::json& object, const char* key,
                                 uint64_t max = std::numeric_limits<uint64_t>::max());
// An array whose every element is a string.
Result<std::vector<std::string>> json_strings_field(const nlohmann::json& object, const char* key);

}  // namespace sealrun
