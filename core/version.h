// SPDX-License-Identifier: Apache-2.0
// Which sealrun this is: the project version and the git commit the executable was built from.
// The values come from a source generated at build time (cmake/GenerateVersion.cmake), so a
// rebuild after a commit reports the new commit; `sealrun --version` prints them and receipts
// record them (`sealrun_version`). Linked as its own small library, sealrun_version, so that a
// new commit relinks only what reports the version.
#pragma once

#include <string>
#include <string_view>

namespace sealrun {

struct SealrunVersion {
  std::string_view version;  // the project version, "0.2.0"
  std::string_view commit;   // full hex commit id, or "unknown" (built from a tree without git)
  bool dirty = false;        // tracked files differed from `commit` when it was built
};

SealrunVersion sealrun_version();

// "0.2.0 (commit 0123abcd..., dirty)": what `sealrun --version` prints after "sealrun ".
std::string version_text(const SealrunVersion& v);

}  // namespace sealrun
