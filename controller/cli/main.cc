// SPDX-License-Identifier: Apache-2.0
// sealrun's entry point: builds the command line from the registered sub-commands and maps a
// usage error to exit 2. No module below the controller exits or prints; this is where it happens.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <system_error>

#include "controller/cli/commands.h"
#include "controller/cli/json_failure.h"
#include "controller/cli/printing.h"
#include "core/exit_codes.h"
#include "core/stage_trace.h"
#include "core/version.h"

namespace {

int run_cli(CLI::App& app, int argc, char** argv) {
  int exit_code = sealrun::kExitOk;
  sealrun::cli::register_demo(app, &exit_code);
  sealrun::cli::register_probe(app, &exit_code);
  sealrun::cli::register_fingerprint(app, &exit_code);
  sealrun::cli::register_admit(app, &exit_code);
  sealrun::cli::register_run(app, &exit_code);
  sealrun::cli::register_receipt(app, &exit_code);
  sealrun::cli::register_census(app, &exit_code);
  sealrun::cli::register_sweep(app, &exit_code);
  sealrun::cli::register_key(app, &exit_code);
  sealrun::cli::register_ledger(app, &exit_code);
  sealrun::cli::register_rebuild(app, &exit_code);
  sealrun::cli::register_index(app, &exit_code);
  sealrun::cli::register_runner(app, &exit_code);
  sealrun::cli::register_generate(app, &exit_code);  // hidden; walks the commands above
  sealrun::cli::load_crypto_before_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a command stopped before it ran, its message printed
  } catch (const CLI::ParseError& e) {
    sealrun::cli::note_error_message(e.what());
    int rc = app.exit(e);
    return rc == 0 ? sealrun::kExitOk : sealrun::kExitUsage;
  } catch (const std::system_error& e) {
    // The reader went away (`sealrun receipt show ... | head`): not an error of ours. The command
    // has done its work (a run's receipt is written); its exit code stands.
    if (e.code().value() == EPIPE) return exit_code;
    throw;
  }
  return exit_code;
}

// Whether the command line asks for `sealrun run` (its first word that is not an option).
bool is_run_command(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] != '-') return std::strcmp(argv[i], "run") == 0;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  sealrun::trace::mark("main");  // SEALRUN_TRACE_STAGES (core/stage_trace.h)
  // A closed pipe on stdout (`sealrun ... | head`) should give a write error, not kill us.
  ::signal(SIGPIPE, SIG_IGN);
  // Asked for JSON: stdout carries one JSON document on every path (json_failure.h).
  const bool json = sealrun::cli::json_requested(argc, argv);
  try {
    CLI::App app{"sealrun: hermetic, sandboxed build/run controller with provable receipts",
                 "sealrun"};
    app.require_subcommand(1);
    app.set_version_flag("--version",
                         "sealrun " + sealrun::version_text(sealrun::sealrun_version()));
    int rc = run_cli(app, argc, argv);
    sealrun::cli::finish_json_command(json, rc, "failed (see stderr)");
    return rc;
  } catch (const std::exception& e) {
    // Modules report failures as Results; an exception here is a bug (or memory exhaustion).
    std::fprintf(stderr, "sealrun: internal error (please report it): %s\n", e.what());
    sealrun::cli::note_error_message(std::string("internal error: ") + e.what());
    // A run that lost track of itself cannot say its job was stopped: exit 7, the run's most
    // serious code; any other command fails with 1.
    int rc = is_run_command(argc, argv) ? sealrun::kExitStopUnconfirmed : 1;
    sealrun::cli::finish_json_command(json, rc, "internal error");
    return rc;
  }
}
