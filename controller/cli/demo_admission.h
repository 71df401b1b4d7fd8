// SPDX-License-Identifier: Apache-2.0
// The demo's admission (`sealrun demo`): as root, the bundled example with the host C toolchain's
// closure learned once (`admit freeze --learn`, learn_freeze.h) and kept in the demo's directory,
// so that later demos verify the same pins (host_files by SHA-256) instead of learning again;
// without root (learning needs fanotify), the directories of the host's C compiler pinned instead
// (demo_unprivileged.h).
#pragma once

#include <functional>
#include <string>

#include "core/result.h"

namespace sealrun::cli {

struct DemoAdmission {
  std::string path;
  std::string sha256;
  bool learned = false;  // a learned closure (else the compiler's directories pinned as trees)
  bool reused = false;   // an admission learned by an earlier demo, for the same example
};

// `relearn`: learn again even when an earlier admission for `source` is there. `say` prints a
// step for a person (it is silent under --json).
Result<DemoAdmission> demo_admission(const std::string& source, const std::string& out_dir,
                                     const std::string& state_dir, bool relearn,
                                     const std::function<void(const std::string&)>& say);

}  // namespace sealrun::cli
