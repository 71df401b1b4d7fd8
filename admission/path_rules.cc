// SPDX-License-Identifier: Apache-2.0
// Path and name spelling rules: see path_rules.h.
#include "admission/path_rules.h"

#include <fmt/format.h>

namespace sealrun::admission {

namespace {

// Checks the '/'-separated components of a path without its leading '/'.
std::optional<std::string> component_problem(std::string_view rest) {
  size_t start = 0;
  while (true) {
    size_t end = rest.find('/', start);
    std::string_view c = rest.substr(start, end == std::string_view::npos ? end : end - start);
    if (c.empty()) return std::string("has an empty component (\"//\" or a trailing '/')");
    if (c == ".") return std::string("has a \".\" component; write the path without it");
    if (c == "..") return std::string("has a \"..\" component, which could escape its root");
    if (end == std::string_view::npos) return std::nullopt;
    start = end + 1;
  }
}

std::optional<std::string> text_problem(std::string_view path) {
  if (path.empty()) return std::string("is empty");
  if (path.size() > kMaxPathBytes)
    return fmt::format("is {} bytes long, over the limit of {}", path.size(), kMaxPathBytes);
  for (unsigned char c : path)
    if (c < 0x20 || c == 0x7f) return std::string("contains a control character");
  return std::nullopt;
}

}  // namespace

std::optional<std::string> absolute_path_problem(std::string_view path) {
  if (auto why = text_problem(path)) return why;
  if (path[0] != '/') return fmt::format("\"{}\" is relative; an absolute path is required", path);
  if (path == "/") return std::nullopt;
  if (auto why = component_problem(path.substr(1))) return fmt::format("\"{}\" {}", path, *why);
  return std::nullopt;
}

std::optional<std::string> relative_path_problem(std::string_view path) {
  if (auto why = text_problem(path)) return why;
  if (path[0] == '/')
    return fmt::format("\"{}\" is absolute; a path relative to the tree is required", path);
  if (auto why = component_problem(path)) return fmt::format("\"{}\" {}", path, *why);
  return std::nullopt;
}

bool is_env_name(std::string_view name) {
  if (name.empty() || name.size() > 256) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (!alpha && !(digit && i > 0)) return false;
  }
  return true;
}

bool paths_overlap(std::string_view a, std::string_view b) {
  if (a == b) return true;
  auto under = [](std::string_view inner, std::string_view outer) {
    if (outer == "/") return true;
    return inner.size() > outer.size() && inner.substr(0, outer.size()) == outer &&
           inner[outer.size()] == '/';
  };
  return under(a, b) || under(b, a);
}

}  // namespace sealrun::admission
