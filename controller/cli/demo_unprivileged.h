// SPDX-License-Identifier: Apache-2.0
// The demo without root (`sealrun demo` as an ordinary user). Learning needs fanotify, which needs
// root, so the closure cannot be learned; and pinning the host's /usr whole fails where /usr holds
// something only root may read (Debian: /usr/share/polkit-1/rules.d), and hashes gigabytes the
// compiler never reads. Instead the demo pins the directories the host's C compiler itself names
// (its driver's, its cc1's, its C library's, its include directories, its program interpreter's),
// after checking that this user can read every entry of them: the job sees those and nothing
// else. Before any of that, it checks that the containment the demo requires is available to this
// user at all: where a dimension is not (memory limits need a resource group that an ordinary user
// cannot create without a delegated cgroup), one line says which and what to do (exit 4).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "admission/freeze.h"
#include "containment/mechanism.h"
#include "controller/cli/demo_admission.h"
#include "core/dimension.h"
#include "core/result.h"

namespace sealrun::cli {

// The directories the job's view needs, each once, sorted: a directory inside another one of them
// is in the view already and dropped (pinned trees must not overlap).
std::vector<std::string> outermost_dirs(std::vector<std::string> dirs);

// The `#include <...>` directories from the stderr of `gcc -E -v -`.
std::vector<std::string> include_dirs_from(std::string_view verbose);

struct CompilerTrees {
  std::string toolchain;           // the directory of cc1 (pinned as the toolchain, in place)
  std::vector<std::string> trees;  // the other directories, pinned in place
};
// Asks `compiler` (a path) where its parts are and returns the directories that hold them, with
// `shell`'s directory (the build script's interpreter) and the program interpreter's.
Result<CompilerTrees> compiler_trees(const std::string& compiler, const std::string& shell);

// What a mechanism and the resource groups enforce of `required`, for each candidate mechanism
// that is available (its probe, and whether some group back end limits memory and process
// count): the dimensions the best one lacks, or nothing when one lacks none. Candidates that are
// unavailable are left to the run to report.
struct CandidateEnforcement {
  std::string mechanism;
  DimensionSet enforced;  // its own (probe.enforceable()) and the groups'
};
std::optional<DimensionSet> missing_dimensions(const std::vector<CandidateEnforcement>& candidates,
                                               const DimensionSet& required);

// The one line the demo prints when `missing` cannot be enforced as `user`.
std::string missing_containment_line(const DimensionSet& missing, const std::string& user);

// Probes what the run would (the candidate mechanisms, their probes cached in `state_dir`
// as the run's are, and the resource-group back ends): the dimensions of `required` no candidate
// enforces as this user, or nothing.
std::optional<DimensionSet> unprivileged_containment_gap(const std::string& state_dir,
                                                         const DimensionSet& required);

// Freezes the demo's admission from `freeze` (source, command, limits already set) with the
// compiler's directories pinned, each checked readable first.
Result<DemoAdmission> unprivileged_demo_admission(
    admission::FreezeRequest freeze, const std::function<void(const std::string&)>& say);

}  // namespace sealrun::cli
