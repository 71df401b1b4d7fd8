// SPDX-License-Identifier: Apache-2.0
// A private snapshot of a plain source tree: the bytes a run verifies and then shows the job, so
// that a change on the host after verification cannot reach the job (ACCEPTANCE 27). Directories,
// regular files (content and permission bits, never set-id bits) and symlinks (as symlinks, never
// followed) are copied, with the host's mtimes where asked (source_mtimes.h decides what the job
// sees);
// other kinds (FIFOs, sockets, devices) are left out — the manifest speaks only of regular files,
// and verifying the snapshot afterwards proves what it holds.
#pragma once

#include <string>

#include "core/result.h"

namespace sealrun {

// What times the copies get: the host's (mtime, and as atime too: a source whose mtimes are
// pinned, "preserved"), or the time of the copy (one fixed time is stamped over them afterwards,
// so setting the host's first would be work thrown away).
enum class SnapshotTimes { kHost, kCopyTime };

// Copies `root` to `dest` (which must not exist), walking with directory descriptors (no path is
// re-resolved, no symlink followed), bounded by `max_entries`.
Status snapshot_tree(const std::string& root, const std::string& dest,
                     SnapshotTimes times = SnapshotTimes::kHost, size_t max_entries = 1000000);

}  // namespace sealrun
