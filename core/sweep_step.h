// SPDX-License-Identifier: Apache-2.0
// One action of `sealrun sweep` (or of a cleanup that reports like it): what was looked at, what
// became of it, and whether something sealrun owns is still left. Shared by every module that can
// leave something behind a killed controller (resource groups, mechanisms, owned spaces).
#pragma once

#include <string>

namespace sealrun {

struct SweepStep {
  std::string what;     // "cgroup-v1 group /sys/fs/cgroup/pids/sealrun-x.1.2"
  std::string outcome;  // "stopped (2 processes) and removed", "already gone", "refused: ..."
  bool left = false;    // true: something sealrun owns could not be removed
};

}  // namespace sealrun
