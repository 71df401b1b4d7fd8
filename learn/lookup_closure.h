// SPDX-License-Identifier: Apache-2.0
// From what a job looked up (lookup_tracer.h) to what its learned closure must hold, and back:
// which looked-up paths a learned view lacks.
//
// The learning sandbox shows the host trees at their own paths, so a path the job looked up is
// resolved on the host as the job's kernel resolved it (each link of the way recorded, as
// closure.h does for opened files) and what it ends at is pinned: a regular file by its content
// (even one that was only stat'ed: its size, mode and bytes are what the job may act on), a
// symbolic link (looked at without following it) by its target, a directory as a directory that
// exists in the view (empty unless something is pinned below it). A path that does not exist
// needs no pin: the view holds only pins, so the job sees the same absence. Other kinds (a FIFO or
// socket in /etc) are not pinned; the job sees them absent.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "learn/closure.h"
#include "learn/lookup_tracer.h"

namespace sealrun::learn {

// Adds to `closure` (kept sorted, each path once) what the lookups need. `roots`: the host trees
// the learning sandbox showed; `excluded`: the job's own places (nothing at or below them is
// added). More than `max_files` files in all is an error.
Status add_lookups(const ObservedLookups& looked, const std::vector<std::string>& roots,
                   const std::vector<std::string>& excluded, size_t max_files, Closure* closure);

// Drops every file, directory and link of `closure` at or below one of `places`, and every link
// above one (it would hide the place): what a pinned tree, the toolchain or a mount shows wins.
// Returns how many entries were dropped.
size_t drop_under_places(const std::vector<std::string>& places, Closure* closure);

// The looked-up paths (within `roots`) that exist on the host but that a view of `closure` and
// `places` (trees, toolchain, mounts: everything below them is there) does not show as the host
// does: a link of the way or the end missing. Sorted.
std::vector<std::string> lacking_in_view(const ObservedLookups& looked,
                                         const std::vector<std::string>& roots,
                                         const std::vector<std::string>& places,
                                         const Closure& closure);

}  // namespace sealrun::learn
