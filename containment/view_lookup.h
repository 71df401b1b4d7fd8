// SPDX-License-Identifier: Apache-2.0
// Where a path of the job's view comes from on the host, before the job exists (issue 29 part 6):
// the path resolved the way the job's kernel will resolve it, component by component over the
// planned view (view_plan.h) — a link entry followed, a mount's host tree read (its symlinks
// followed within the view, an absolute one from the view's root), a closure file or directory
// taken as it is, a directory that only holds deeper entries made by the mechanism.
//
// Only an empty-tmpfs root (bwrap's) is resolved: everything the job can see is an entry. Where the
// view's bytes are not the host's to read (tmp, proc, dev, a writable place, an unreadable host
// directory) the answer is kUnknown, never kMissing: a caller refuses a run only on a certain
// absence.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "containment/spec.h"

namespace sealrun {

struct ViewLookup {
  enum class Found { kFile, kDirectory, kMissing, kUnknown };
  Found found = Found::kUnknown;
  std::string job_path;   // the path resolved, links followed (kFile, kDirectory)
  std::string host_path;  // kFile: where its bytes are on the host
};

// `job_path` absolute; `view` as plan_view(spec, ViewRoot::kEmptyTmpfs) returns it.
ViewLookup lookup_in_view(const std::vector<ViewEntry>& view, std::string_view job_path);

}  // namespace sealrun
