// SPDX-License-Identifier: Apache-2.0
// Taking the outputs off the run's result space. Where /out is a file system of the run's own
// (run_result_space.h), what the job left there is copied, after the job has ended, into
// results/<id>/out (on the state directory's file system) before the output walk records it: the
// results, outputs.jsonl and the receipt look exactly as if the job had written there.
//
// The tree is shaped by a hostile job, so the copy goes by directory descriptor (openat with
// O_NOFOLLOW, mkdirat/symlinkat/mknodat into directories we made), holds two directories open at a
// time and climbs back through ".." (checked by device and inode), so it is linear in the entries
// and a path far past PATH_MAX costs nothing special. Kept as the job left it: the kinds (files,
// directories, symlinks as symlinks, FIFOs and sockets), owners, permission bits and times; hard
// links (one file, many names) stay one file. A sparse file stays sparse (only its data extents
// are copied): the host never gets more bytes than the job's file system held, which is at most
// its bound. A device node (which a job cannot make: the file system is nodev and user namespaces
// cannot mknod) is refused.
#pragma once

#include <cstdint>

#include "controller/receipt/output_walk.h"
#include "core/result.h"

namespace sealrun::run {

struct CopyStats {
  uint64_t entries = 0;
  uint64_t bytes = 0;      // data bytes copied (holes left out)
  bool cut_short = false;  // stopped after max_entries: the rest was never copied
};

// Copies everything in `from_dirfd` into `to_dirfd` (an empty directory of ours), and the root's
// owner, mode and times onto it. Asks `stop` between files; an interruption is an error naming
// why. `max_depth` bounds the directories' nesting. After `max_entries` entries the copy stops
// (cut_short): by default one past what the output walk records, so the walk that follows still
// refuses the tree ("more than N entries") without the controller copying a job's flood of files
// first — 100,000 empty files took over a minute to copy on a busy machine, for nothing.
Status copy_result_tree(int from_dirfd, int to_dirfd, const StopCheck& stop, CopyStats* stats,
                        size_t max_depth = kMaxOutputPathBytes / 2,
                        size_t max_entries = kMaxOutputEntries + 1);

}  // namespace sealrun::run
