// SPDX-License-Identifier: Apache-2.0
// A whole string as one non-negative decimal number: the one parser for the numbers the kernel and
// the host write as text (/proc, cgroup files, /etc/subuid, pids in names). Nothing else is
// accepted — no sign, no spaces, no trailing text, no empty string — and a value that does not
// fit T is no value, so a malformed or hostile line never reads as 0.
#pragma once

#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>

namespace sealrun {

template <typename T>
std::optional<T> parse_decimal(std::string_view s) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace sealrun
