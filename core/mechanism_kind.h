// SPDX-License-Identifier: Apache-2.0
// The containment mechanisms sealrun knows, as a closed set: their names are the spelling of
// admissions (`containment.mechanism`), `run --mechanism`, grants, grant records and receipts.
// Vocabulary only: what each mechanism is and does lives in containment/ (mechanism_registry.h).
// A new mechanism adds one line here and one line in that registry, besides its own files.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sealrun {

enum class MechanismKind : uint8_t { kBwrap, kPodman };

inline constexpr std::array<MechanismKind, 2> kMechanismKinds = {MechanismKind::kBwrap,
                                                                 MechanismKind::kPodman};

constexpr std::string_view mechanism_kind_name(MechanismKind kind) {
  switch (kind) {
    case MechanismKind::kBwrap:
      return "bwrap";
    case MechanismKind::kPodman:
      return "podman";
  }
  return "?";
}

constexpr std::optional<MechanismKind> parse_mechanism_kind(std::string_view name) {
  for (MechanismKind k : kMechanismKinds)
    if (mechanism_kind_name(k) == name) return k;
  return std::nullopt;
}

// "bwrap, podman": for messages that list what is accepted.
inline std::string mechanism_kind_names(std::string_view separator = ", ") {
  std::string out;
  for (MechanismKind k : kMechanismKinds) {
    if (!out.empty()) out += separator;
    out += mechanism_kind_name(k);
  }
  return out;
}

// A mechanism choice where "auto" (nullopt) lets sealrun pick the strongest available one.
using MechanismChoice = std::optional<MechanismKind>;
inline std::string_view mechanism_choice_name(MechanismChoice choice) {
  return choice ? mechanism_kind_name(*choice) : "auto";
}

}  // namespace sealrun
