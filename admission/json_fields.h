// SPDX-License-Identifier: Apache-2.0
// The typed field readers of the admission parsers (parse.cc, parse_view.cc): each checks one JSON
// value's type (and bound, or path and digest spelling) and, when it is wrong, reports one problem
// prefixed with the field's JSON path — never stopping, so a person sees every complaint at once.
#pragma once

#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

namespace sealrun::admission {

// Receives one problem: the JSON path of the field and what is wrong with it.
using ProblemSink = std::function<void(const std::string& path, const std::string& what)>;

// "an integer", "a string", ... for messages.
std::string json_type_of(const nlohmann::json& v);

class FieldReader {
 public:
  explicit FieldReader(ProblemSink problem) : problem_(std::move(problem)) {}

  // Missing required keys and keys the schema does not know.
  bool keys(const nlohmann::json& obj, const std::string& path,
            std::initializer_list<const char*> required,
            std::initializer_list<const char*> optional) const;
  bool object(const nlohmann::json& v, const std::string& path) const;
  bool array(const nlohmann::json& v, const std::string& path, size_t max) const;
  bool string(const nlohmann::json& v, const std::string& path, std::string* out) const;
  // A whole number within [min, max] (signed in a document built in memory, unsigned as read).
  bool integer(const nlohmann::json& v, const std::string& path, uint64_t min, uint64_t max,
               uint64_t* out) const;
  // A string that is an admissible absolute path (path_rules.h).
  bool abs_path(const nlohmann::json& v, const std::string& path, std::string* out) const;
  // 64 lower-case hex digits.
  bool sha256(const nlohmann::json& v, const std::string& path, std::string* out) const;

 private:
  ProblemSink problem_;
};

}  // namespace sealrun::admission
