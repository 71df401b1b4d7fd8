// SPDX-License-Identifier: Apache-2.0
// `sealrun admit freeze --closure-from ADMISSION -- ARGV`: a learned admission for a new source
// and command without learning. The other admission's closure (host_files, host_links, host_dirs)
// is pinned again from the host as it is now — every file hashed again (the parallel,
// race-checked hashing of a learned closure), every link's target read again — and written into
// the admission this freeze makes, together with the other admission's toolchain and trees
// (hashed again too) unless this freeze names its own. Nothing is run, and no root is needed, so
// CI learns once per toolchain and freezes each commit in seconds; a commit that does not build
// is admitted and fails at run, honestly (docs/learning.md, "Closures for CI").
//
// What changed since the other admission was pinned is named (`changed`); what vanished is an
// error naming it, and nothing is written. Entries at or under a place this admission pins
// itself (a --tree's job path, the toolchain's mount path, the mounts) are dropped and counted:
// pinned trees win (learn/closure_carry.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "admission/freeze.h"
#include "core/result.h"

namespace sealrun::cli {

struct ClosureFromOptions {
  std::string from;                  // the admission whose closure is taken
  uint64_t max_bytes = 32ull << 30;  // hashed in all (--learn-max-bytes)
  std::function<void(uint64_t, uint64_t)> hash_progress;
};

struct ClosureFromAdmission {
  std::string path;
  std::string sha256;
  size_t files = 0, links = 0, dirs = 0;
  uint64_t bytes = 0;  // hashed
  size_t dropped = 0;  // closure entries left out for a place this admission pins itself
  std::vector<std::string> changed;  // files and links whose pin differs from the other's, sorted
  bool toolchain_carried = false;    // the other admission's toolchain was pinned again
  size_t trees_carried = 0;          // of its trees, pinned again
  int64_t hash_ms = 0;               // the closure looked at again and hashed
};

Result<ClosureFromAdmission> freeze_closure_from(const admission::FreezeRequest& request,
                                                 const ClosureFromOptions& options);

// The command's side: freezes, then prints each changed entry ("changed since A: PATH") and a
// summary on stderr and "SHA256  PATH" on stdout, or with `json` one document {path, sha256,
// host_files, host_links, host_dirs, hashed_bytes, dropped, changed, hash_ms}. The exit code.
int closure_from_command(const admission::FreezeRequest& request, const ClosureFromOptions& options,
                         bool json);

}  // namespace sealrun::cli
