// SPDX-License-Identifier: Apache-2.0
// The shared verbs of every mechanism (mechanism.h): spawn's common re-check, and the defaults.
#include "containment/mechanism.h"

#include <fmt/format.h>
#include <unistd.h>

#include "containment/grant.h"
#include "containment/resgroup/resource_group.h"
#include "containment/view_plan.h"

namespace sealrun {

Result<std::unique_ptr<ContainedJob>> Mechanism::spawn(const Grant& grant,
                                                       resgroup::ResourceGroup* group,
                                                       const JobIo& io) {
  // The group dimensions are only real if a group was handed in.
  GroupCapabilities groups;
  groups.memory = group != nullptr;
  groups.process_count = group != nullptr;
  SEALRUN_TRY(recheck_grant(grant, probe(), groups));
  return start(grant, group, io);
}

Result<std::vector<ViewEntry>> Mechanism::own_view_entries(const ContainmentSpec&) {
  return std::vector<ViewEntry>{};
}

std::map<std::string, std::string> Mechanism::journal_locators(const ContainmentSpec&) const {
  return {};
}

ExitStatus status_from_shell_convention(const ExitStatus& status) {
  ExitStatus out = status;
  if (out.signal == 0 && out.code > 128 && out.code <= 128 + 64) {
    out.signal = out.code - 128;
    out.code = -1;
  }
  return out;
}

std::string default_short_link_dir() { return fmt::format("/tmp/sealrun-links-{}", ::geteuid()); }

std::vector<SweepStep> Mechanism::sweep_strays(const std::vector<StrayDir>&) { return {}; }

ViewRoot Mechanism::view_root() const { return ViewRoot::kEmptyTmpfs; }

}  // namespace sealrun
