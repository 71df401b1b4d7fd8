// SPDX-License-Identifier: Apache-2.0
// Dimension names and DimensionSet helpers: see dimension.h.
#include "core/dimension.h"

#include <array>

namespace sealrun {

namespace {
constexpr std::array<std::string_view, kDimensionCount> kNames = {
    "filesystem", "process_tree",  "wall_clock", "network",
    "memory",     "process_count", "syscalls",   "capabilities",
};
}  // namespace

std::string_view dimension_name(Dimension d) { return kNames[static_cast<size_t>(d)]; }

std::optional<Dimension> parse_dimension(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return static_cast<Dimension>(i);
  return std::nullopt;
}

DimensionSet DimensionSet::all() {
  DimensionSet s;
  for (int i = 0; i < kDimensionCount; ++i) s.insert(static_cast<Dimension>(i));
  return s;
}

std::vector<Dimension> DimensionSet::list() const {
  std::vector<Dimension> out;
  for (int i = 0; i < kDimensionCount; ++i)
    if (contains(static_cast<Dimension>(i))) out.push_back(static_cast<Dimension>(i));
  return out;
}

std::vector<std::string> DimensionSet::names() const {
  std::vector<std::string> out;
  for (auto d : list()) out.emplace_back(dimension_name(d));
  return out;
}

std::string DimensionSet::joined() const {
  std::string out;
  for (const auto& n : names()) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

}  // namespace sealrun
