// SPDX-License-Identifier: Apache-2.0
// Running git on input we do not trust: a repository or bundle handed to sealrun may carry hooks,
// a config with fsmonitor/filter commands, replace refs or attributes that rewrite content. Every
// git command here runs with a cleared environment (no system or global config, HOME pointing
// nowhere, no GIT_DIR or template dir inherited from the caller), hooks disabled, replace objects
// ignored and every transport but local files refused. Also a scoped temporary directory for the
// throwaway clones that export and bundle reading need.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "core/temp_dir.h"

namespace sealrun {

// The environment every git command gets (exposed for tests and documentation).
std::vector<std::string> git_environment();
// The options placed before the git sub-command.
std::vector<std::string> git_safety_options();

// Runs `git <safety options> <args>` and returns its stdout; a non-zero exit is an error carrying
// git's stderr. `what` names the operation in errors.
Result<std::string> run_git(const std::vector<std::string>& args, const std::string& what);
// run_git() with the output trimmed to its first line (rev-parse and friends).
Result<std::string> run_git_line(const std::vector<std::string>& args, const std::string& what);

// True for a full object name: 40 (SHA-1) or 64 (SHA-256) lower-case hex digits.
bool is_git_object_name(const std::string& s);

}  // namespace sealrun
