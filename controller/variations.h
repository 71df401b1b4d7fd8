// SPDX-License-Identifier: Apache-2.0
// What `sealrun rebuild --vary LIST` changes about the job's world, with reprotest's names
// (docs/rebuild.md): parsing the list, and applying it to the plan's ContainmentSpec as plain data.
// Pure: the one variation that is an effect on the controller itself (num_cpus, its CPU
// affinity, which everything it starts inherits) is made by the rebuild command, not here.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "containment/spec.h"
#include "core/result.h"

namespace sealrun::run {

struct Variations {
  bool hostname = false, umask = false, locale = false, timezone = false, build_path = false,
       num_cpus = false, user_id = false;
  // The umask the job would inherit otherwise (the controller's; the caller reads it).
  uint32_t base_umask = 0022;
  unsigned cpus_used = 0;  // num_cpus: how many CPUs the controller kept (0: could not vary)
  bool any() const;
};

// The names --vary accepts, in the order docs/rebuild.md explains them ("all" is every one).
inline constexpr std::string_view kVariationNames[] = {
    "hostname", "umask", "locale", "timezone", "build_path", "num_cpus", "user_id"};

// "hostname,umask" / "all" / "" → Variations; an unknown name is refused, naming it and the known
// ones (`time` is refused with why: sealrun does not fake the clock).
Result<Variations> parse_variations(std::string_view list);

// The values a varied run uses (so tests and docs name them once).
inline constexpr std::string_view kVariedHostname = "sealrun-rebuild";
inline constexpr uint32_t kVariedUmask = 0002;  // reprotest's; the usual is 0022
inline constexpr std::string_view kVariedLocale = "fr_CH.UTF-8";
inline constexpr std::string_view kVariedTimezone = "GMT-14";  // 14 hours east of UTC
inline constexpr std::string_view kVariedBuildRoot = "/build/sealrun-rebuild";
inline constexpr uint32_t kVariedUid = 4242;

// The umask a varied run uses: reprotest's 0002, or 0022 when the controller's is 0002 already.
uint32_t varied_umask(uint32_t controller_umask);

// Changes `spec` (hostname, umask, environment, the mount at `source_target` and the working
// directory below it, the job's uid) as `v` asks.
void apply_variations(const Variations& v, const std::string& source_target, ContainmentSpec& spec);

// One record per variation asked for, {name, how}, for the rebuild's receipt and its report; how
// says what was changed and where it cannot apply (e.g. user_id under podman).
nlohmann::json describe_variations(const Variations& v);

}  // namespace sealrun::run
