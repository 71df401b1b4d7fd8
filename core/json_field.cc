// SPDX-License-Identifier: Apache-2.0
// Typed JSON members: see json_field.h.
#include "core/json_field.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace sealrun {
namespace {

Result<const nlohmann::json*> member(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return Error::make(fmt::format("field '{}': not in an object", key));
  auto it = object.find(key);
  if (it == object.end()) return Error::make(fmt::format("field '{}' is missing", key));
  return &*it;
}

}  // namespace

Result<std::string> json_string_field(const nlohmann::json& object, const char* key) {
  const nlohmann::json* v = SEALRUN_TRY(member(object, key));
  if (!v->is_string()) return Error::make(fmt::format("field '{}' is not a string", key));
  return v->get<std::string>();
}

Result<uint64_t> json_uint_field(const nlohmann::json& object, const char* key, uint64_t max) {
  const nlohmann::json* v = SEALRUN_TRY(member(object, key));
  if (!v->is_number_integer()) return Error::make(fmt::format("field '{}' is not an integer", key));
  // A value built in memory is signed even when it is not negative; a parsed one is unsigned.
  const bool negative = !v->is_number_unsigned() && v->get<int64_t>() < 0;
  if (negative || v->get<uint64_t>() > max)
    return Error::make(fmt::format("field '{}' is out of range ({})", key, v->dump()));
  return v->get<uint64_t>();
}

Result<std::vector<std::string>> json_strings_field(const nlohmann::json& object, const char* key) {
  const nlohmann::json* v = SEALRUN_TRY(member(object, key));
  if (!v->is_array()) return Error::make(fmt::format("field '{}' is not an array", key));
  std::vector<std::string> out;
  out.reserve(v->size());
  for (const auto& e : *v) {
    if (!e.is_string()) return Error::make(fmt::format("field '{}' holds a non-string", key));
    out.push_back(e.get<std::string>());
  }
  return out;
}

}  // namespace sealrun
