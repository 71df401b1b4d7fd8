// SPDX-License-Identifier: Apache-2.0
// FieldReader: see json_fields.h.
#include "admission/json_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "admission/document.h"
#include "admission/path_rules.h"
#include "core/hex.h"
#include "core/strict_json.h"

namespace sealrun::admission {

using nlohmann::json;

std::string json_type_of(const json& v) {
  if (v.is_number_integer()) return "an integer";
  if (v.is_number_float()) return "a fractional number";
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  return "null";
}

bool FieldReader::keys(const json& obj, const std::string& path,
                       std::initializer_list<const char*> required,
                       std::initializer_list<const char*> optional) const {
  bool good = true;
  for (const char* k : required)
    if (!obj.contains(k)) {
      problem_(json_path_join(path, k), "missing (required)");
      good = false;
    }
  for (const auto& item : obj.items()) {
    // A plain variable, not a structured binding: clang before 16 (our clang-tidy is 14) cannot
    // capture a binding in a lambda.
    const std::string& k = item.key();
    bool known = std::any_of(required.begin(), required.end(), [&](auto r) { return k == r; }) ||
                 std::any_of(optional.begin(), optional.end(), [&](auto o) { return k == o; });
    if (!known) {
      problem_(json_path_join(path, k), "unknown key (not part of " + std::string(kSchema) + ")");
      good = false;
    }
  }
  return good;
}

bool FieldReader::object(const json& v, const std::string& path) const {
  if (v.is_object()) return true;
  problem_(path, "expected an object, got " + json_type_of(v));
  return false;
}

bool FieldReader::array(const json& v, const std::string& path, size_t max) const {
  if (!v.is_array()) {
    problem_(path, "expected an array, got " + json_type_of(v));
    return false;
  }
  if (v.size() > max) {
    problem_(path, fmt::format("has {} elements, more than the limit of {}", v.size(), max));
    return false;
  }
  return true;
}

bool FieldReader::string(const json& v, const std::string& path, std::string* out) const {
  if (!v.is_string()) {
    problem_(path, "expected a string, got " + json_type_of(v));
    return false;
  }
  *out = v.get<std::string>();
  return true;
}

bool FieldReader::integer(const json& v, const std::string& path, uint64_t min, uint64_t max,
                          uint64_t* out) const {
  // A whole number too large for 64 bits is read as a float by the JSON parser: it is out of
  // range, not "fractional".
  if (v.is_number_float() && std::isfinite(v.get<double>()) &&
      v.get<double>() == std::floor(v.get<double>()) && std::fabs(v.get<double>()) >= 9.2e18) {
    problem_(path, fmt::format("expected an integer between {} and {}, got a number out of range "
                               "(about {:.3g})",
                               min, max, v.get<double>()));
    return false;
  }
  if (!v.is_number_integer()) {
    problem_(path, fmt::format("expected {} integer, got {}",
                               min > 0 ? "a positive" : "a non-negative", json_type_of(v)));
    return false;
  }
  if (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0) {
    problem_(path, fmt::format("expected an integer between {} and {}, got {}", min, max,
                               v.get<int64_t>()));
    return false;
  }
  uint64_t x = v.get<uint64_t>();
  if (x < min || x > max) {
    problem_(path, fmt::format("expected an integer between {} and {}, got {}", min, max, x));
    return false;
  }
  *out = x;
  return true;
}

bool FieldReader::abs_path(const json& v, const std::string& path, std::string* out) const {
  if (!string(v, path, out)) return false;
  if (auto why = absolute_path_problem(*out)) {
    problem_(path, *why);
    return false;
  }
  return true;
}

bool FieldReader::sha256(const json& v, const std::string& path, std::string* out) const {
  if (!string(v, path, out)) return false;
  if (!is_sha256_hex(*out)) {
    problem_(path, "expected a SHA-256 as 64 lower-case hex digits");
    return false;
  }
  return true;
}

}  // namespace sealrun::admission
