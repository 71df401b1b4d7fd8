// SPDX-License-Identifier: Apache-2.0
// The sub-commands of `sealrun`. Each cmd_*.cc registers one command (with its --help) on the
// top-level CLI11 app; its callback stores the process exit code in *exit_code. Messages for a
// person go to stderr as "sealrun <command>: <what>: <why>"; data goes to stdout.
#pragma once

#include <CLI/CLI.hpp>

namespace sealrun::cli {

void register_fingerprint(CLI::App& app, int* exit_code);
// `fingerprint image` and `fingerprint source`, added to the `fingerprint` sub-command
// (controller/cli/cmd_fingerprint_source.cc).
void add_fingerprint_image_and_source(CLI::App& fingerprint, int* exit_code);
void register_admit(CLI::App& app, int* exit_code);
void register_probe(CLI::App& app, int* exit_code);
void register_sweep(CLI::App& app, int* exit_code);
void register_demo(CLI::App& app, int* exit_code);
void register_census(CLI::App& app, int* exit_code);
void register_run(CLI::App& app, int* exit_code);
void register_receipt(CLI::App& app, int* exit_code);
// `receipt verify` and `receipt list`, added to the `receipt` sub-command.
void add_receipt_verify(CLI::App& receipt, int* exit_code);
void add_receipt_list(CLI::App& receipt, int* exit_code);
void add_receipt_report(CLI::App& receipt, int* exit_code);  // controller/cli/cmd_receipt_report.cc
void register_key(CLI::App& app, int* exit_code);            // controller/cli/cmd_key.cc
void register_ledger(CLI::App& app, int* exit_code);         // controller/cli/cmd_ledger.cc
void register_rebuild(CLI::App& app, int* exit_code);        // controller/cli/cmd_rebuild.cc
// `index ingest|query|report` (controller/cli/cmd_index*.cc).
void register_index(CLI::App& app, int* exit_code);
void add_index_query(CLI::App& index, int* exit_code);
void add_index_report(CLI::App& index, int* exit_code);
void register_runner(CLI::App& app, int* exit_code);  // remote/cmd_runner.cc
// Hidden `__generate man|bash-completion`: walks `app` (the root, register it last) at run time.
void register_generate(CLI::App& app, int* exit_code);
// Loads libcrypto before a command that may hash runs; stops it with the error when it cannot
// (controller/cli/crypto_gate.cc). Call on the root app.
void load_crypto_before_commands(CLI::App& app);

}  // namespace sealrun::cli
