// SPDX-License-Identifier: Apache-2.0
// Loads libcrypto (core/crypto_library.h) before any command that may hash or sign runs, and stops
// that command with the loader's error when it cannot: a missing or wrong libcrypto is then one
// clear message and exit code at the start, never a failure in the middle of a walk or a run, and
// Sha256 — which has no way to return an error — always finds the library loaded.
//
// The commands that never touch a digest are listed here and skip the load: `census` (sizes and
// counts) and the hidden `__generate` (man page, completion). `--version` and `--help` stop in the
// parser before any command runs. Every other command loads it, so a new command is safe by
// default; the list only buys start-up time, and tests/core/crypto_library_cli_test.cc checks both
// sides.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "core/crypto_library.h"
#include "core/exit_codes.h"

namespace sealrun::cli {
namespace {

constexpr std::array<std::string_view, 2> kCommandsWithoutDigests = {"census", "__generate"};

}  // namespace

void load_crypto_before_commands(CLI::App& app) {
  // The root's parse-complete callback runs after the command line is parsed and before the chosen
  // sub-command's own callback (CLI11 App::run_callback).
  app.parse_complete_callback([&app] {
    for (const CLI::App* command : app.get_subcommands()) {
      const std::string& name = command->get_name();
      if (std::find(kCommandsWithoutDigests.begin(), kCommandsWithoutDigests.end(), name) !=
          kCommandsWithoutDigests.end())
        continue;
      auto api = crypto_api();
      if (api.ok()) continue;
      // The whole command ("key generate"), as its own messages name it.
      std::string path = name;
      for (const CLI::App* sub = command; !sub->get_subcommands().empty();) {
        sub = sub->get_subcommands().front();
        path += " " + sub->get_name();
      }
      print_error(path, api.error());
      // `run`: its pins cannot be checked, so nothing is admitted or run (docs/contract.md exit 3).
      throw CLI::RuntimeError(name == "run" ? kExitAdmissionRefused : kExitFailure);
    }
  });
}

}  // namespace sealrun::cli
