// SPDX-License-Identifier: Apache-2.0
// Shell steps for the packaging and CI tests: a bash script run to completion with its output
// captured, and the paths of the tree under test (the source and build directories).
#pragma once

#include <cstdint>
#include <string>

#include "core/process.h"

namespace sealrun::testing {

// Runs `script` with `bash -c` under `set -euo pipefail` in `cwd` (empty: ours). A failure to
// start it is a test failure; the result is returned either way.
Captured shell(const std::string& script, const std::string& cwd = "", int64_t timeout_ms = 300000);

// Single-quoted for bash.
std::string shell_quote(const std::string& s);

inline std::string source_dir() { return SEALRUN_SOURCE_DIR; }
inline std::string binary_dir() { return SEALRUN_BINARY_DIR; }
inline std::string sealrun_path() { return binary_dir() + "/sealrun"; }

}  // namespace sealrun::testing
