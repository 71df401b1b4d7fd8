// SPDX-License-Identifier: Apache-2.0
// `sealrun probe [--json]`: what this host can enforce. For each containment mechanism the
// registry knows it reports presence, version and, per dimension, whether it
// is enforceable here and why — every verdict comes from the mechanism's own probe, which starts a
// throwaway sandbox and reads back what it got. Then the resource-group back ends and the cgroup
// mode sealrun would use. Exit 0 means the probe ran (not that everything is available).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "containment/mechanism_registry.h"
#include "containment/probe_json.h"
#include "containment/resgroup/resource_group.h"
#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "controller/common/host_config.h"
#include "core/exit_codes.h"

namespace sealrun::cli {
namespace {

// Every mechanism sealrun knows (the registry's order).
std::vector<std::unique_ptr<Mechanism>> every_mechanism() {
  std::vector<std::unique_ptr<Mechanism>> out;
  for (MechanismKind kind : all_mechanisms())
    if (auto m = make_mechanism(kind, mechanism_context())) out.push_back(std::move(*m));
  return out;
}

nlohmann::json mechanism_json(const MechanismProbe& p) { return probe_to_json(p); }

nlohmann::json backend_json(const resgroup::BackendProbe& b) {
  return {{"backend", std::string(resgroup::backend_name(b.backend))},
          {"available", b.available},
          {"why", b.why},
          {"memory_max", b.memory_max},
          {"memory_high", b.memory_high},
          {"swap_max", b.swap_max},
          {"pids_max", b.pids_max}};
}

// The back end create_group() would pick: the first available one (probe_backends() lists them
// strongest first).
std::string cgroup_mode(const std::vector<resgroup::BackendProbe>& backends) {
  for (const auto& b : backends)
    if (b.available) return std::string(resgroup::backend_name(b.backend));
  return "none";
}

void print_human(const std::vector<MechanismProbe>& mechs,
                 const std::vector<resgroup::BackendProbe>& backends) {
  for (const auto& p : mechs) {
    if (p.available)
      fmt::print("mechanism {}: available ({}, {})\n", p.name, p.version, p.path);
    else
      fmt::print("mechanism {}: UNAVAILABLE: {}\n", p.name, p.unavailable_reason);
    for (const auto& d : p.dimensions)
      fmt::print("  {:<14} {:<4} {}\n", dimension_name(d.dimension), d.enforceable ? "yes" : "no",
                 d.why);
  }
  fmt::print("resource groups:\n");
  if (backends.empty()) fmt::print("  (no back end reported)\n");
  for (const auto& b : backends) {
    std::vector<std::string> limits;
    if (b.memory_max) limits.emplace_back("memory_max");
    if (b.memory_high) limits.emplace_back("memory_high");
    if (b.swap_max) limits.emplace_back("swap_max");
    if (b.pids_max) limits.emplace_back("pids_max");
    fmt::print("  {:<10} {:<4} [{}] {}\n", resgroup::backend_name(b.backend),
               b.available ? "yes" : "no", fmt::join(limits, " "), b.why);
  }
  fmt::print("cgroup mode: {}\n", cgroup_mode(backends));
}

}  // namespace

void register_probe(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "probe",
      "Show what this host can enforce: each containment mechanism, each dimension (tried, not "
      "guessed) and why not, the resource-group back ends and the cgroup mode");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print one JSON document instead of a table");
  cmd->callback([json, exit_code] {
    std::vector<MechanismProbe> probes;
    for (auto& m : every_mechanism()) probes.push_back(m->probe());
    auto backends = resgroup::probe_backends();
    if (*json) {
      nlohmann::json doc;
      doc["mechanisms"] = nlohmann::json::array();
      for (const auto& p : probes) doc["mechanisms"].push_back(mechanism_json(p));
      doc["resource_groups"] = nlohmann::json::array();
      for (const auto& b : backends) doc["resource_groups"].push_back(backend_json(b));
      doc["cgroup_mode"] = cgroup_mode(backends);
      print_json(doc);
    } else {
      print_human(probes, backends);
    }
    *exit_code = kExitOk;
  });
}

}  // namespace sealrun::cli
