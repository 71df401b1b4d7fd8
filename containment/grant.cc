// SPDX-License-Identifier: Apache-2.0
// acquire_grant() and recheck_grant(): the decision of what is enforced, kept apart from any
// mechanism's effects so that contract tests can drive it with fakes. The rules:
//   * mechanisms are asked strongest first; a probe that reports unavailable or throws is skipped
//     (recorded in `tried` with its reason);
//   * enforced = (what the mechanism enforces ∪ what the resource group enforces) ∩ requested — it
//     never exceeds the request and never names a dimension outside the known set;
//   * the strongest available mechanism that enforces every required dimension wins; if none
//     does, enforcing mode refuses (naming every missing dimension and every mechanism tried) and
//     report-only mode takes the strongest available one and records the shortfall;
//   * the spec (environment included) is copied into the grant, frozen.
#include "containment/grant.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <exception>

namespace sealrun {

DimensionSet MechanismProbe::enforceable() const {
  DimensionSet out;
  if (!available) return out;
  for (const auto& check : dimensions)
    if (check.enforceable) out.insert(check.dimension);
  return out;
}

GroupCapabilities group_capabilities(const std::vector<resgroup::BackendProbe>& probes) {
  GroupCapabilities groups;
  for (const auto& p : probes) {
    if (!p.available) continue;
    groups.memory = groups.memory || p.memory_max;
    groups.process_count = groups.process_count || p.pids_max;
    if (groups.backend.empty()) groups.backend = std::string(resgroup::backend_name(p.backend));
  }
  return groups;
}

DimensionSet group_dimensions(const GroupCapabilities& groups) {
  DimensionSet out;
  if (groups.memory) out.insert(Dimension::kMemory);
  if (groups.process_count) out.insert(Dimension::kProcessCount);
  return out;
}

namespace {

// A probe must not throw (mechanism.h), but a broken one must not take the controller down or,
// worse, be taken as available.
MechanismProbe safe_probe(Mechanism& m) {
  try {
    return m.probe();
  } catch (const std::exception& e) {
    MechanismProbe p;
    p.name = std::string(m.name());
    p.unavailable_reason = fmt::format("probe threw: {}", e.what());
    return p;
  } catch (...) {
    MechanismProbe p;
    p.name = std::string(m.name());
    p.unavailable_reason = "probe threw an unknown exception";
    return p;
  }
}

std::string or_none(const DimensionSet& s) { return s.empty() ? "none" : s.joined(); }

}  // namespace

DimensionSet enforced_dimensions(const MechanismProbe& probe, const GroupCapabilities& groups,
                                 const DimensionSet& requested) {
  if (!probe.available) return {};
  return (probe.enforceable() | group_dimensions(groups)) & requested & DimensionSet::all();
}

Result<Grant> acquire_grant(const ContainmentSpec& spec, const std::vector<Mechanism*>& mechanisms,
                            const GroupCapabilities& groups) {
  SEALRUN_TRY_CTX(validate_spec(spec), "containment spec rejected");

  struct Candidate {
    std::string name;
    DimensionSet enforced;
  };
  std::vector<Candidate> available;
  std::vector<std::string> tried;
  for (Mechanism* m : mechanisms) {
    if (m == nullptr) continue;
    MechanismProbe probe = safe_probe(*m);
    std::string name = probe.name.empty() ? std::string(m->name()) : probe.name;
    if (!probe.available) {
      tried.push_back(fmt::format(
          "{}: unavailable ({})", name,
          probe.unavailable_reason.empty() ? "no reason given" : probe.unavailable_reason));
      continue;
    }
    DimensionSet enforced = enforced_dimensions(probe, groups, spec.requested);
    DimensionSet missing = spec.required - enforced;
    tried.push_back(missing.empty() ? fmt::format("{}: enforces {}", name, or_none(enforced))
                                    : fmt::format("{}: enforces {}; missing required {}", name,
                                                  or_none(enforced), missing.joined()));
    available.push_back({name, enforced});
    if (missing.empty()) break;  // the strongest mechanism that covers the requirement wins
  }

  std::string tried_text =
      tried.empty() ? "no mechanism was offered" : fmt::format("{}", fmt::join(tried, "; "));
  if (available.empty())
    return Error::make(fmt::format(
        "containment refused: no containment mechanism is available (required: {}); tried: {}",
        or_none(spec.required), tried_text));

  const Candidate* chosen = nullptr;
  for (const auto& c : available)
    if ((spec.required - c.enforced).empty()) {
      chosen = &c;
      break;
    }
  if (chosen == nullptr) {
    if (spec.mode == GrantMode::kEnforcing) {
      // Name every dimension that some required set lacks under the strongest candidate, and
      // every mechanism that was tried.
      DimensionSet missing = spec.required - available.front().enforced;
      return Error::make(fmt::format(
          "containment refused: required dimension(s) {} cannot be enforced here; tried: {}",
          missing.joined(), tried_text));
    }
    chosen = &available.front();
  }

  Grant g;
  g.mechanism = chosen->name;
  g.mode = spec.mode;
  g.requested = spec.requested;
  g.required = spec.required;
  g.enforced = chosen->enforced;
  g.unenforced_required = spec.required - g.enforced;
  g.degraded = spec.requested - g.enforced;
  g.tried = std::move(tried);
  g.spec = spec;  // the frozen copy: env, mounts and limits as they were at acquisition
  if (!g.unenforced_required.empty())
    g.warnings.push_back(fmt::format(
        "report-only mode: running under {} although required dimension(s) {} are NOT enforced",
        g.mechanism, g.unenforced_required.joined()));
  return g;
}

Status recheck_grant(const Grant& grant, const MechanismProbe& probe,
                     const GroupCapabilities& groups) {
  auto refuse = [&](const std::string& why) {
    return Error::make(fmt::format("grant for run \"{}\" under {} refused at spawn: {}",
                                   grant.spec.run_id, grant.mechanism, why));
  };
  if (grant.mechanism != probe.name)
    return refuse(fmt::format("the grant names mechanism \"{}\" but this is \"{}\"",
                              grant.mechanism, probe.name));
  if (!probe.available)
    return refuse(
        fmt::format("the mechanism is no longer available ({})", probe.unavailable_reason));
  if (!validate_spec(grant.spec))
    return refuse(
        fmt::format("its spec is invalid: {}", validate_spec(grant.spec).error().message()));
  if (grant.requested != grant.spec.requested || grant.required != grant.spec.required ||
      grant.mode != grant.spec.mode)
    return refuse("its requested/required sets or mode differ from its frozen spec");
  if (!grant.enforced.subset_of(grant.requested))
    return refuse(fmt::format("it claims {} enforced that were never requested",
                              (grant.enforced - grant.requested).joined()));
  DimensionSet can = enforced_dimensions(probe, groups, grant.requested);
  if (!grant.enforced.subset_of(can))
    return refuse(fmt::format("it claims {} enforced, which the mechanism cannot enforce here",
                              (grant.enforced - can).joined()));
  if (grant.unenforced_required != grant.required - grant.enforced ||
      grant.degraded != grant.requested - grant.enforced)
    return refuse("its unenforced/degraded sets do not match what it enforces");
  if (grant.mode == GrantMode::kEnforcing && !grant.unenforced_required.empty())
    return refuse(fmt::format("enforcing mode, but required {} not enforced",
                              grant.unenforced_required.joined()));
  return ok_status();
}

}  // namespace sealrun
