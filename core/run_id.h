// SPDX-License-Identifier: Apache-2.0
// The one rule for run ids: they name directories, cgroups, systemd units and container labels,
// so they are 1 to 64 characters of [A-Za-z0-9._-], and never "." or "..".
#pragma once

#include <string_view>

namespace sealrun {

inline constexpr size_t kMaxRunIdBytes = 64;
inline constexpr std::string_view kRunIdRule =
    "1 to 64 characters from A-Z a-z 0-9 . _ -, not . or ..";

constexpr bool is_valid_run_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxRunIdBytes || id == "." || id == "..") return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace sealrun
