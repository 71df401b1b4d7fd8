// SPDX-License-Identifier: Apache-2.0
// Pinning a learned closure: each host file hashed (the fingerprint module's parallel pool, each
// file opened beneath / without following links and checked to be the inode that was looked at),
// and the closure written into an admission as three fields, in the admission's canonical layout:
//
//   "host_files": [{"path": "/usr/bin/x86_64-linux-gnu-gcc-12", "sha256": "<hex>"}, ...]
//   "host_links": [{"path": "/usr/bin/gcc", "target": "gcc-12"}, ...]
//   "host_dirs":  ["/usr/include", ...]
//
// each sorted by path; host_files holds regular files only (docs/learning.md, docs/admission.md).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "learn/closure.h"

namespace sealrun::learn {

struct PinnedFile {
  std::string path;
  std::string sha256;  // lower-case hex
  uint64_t bytes = 0;
};

struct PinnedClosure {
  std::vector<PinnedFile> files;  // sorted by path
  std::vector<HostLink> links;
  std::vector<std::string> dirs;
  uint64_t bytes = 0;  // hashed in all
};

// Hashes every file of `closure`. More than `max_bytes` in all is refused before anything is
// hashed. `progress` (may be empty) is called now and then with (bytes done, bytes in all).
Result<PinnedClosure> pin_closure(const Closure& closure, uint64_t max_bytes,
                                  const std::function<void(uint64_t, uint64_t)>& progress = {});

// {"host_files": [...], "host_links": [...], "host_dirs": [...]}.
nlohmann::json closure_fields(const PinnedClosure& pinned);

// `base`: canonical admission bytes (freeze's); the same document with the closure's fields
// added, in canonical bytes. Refuses a base that already has any of the fields.
Result<std::string> learned_admission_bytes(std::string_view base, const PinnedClosure& pinned);

// learned_admission_bytes(), checked as freeze checks what it writes: within the admission's size
// bound, parsing strictly (a closure path the view refuses, e.g. one under /proc or over a mount,
// fails here, not at run), and writing back to the same bytes. Errors say nothing was written.
Result<std::string> checked_admission_bytes(std::string_view base, const PinnedClosure& pinned);

}  // namespace sealrun::learn
