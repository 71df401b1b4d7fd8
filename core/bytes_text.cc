// SPDX-License-Identifier: Apache-2.0
// Byte counts for people: see bytes_text.h.
#include "core/bytes_text.h"

#include <fmt/format.h>

#include <iterator>

namespace sealrun {

std::string binary_size_text(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, kUnits[unit]);
}

}  // namespace sealrun
