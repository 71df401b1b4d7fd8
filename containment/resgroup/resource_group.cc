// SPDX-License-Identifier: Apache-2.0
// Choosing a resource-group back end: probing what this host offers (systemd over sd-bus, then a
// delegated cgroup v2 subtree, then cgroup v1), and creating the group with the strongest one that
// works. A back end whose probe fails (or throws) is simply unavailable; creation falls through to
// the next one and, if all fail, the error lists why each was not used.
#include "containment/resgroup/resource_group.h"

#include <fmt/format.h>

#include "containment/resgroup/cgroup_v1.h"
#include "containment/resgroup/cgroup_v2.h"
#include "containment/resgroup/systemd_scope.h"

namespace sealrun::resgroup {

std::string_view backend_name(Backend b) {
  switch (b) {
    case Backend::kSystemd:
      return "systemd";
    case Backend::kCgroupV2:
      return "cgroup-v2";
    case Backend::kCgroupV1:
      return "cgroup-v1";
    case Backend::kNone:
      break;
  }
  return "none";
}

namespace {

BackendProbe guarded_probe(Backend b) {
  try {
    switch (b) {
      case Backend::kSystemd:
        return probe_systemd();
      case Backend::kCgroupV2:
        return probe_cgroup_v2();
      case Backend::kCgroupV1:
        return probe_cgroup_v1();
      case Backend::kNone:
        break;
    }
  } catch (const std::exception& e) {
    BackendProbe p;
    p.backend = b;
    p.why = fmt::format("probe failed: {}", e.what());
    return p;
  }
  BackendProbe p;
  p.why = "no back end";
  return p;
}

Result<std::unique_ptr<ResourceGroup>> create_with(Backend b, const std::string& run_id,
                                                   const GroupLimits& limits) {
  switch (b) {
    case Backend::kSystemd:
      return create_systemd_group(run_id, limits);
    case Backend::kCgroupV2:
      return create_cgroup_v2_group(run_id, limits);
    case Backend::kCgroupV1:
      return create_cgroup_v1_group(run_id, limits);
    case Backend::kNone:
      break;
  }
  return Error::make("back end 'none' cannot create a resource group");
}

constexpr Backend kStrongestFirst[] = {Backend::kSystemd, Backend::kCgroupV2, Backend::kCgroupV1};

}  // namespace

void settle_effective(LimitReadback& l, const std::string& own_path,
                      const std::optional<std::pair<uint64_t, std::string>>& ancestor) {
  if (ancestor && (!l.observed || ancestor->first < *l.observed)) {
    l.effective = ancestor->first;
    l.effective_set_by = ancestor->second;
    l.note += fmt::format("; an ancestor group ({}) sets a lower limit, {}, which is what binds",
                          ancestor->second, ancestor->first);
  } else {
    l.effective = l.observed;
    l.effective_set_by = own_path;
  }
}

std::vector<BackendProbe> probe_backends() {
  std::vector<BackendProbe> out;
  for (Backend b : kStrongestFirst) {
    BackendProbe p = guarded_probe(b);
    p.backend = b;
    out.push_back(std::move(p));
  }
  return out;
}

Result<std::unique_ptr<ResourceGroup>> create_group(const std::string& run_id,
                                                    const GroupLimits& limits,
                                                    std::optional<Backend> preferred) {
  if (preferred) {
    return create_with(*preferred, run_id, limits)
        .context(fmt::format("create a {} resource group", backend_name(*preferred)));
  }
  return create_group(run_id, limits, probe_backends());
}

Result<std::unique_ptr<ResourceGroup>> create_group(const std::string& run_id,
                                                    const GroupLimits& limits,
                                                    const std::vector<BackendProbe>& probes) {
  std::string why;
  for (const BackendProbe& p : probes) {
    if (!p.available) {
      why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", backend_name(p.backend), p.why);
      continue;
    }
    auto g = create_with(p.backend, run_id, limits);
    if (g) return g;
    why += fmt::format("{}{}: available but creating the group failed: {}", why.empty() ? "" : "; ",
                       backend_name(p.backend), g.error().message());
  }
  return Error::make("no resource-group back end could create a group: " + why);
}

}  // namespace sealrun::resgroup
