// TEMPORARY while the back ends are written (issue 5): no back end is offered.
#include "containment/resgroup/resource_group.h"

namespace sealrun::resgroup {

std::string_view backend_name(Backend b) {
  switch (b) {
    case Backend::kSystemd: return "systemd";
    case Backend::kCgroupV2: return "cgroup-v2";
    case Backend::kCgroupV1: return "cgroup-v1";
    case Backend::kNone: break;
  }
  return "none";
}

std::vector<BackendProbe> probe_backends() { return {}; }

Result<std::unique_ptr<ResourceGroup>> create_group(const std::string&, const GroupLimits&,
                                                    std::optional<Backend>) {
  return Error::make("resource groups are not built yet");
}

}  // namespace sealrun::resgroup
