// SPDX-License-Identifier: Apache-2.0
// `sealrun runner ...` in the `sealrun` executable: the command line (remote/runner_cli.h) is
// parsed and checked here, so --help, the man page, the bash completion and usage errors are
// sealrun's own, and then the helper `sealrun-runner` is exec'd with the same options (same pid,
// so a supervisor's signals reach it). The helper holds gRPC; `sealrun` itself does not load it.
// It is looked for beside this executable (a build tree), then in ../libexec/sealrun/ (the
// install layout); missing, the command fails with exit 1 naming the paths it looked at.
#include <fmt/format.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "core/exit_codes.h"
#include "remote/runner_cli.h"

namespace sealrun::cli {
namespace {

std::string self_exe() {
  char buf[PATH_MAX];
  if (::realpath("/proc/self/exe", buf) == nullptr) return {};
  return buf;
}

int exec_helper(const remote::RunnerArgs& args) {
  std::string exe = self_exe();
  if (exe.empty()) {
    print_error("runner", fmt::format("cannot resolve /proc/self/exe: {}", std::strerror(errno)));
    return kExitFailure;
  }
  auto candidates = remote::runner_helper_candidates(exe.substr(0, exe.rfind('/')));
  for (const auto& helper : candidates) {
    if (::access(helper.c_str(), X_OK) != 0) continue;
    std::vector<std::string> words{helper};
    // The helper runs each action as `<this sealrun> run ...`: the same build as the command.
    words.push_back("--sealrun=" + exe);
    for (auto& w : remote::runner_option_argv(args)) words.push_back(std::move(w));
    std::vector<char*> argv;
    argv.reserve(words.size() + 1);
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    std::fflush(nullptr);
    ::execv(helper.c_str(), argv.data());
    print_error("runner", fmt::format("cannot start {}: {}", helper, std::strerror(errno)));
    return kExitFailure;
  }
  print_error("runner", fmt::format("the runner helper sealrun-runner is missing: looked for {} "
                                    "and {}; reinstall sealrun (or build the sealrun-runner "
                                    "target beside build/sealrun)",
                                    candidates[0], candidates[1]));
  return kExitFailure;
}

}  // namespace

void register_runner(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("runner", remote::kRunnerDescription);
  auto args = std::make_shared<remote::RunnerArgs>();
  remote::add_runner_options(cmd, *args);
  cmd->callback([args, exit_code] { *exit_code = exec_helper(*args); });
}

}  // namespace sealrun::cli
