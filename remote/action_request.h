// SPDX-License-Identifier: Apache-2.0
// A remote-execution action as bb_worker hands it over (buildbarn.runner.RunRequest), checked and
// turned into plain values before anything touches the disk: every path relative to the build
// directory and normal (no "..", no empty or "." components, no control characters), no NUL in
// any string, argument and environment lists bounded, variable names that a job environment can
// hold. Pure: the unit tests read it without a server, a build directory or a sandbox.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/result.h"

namespace sealrun::remote {

// The fields of buildbarn.runner.RunRequest, as strings (so this file needs no protobuf).
struct ActionFields {
  std::vector<std::string> arguments;
  std::map<std::string, std::string> environment_variables;
  std::string working_directory;      // relative to the input root; may be empty
  std::string stdout_path;            // relative to the build directory
  std::string stderr_path;            // relative to the build directory
  std::string input_root_directory;   // relative to the build directory
  std::string temporary_directory;    // relative to the build directory; may be empty
  std::string server_logs_directory;  // relative to the build directory
};

// Bounds on what one action may ask for. The admission that carries it is at most 1 MiB and must
// also hold the input root's manifest, so the command line gets a fixed share of that.
inline constexpr size_t kMaxArguments = 4096;
inline constexpr size_t kMaxEnvironment = 255;          // the admission holds 256, TMPDIR included
inline constexpr size_t kMaxCommandBytes = 256 * 1024;  // arguments + environment, all bytes

// The action, checked: what the admission and the run are built from.
struct CheckedAction {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // SOURCE_DATE_EPOCH taken out (see source_date_epoch)
  int64_t source_date_epoch = 0;           // from the action's SOURCE_DATE_EPOCH, else 0
  std::string working_directory;           // relative to the input root; may be empty
  std::string cwd;                         // inside the job: source_mount[/working_directory]
  std::string stdout_path, stderr_path, input_root, temporary_directory, server_logs;
};

// Checks `fields`; the error names the field and what is wrong with it. `source_mount` is where
// the input root appears in the job ("/src"). TMPDIR is set to `job_tmp` unless the action sets
// it: the host's temporary_directory is not mounted (the job has a private tmp of its own).
Result<CheckedAction> check_action(const ActionFields& fields,
                                   const std::string& source_mount = "/src",
                                   const std::string& job_tmp = "/tmp");

// Every other path of the request (stdout_path, stderr_path, server_logs_directory,
// temporary_directory) lies in the action's own directory — the parent of its input root, which
// therefore may not be the build directory itself — and not in or around the input root: a request
// cannot create or open anything in another action's directory (its running input root above
// all). Paths are already normal (check_build_path).
Status check_confined(const ActionFields& fields);

// The action's directory (the parent of a valid input_root_directory), which the runner claims for
// the action while it runs; "" when the input root is not valid or has no parent of its own.
std::string action_directory(const ActionFields& fields);

// A path relative to the build directory, as the runner protocol spells them: non-empty unless
// `may_be_empty`, normal, and bounded. Also used for CheckReadinessRequest.path.
Status check_build_path(const std::string& field, const std::string& path,
                        bool may_be_empty = false);

}  // namespace sealrun::remote
