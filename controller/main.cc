// sealrun's entry point: builds the command line from the registered sub-commands and maps a
// usage error to exit 2. No module below the controller exits or prints; this is where it happens.
#include <signal.h>

#include <CLI/CLI.hpp>

#include "controller/commands.h"
#include "controller/exit_codes.h"

int main(int argc, char** argv) {
  // A closed pipe on stdout (`sealrun ... | head`) should give a write error, not kill us.
  ::signal(SIGPIPE, SIG_IGN);

  CLI::App app{"sealrun: hermetic, sandboxed build/run controller with provable receipts",
               "sealrun"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "sealrun 0.1.0");
  int exit_code = sealrun::kExitOk;
  sealrun::cli::register_demo(app, &exit_code);
  sealrun::cli::register_probe(app, &exit_code);
  sealrun::cli::register_fingerprint(app, &exit_code);
  sealrun::cli::register_admit(app, &exit_code);
  sealrun::cli::register_run(app, &exit_code);
  sealrun::cli::register_receipt(app, &exit_code);
  sealrun::cli::register_census(app, &exit_code);
  sealrun::cli::register_sweep(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? sealrun::kExitOk : sealrun::kExitUsage;
  }
  return exit_code;
}
