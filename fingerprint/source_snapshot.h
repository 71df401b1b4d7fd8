// A private snapshot of a plain source tree: the bytes a run verifies and then shows the job, so
// that a change on the host after verification cannot reach the job (ACCEPTANCE 27). Directories,
// regular files (content and permission bits, never set-id bits) and symlinks (as symlinks, never
// followed) are copied, each with the host's mtime (source_mtimes.h decides what the job sees);
// other kinds (FIFOs, sockets, devices) are left out — the manifest speaks only of regular files,
// and verifying the snapshot afterwards proves what it holds.
#pragma once

#include <string>

#include "core/result.h"

namespace sealrun {

// Copies `root` to `dest` (which must not exist), walking with directory descriptors (no path is
// re-resolved, no symlink followed), bounded by `max_entries`.
Status snapshot_tree(const std::string& root, const std::string& dest,
                     size_t max_entries = 1000000);

}  // namespace sealrun
