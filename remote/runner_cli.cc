// SPDX-License-Identifier: Apache-2.0
// The options of `sealrun runner` (remote/runner_cli.h), shared by `sealrun` and `sealrun-runner`.
#include "remote/runner_cli.h"

#include <algorithm>
#include <thread>

#ifndef SEALRUN_RUNNER_FROM_BINDIR  // set by remote/CMakeLists.txt from the install layout
#define SEALRUN_RUNNER_FROM_BINDIR "../libexec/sealrun"
#endif

namespace sealrun::remote {

const char* const kRunnerDescription =
    "Serve Buildbarn's runner protocol (buildbarn.runner.Runner) for bb_worker: each "
    "remote-execution action is admitted (its input root pinned), run contained through the "
    "same pipeline as `sealrun run`, and receipted (the receipt goes to its server logs)";

void add_runner_options(CLI::App* cmd, RunnerArgs& a) {
  a.concurrency = std::max(1u, std::thread::hardware_concurrency());
  cmd->add_option("--listen", a.listen, "unix:/path/to/socket or HOST:PORT")->required();
  cmd->add_option("--build-dir", a.build_dir,
                  "the build directory shared with bb_worker (request paths are relative to it)")
      ->required();
  cmd->add_option("--state-dir", a.state_dir,
                  "holds results/<id>/ (receipts), owned/<id>/ and runner/<id>/admission.json")
      ->capture_default_str();
  cmd->add_option("--toolchain", a.toolchains,
                  "DIR[=JOB_PATH]: the toolchain every action's admission pins (read-only)")
      ->required();
  cmd->add_option("--tree", a.trees,
                  "HOST_DIR[=JOB_PATH]: a host tree every action's admission pins, read-only "
                  "(repeatable); actions see no other host path");
  cmd->add_option("--set", a.sets,
                  "KEY=VALUE for every action's admission: limits.*, containment.*, "
                  "mounts.output|scratch|tmp, expires_at");
  cmd->add_option("--concurrency", a.concurrency, "actions run at once (default: cores)")
      ->capture_default_str();
}

std::vector<std::string> runner_option_argv(const RunnerArgs& a) {
  std::vector<std::string> out{"--listen=" + a.listen, "--build-dir=" + a.build_dir,
                               "--state-dir=" + a.state_dir};
  for (const auto& t : a.toolchains) out.push_back("--toolchain=" + t);
  for (const auto& t : a.trees) out.push_back("--tree=" + t);
  for (const auto& s : a.sets) out.push_back("--set=" + s);
  out.push_back("--concurrency=" + std::to_string(a.concurrency));
  return out;
}

std::vector<std::string> runner_helper_candidates(const std::string& exe_dir) {
  return {exe_dir + "/sealrun-runner", exe_dir + "/" SEALRUN_RUNNER_FROM_BINDIR "/sealrun-runner"};
}

}  // namespace sealrun::remote
