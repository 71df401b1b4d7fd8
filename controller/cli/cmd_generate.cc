// SPDX-License-Identifier: Apache-2.0
// `sealrun __generate man|bash-completion|json-commands [--out FILE]` (hidden): renders the man
// page or the bash completion from the command line this very program parses (controller/
// cli_model.h); json-commands lists every command that takes --json, one per line, for the test
// that each prints one JSON document on every path (tests/controller/run_audit_output_test.cc). The
// build runs it once the executable is linked (controller/CMakeLists.txt), so the files always
// match the commands registered in main.cc, including commands added later.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "controller/cli/bash_completion.h"
#include "controller/cli/cli_model.h"
#include "controller/cli/commands.h"
#include "controller/cli/man_page.h"
#include "controller/cli/printing.h"
#include "core/atomic_write.h"
#include "core/exit_codes.h"
#include "core/version.h"

namespace sealrun::cli {

namespace {

void add_json_commands(const CliCommand& cmd, std::string& out) {
  for (const auto& o : cmd.options)
    for (const auto& n : o.names)
      if (n == "--json") out += join_words(cmd.path, " ") + "\n";
  for (const auto& sub : cmd.subcommands) add_json_commands(sub, out);
}

std::string json_commands(const CliCommand& model) {
  std::string out;
  add_json_commands(model, out);
  return out;
}

}  // namespace

void register_generate(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "__generate", "Write the man page or the bash completion generated from these commands");
  cmd->group("");  // hidden: a build step, not a user's command
  auto what = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  cmd->add_option("WHAT", *what, "man | bash-completion | json-commands")
      ->check(CLI::IsMember({"man", "bash-completion", "json-commands"}))
      ->required();
  cmd->add_option("--out", *out, "file to write (default: standard output)");
  // The root is walked when the command runs: by then every command is registered.
  CLI::App* root = &app;
  cmd->callback([root, what, out, exit_code] {
    CliCommand model = describe_cli(*root);
    std::string text =
        *what == "man" ? render_man_page(model, "sealrun " + std::string(sealrun_version().version))
        : *what == "json-commands" ? json_commands(model)
                                   : render_bash_completion(model);
    if (out->empty()) {
      fmt::print("{}", text);
      *exit_code = kExitOk;
      return;
    }
    if (auto st = write_file_atomic(*out, text); !st) {
      print_error("__generate", fmt::format("cannot write {}: {}", *out, st.error().message()));
      *exit_code = kExitFailure;
      return;
    }
    *exit_code = kExitOk;
  });
}

}  // namespace sealrun::cli
