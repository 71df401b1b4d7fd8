// SPDX-License-Identifier: Apache-2.0
// The mechanism table: see mechanism_registry.h.
#include "containment/mechanism_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "containment/bwrap.h"
#include "containment/podman.h"

namespace sealrun {
namespace {

struct MechanismEntry {
  MechanismKind kind;
  // Higher is stronger. Rootless podman runs the pinned image's own root; bwrap binds the host's
  // system read-only: with an image, podman is the stronger boundary.
  int strength;
  bool needs_image;
  std::function<std::unique_ptr<Mechanism>(const MechanismContext&)> make;
};

const std::vector<MechanismEntry>& table() {
  static const std::vector<MechanismEntry> kMechanismTable = {
      {MechanismKind::kBwrap, 1, false,
       [](const MechanismContext& c) {
         BwrapOptions o;
         o.job_user = c.job_user;
         o.probe_cache_dir = c.probe_cache_dir;
         if (!c.test_bwrap_path.empty()) o.bwrap_path = c.test_bwrap_path;
         return make_bwrap_mechanism(o);  // bwrap keeps nothing outside the owned root
       }},
      {MechanismKind::kPodman, 2, true,
       [](const MechanismContext& c) {
         PodmanOptions o;
         o.job_user = c.job_user;
         o.probe_dir = c.scratch_dir;
         o.link_dir = c.short_link_dir;
         return make_podman_mechanism(o);
       }},
  };
  return kMechanismTable;
}

std::string known_names() {
  std::string out;
  for (const auto& e : table())
    out += (out.empty() ? "" : ", ") + std::string(mechanism_kind_name(e.kind));
  return out;
}

// Every kind has a line (a unit test walks kMechanismKinds); a kind without one (a value cast
// from a number, a kind added without its line) is an error, never another mechanism.
Result<const MechanismEntry*> entry(MechanismKind kind) {
  for (const auto& e : table())
    if (e.kind == kind) return &e;
  return Error::make(fmt::format("no containment mechanism of kind {} is built in (known: {})",
                                 static_cast<int>(kind), known_names()));
}

}  // namespace

Result<std::unique_ptr<Mechanism>> make_mechanism(MechanismKind kind,
                                                  const MechanismContext& context) {
  const MechanismEntry* e = SEALRUN_TRY(entry(kind));
  return e->make(context);
}

std::vector<MechanismKind> learning_mechanisms(const MechanismContext& context) {
  std::vector<MechanismKind> out;
  for (const auto& e : table())
    if (e.make(context)->has_sandbox_ready_hook()) out.push_back(e.kind);
  return out;
}

std::vector<SweepStep> sweep_mechanism_strays(const MechanismContext& context,
                                              const std::vector<StrayDir>& dead_dirs) {
  std::vector<SweepStep> steps;
  for (const auto& e : table())
    for (auto& s : e.make(context)->sweep_strays(dead_dirs)) steps.push_back(std::move(s));
  return steps;
}

std::vector<MechanismKind> all_mechanisms() {
  std::vector<MechanismKind> out;
  for (const auto& e : table()) out.push_back(e.kind);
  return out;
}

Result<std::vector<MechanismKind>> mechanism_candidates(bool has_image, MechanismChoice admitted,
                                                        MechanismChoice requested) {
  if (requested) {
    std::string_view name = mechanism_kind_name(*requested);
    if (admitted && *admitted != *requested)
      return Error::make(fmt::format("--mechanism {}: the admission allows only {}", name,
                                     mechanism_kind_name(*admitted)));
    if (SEALRUN_TRY(entry(*requested))->needs_image && !has_image)
      return Error::make(fmt::format("--mechanism {}: the admission pins no image", name));
    return std::vector<MechanismKind>{*requested};
  }
  if (admitted) {
    if (SEALRUN_TRY(entry(*admitted))->needs_image && !has_image)
      return Error::make(fmt::format("the admission allows only {}, which needs a pinned image",
                                     mechanism_kind_name(*admitted)));
    return std::vector<MechanismKind>{*admitted};
  }
  std::vector<const MechanismEntry*> eligible;
  for (const auto& e : table())
    if (has_image || !e.needs_image) eligible.push_back(&e);
  std::stable_sort(eligible.begin(), eligible.end(),
                   [](const auto* a, const auto* b) { return a->strength > b->strength; });
  std::vector<MechanismKind> out;
  out.reserve(eligible.size());
  for (const auto* e : eligible) out.push_back(e->kind);
  return out;
}

}  // namespace sealrun
