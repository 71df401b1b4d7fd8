// SPDX-License-Identifier: Apache-2.0
// The command line of `sealrun runner`, defined once for both executables that parse it: the
// `sealrun` CLI (which lists it in --help, the man page and the bash completion, checks it, and
// then execs the helper) and the helper `sealrun-runner` itself, which serves. The helper is a
// separate executable so that `sealrun run` does not load gRPC, protobuf and abseil (~50 shared
// libraries, ~10 ms of every start) that only the runner uses. Nothing here links gRPC.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>
#include <vector>

namespace sealrun::remote {

// The options as given (the helper turns them into a RunnerConfig).
struct RunnerArgs {
  std::string listen;
  std::string build_dir;
  std::string state_dir = "./sealrun-state";
  std::vector<std::string> toolchains;  // DIR[=JOB_PATH]
  std::vector<std::string> trees;       // HOST_DIR[=JOB_PATH]
  std::vector<std::string> sets;        // KEY=VALUE
  size_t concurrency = 1;               // add_runner_options sets the default: the cores
};

extern const char* const kRunnerDescription;

// Adds --listen, --build-dir, --state-dir, --toolchain, --tree, --set and --concurrency to `cmd`.
void add_runner_options(CLI::App* cmd, RunnerArgs& args);

// The options again, as the helper's command line after its argv[0] (every option written out
// in the --name=VALUE form, so a value that starts with '-' stays a value).
std::vector<std::string> runner_option_argv(const RunnerArgs& args);

// Where the `sealrun` executable in directory `exe_dir` looks for the helper, in order: beside
// it (a build tree), then the install layout's libexec directory relative to bin/.
std::vector<std::string> runner_helper_candidates(const std::string& exe_dir);

}  // namespace sealrun::remote
