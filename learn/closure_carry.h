// SPDX-License-Identifier: Apache-2.0
// Taking a learned closure from one admission into another (`admit freeze --closure-from`), the
// pure part: which of its entries the new admission keeps, and what changed since it was pinned.
//
// The closure is the other admission's host_files, host_links and host_dirs. The new admission
// may pin a tree, a toolchain or mounts of its own where the closure has entries; those places
// win (their pin covers the bytes; the view cannot bind a single file inside a mount), so every
// closure entry at or under such a place — or, for a link, above it — is dropped and counted.
// What stays is hashed again on the host (closure_pins.h); the comparison with the old pins names
// every file whose bytes changed and every link whose target changed (docs/learning.md).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "admission/document.h"
#include "core/result.h"
#include "learn/closure.h"
#include "learn/closure_pins.h"

namespace sealrun::learn {

struct CarriedClosure {
  std::vector<admission::HostFilePin> files;  // as the other admission pinned them, sorted
  std::vector<admission::HostLinkPin> links;  // sorted by path
  std::vector<std::string> dirs;              // sorted
  size_t dropped = 0;                         // entries left out for a pinned place
};

// The places of the new admission's view that are pinned or the job's own: its mounts (source,
// output, scratch, tmp), its toolchain's mount path, each tree's job path, and /proc and /dev.
// Host tools are not among them: they are verified, not bound into the view, so a closure file
// at a host tool's path is still how the job sees that file.
std::vector<std::string> pinned_places(const admission::AdmissionDocument& doc);

// The closure of `from`, without the entries at or under any of `places` (a link also when it
// is above one: a path below a link would go through it).
CarriedClosure carry_closure(const admission::AdmissionDocument& from,
                             const std::vector<std::string>& places);

// What the hashing of the carried closure has to do: its file paths, and its links and
// directories as they are (the links' targets are read again by the caller).
Closure closure_of(const CarriedClosure& carried);

// Looks at each carried entry on the host again, following no link: every file must still be a
// regular file, every link a link (its target read again, into the result), every directory a
// directory. What vanished or is now something else is an error naming each entry (the first 20
// and a count), so nothing is pinned from a closure that no longer exists.
Result<Closure> look_again(const CarriedClosure& carried);

// The paths whose pin differs between `before` and `now` (a file's SHA-256, a link's target),
// sorted; `now` holds the same paths as `before`.
std::vector<std::string> changed_since(const CarriedClosure& before, const PinnedClosure& now);

}  // namespace sealrun::learn
