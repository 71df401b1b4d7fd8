// SPDX-License-Identifier: Apache-2.0
// From what a learning run opened (access_recorder.h) to the closure an admission pins: the host
// files, the directories listed, and the symbolic links the job needs to reach them.
//
// fanotify reports the file a job opened, never the links it resolved on the way (the kernel
// follows /usr/bin/cc -> /etc/alternatives/cc -> /usr/bin/gcc -> gcc-12 without an event). So the
// links are found by looking, not by watching: (1) the top-level compatibility links of a
// merged-/usr host (/bin -> usr/bin, /lib64 -> usr/lib64, ...), always; (2) every symlink in a
// directory that holds a recorded file or directory (or in one of its ancestors, or in a
// compatibility link's target), when the whole chain it starts ends at a recorded file or
// directory — each link of that chain, intermediate directory links included, is recorded. A link
// is thus kept only when everything it leads to is pinned anyway: it adds names, never content.
// A link the job followed to a file outside every such directory is missed; the job then fails
// in the learned view, visibly (docs/learning.md).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "learn/access_recorder.h"

namespace sealrun::learn {

struct HostLink {
  std::string path;    // absolute, as the job named it
  std::string target;  // readlink(2), as written (may be relative)
  bool operator<(const HostLink& o) const { return path < o.path; }
  bool operator==(const HostLink& o) const { return path == o.path && target == o.target; }
};

struct Closure {
  std::vector<std::string> files;  // regular files, absolute, sorted
  std::vector<HostLink> links;     // sorted by path
  std::vector<std::string> dirs;   // directories listed, sorted
};

struct ClosureLimits {
  size_t max_files = 200000;
  // Directory entries looked at while finding links (a bound on the work, not on the result).
  size_t max_scanned_entries = 2000000;
};

// `roots`: the host trees the learning sandbox showed (only paths within them are kept). A file
// recorded that is no longer a regular file on the host is an error, as is going over a limit.
Result<Closure> build_closure(const ObservedAccess& seen, const std::vector<std::string>& roots,
                              const ClosureLimits& limits);

// Resolves `path` component by component as the kernel would (at most 40 links), appending each
// symlink met to `chain`; returns the final path (which need not exist).
Result<std::string> resolve_recording_links(const std::string& path, std::vector<HostLink>* chain);

}  // namespace sealrun::learn
