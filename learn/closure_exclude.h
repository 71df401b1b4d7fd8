// SPDX-License-Identifier: Apache-2.0
// What learning leaves out of a learned closure, whatever the command opened (docs/learning.md,
// "Never learned"): the job's generated /etc files (core/generated_etc.h: sealrun makes them for
// every run, so the host's are never the job's), and each `admit freeze --learn-exclude PATH` a
// site gives — what it decides is not part of a build (a CA bundle with the network off, a
// machine-id). Everything at or below an excluded path goes: recorded files and directories
// before the links are looked for (so no link is kept for their sake), and links found at or below
// it after. Pure: sets of paths in, sets of paths out, with a count per exclusion.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/result.h"
#include "learn/access_recorder.h"
#include "learn/closure.h"

namespace sealrun::learn {

struct Exclusion {
  std::string path;
  bool generated = false;                 // one of the job's generated /etc files, not the caller's
  size_t files = 0, links = 0, dirs = 0;  // closure entries it removed
  size_t removed() const { return files + links + dirs; }
};

// A --learn-exclude PATH must be absolute and normalised: no empty, "." or ".." component, no
// trailing "/", and not "/" itself. The error names the path and what to write instead.
Status check_exclude_path(const std::string& path);

// The generated /etc paths first, then `caller` (each checked; a repeated path is kept once).
Result<std::vector<Exclusion>> learning_exclusions(const std::vector<std::string>& caller);

// Removes from `seen` the files and directories at or below an exclusion, counting each against
// the first exclusion that holds it.
void exclude_observed(ObservedAccess& seen, std::vector<Exclusion>& exclusions);

// Removes from `closure` the files, directories and links at or below an exclusion (counted so).
void exclude_closure(Closure& closure, std::vector<Exclusion>& exclusions);

}  // namespace sealrun::learn
