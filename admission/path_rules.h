// SPDX-License-Identifier: Apache-2.0
// The spelling rules for paths and names inside an admission. A path is compared as text (pins
// are checked against exactly the path written), so only one spelling of each path is admitted:
// absolute, no ".", ".." or empty components, no trailing '/', no control characters. ".." is
// refused outright: it is how a manifest entry or a mount escapes the place it was meant for.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sealrun::admission {

inline constexpr size_t kMaxPathBytes = 4096;

// nullopt when `path` is an admissible absolute path, else what is wrong with it.
std::optional<std::string> absolute_path_problem(std::string_view path);
// nullopt when `path` is an admissible relative path ('/'-separated, as in a manifest).
std::optional<std::string> relative_path_problem(std::string_view path);
// [A-Za-z_][A-Za-z0-9_]*
bool is_env_name(std::string_view name);
// True when a == b or one is an ancestor directory of the other ("/a" and "/a/b", not "/ab").
bool paths_overlap(std::string_view a, std::string_view b);

}  // namespace sealrun::admission
