// SPDX-License-Identifier: Apache-2.0
// `sealrun run ADMISSION --sha256 HEX --id ID ...`: the job (docs/contract.md). A short summary
// goes to stdout, and the receipt's path is always the last line of stdout when one was written.
// On stderr, unless --quiet: the job's output as it arrives (`job| `, live_output.h) and, unless
// --json, what systemd-run --wait says after its unit (how the job ended, time, memory peak).
#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "controller/common/host_config.h"
#include "controller/common/state_dir.h"
#include "controller/run/run_console.h"
#include "controller/run/run_pipeline.h"
#include "controller/run/run_plan.h"
#include "core/exit_codes.h"
#include "core/stage_trace.h"
#include "core/syscall.h"

namespace sealrun::cli {

void register_run(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "run",
      "Verify an admission, run its command contained, and write a receipt.\n"
      "Exit: 0 built, 2 usage, 3 admission refused, 4 containment unavailable, 5 job "
      "failed, 6 growth guard tripped, 7 stop or cleanup unconfirmed");
  auto req = std::make_shared<run::RunRequest>();
  auto mode = std::make_shared<std::string>("enforcing");
  auto json = std::make_shared<bool>(false);
  auto quiet = std::make_shared<bool>(false);
  auto mechanism = std::make_shared<std::string>("auto");
  cmd->add_option("ADMISSION", req->admission_path, "the admission document")->required();
  cmd->add_option("--sha256", req->sha256, "the SHA-256 the admission's exact bytes must have")
      ->required();
  cmd->add_option("--id", req->id,
                  "a new run id ([A-Za-z0-9._-], at most 64); default: run-<UTC time>-<pid>");
  std::vector<std::string> mechanisms = {"auto"};
  for (MechanismKind k : kMechanismKinds) mechanisms.emplace_back(mechanism_kind_name(k));
  cmd->add_option("--mechanism", *mechanism, "auto, or one of: " + mechanism_kind_names())
      ->check(CLI::IsMember(mechanisms))
      ->capture_default_str();
  cmd->add_option("--mode", *mode, "enforcing (refuse a shortfall) | report-only (record it)")
      ->check(CLI::IsMember({"enforcing", "report-only"}))
      ->capture_default_str();
  cmd->add_option("--state-dir", req->state_dir, "holds owned/<id>/ and results/<id>/")
      ->capture_default_str();
  cmd->add_option("--signing-key", req->signing_key,
                  "Ed25519 key (sealrun key generate) to sign the receipt with; default: "
                  "STATE/keys/sealrun.key when it exists, else the receipt is unsigned");
  cmd->add_flag("--rehash", req->rehash,
                "hash pinned trees in full instead of re-verifying unchanged files from the digest "
                "cache (STATE/cache/digests; the cache is refreshed either way)");
  cmd->add_flag("--json", *json,
                "print one JSON document (id, state, exit, reason, receipt_path, ...) on stdout");
  cmd->add_flag("--quiet,-q", *quiet,
                "do not show the job's output on stderr as it arrives (each line prefixed "
                "`job| `, at most 16 MiB), the progress of long steps, nor the summary after it; "
                "errors are still shown");
  cmd->callback([=] {
    req->mode = *mode == "report-only" ? GrantMode::kReportOnly : GrantMode::kEnforcing;
    req->mechanism = parse_mechanism_kind(*mechanism);  // "auto": nullopt
    if (req->id.empty()) req->id = run::generated_run_id("run");
    // Every temporary of the run (the admission's scratch copies, git's) goes where `sealrun
    // sweep` finds it should this controller be killed: its own directory under the state
    // directory, made by the run's first stage (docs/state-directory.md).
    if (auto temp = run::controller_temp_dir(run::state_dir_path(req->state_dir)); temp)
      ::setenv("TMPDIR", temp->c_str(), 1);
    trace::mark("run.parsed");
    run::RunOutcome o = run::run_with_console(*req, run::default_pipeline_deps(mechanism_context()),
                                              {"run", *quiet, *json});
    const auto& r = o.receipt;
    *exit_code = o.exit_code;  // set first: a closed stdout below must not change it
    // Why it did not build, for the person at the terminal (the receipt says it too).
    if (o.exit_code != 0 && !r.reason.empty()) print_error("run", r.reason);
    if (!o.message.empty()) print_error("run", o.message);
    if (*json) {
      // Exactly one JSON document on stdout, whatever happened.
      print_json(
          {{"id", req->id},
           {"state", r.state},
           {"exit", o.exit_code},
           {"reason", r.reason},
           {"outputs", r.outputs.size()},
           {"stop_confirmed", r.stop_confirmed},
           {"receipt_path",
            o.receipt_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.receipt_path)},
           {"error", o.message.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.message)}});
    } else if (!o.receipt_path.empty()) {
      fmt::print("run {}: {} (exit {})\n  {}\n  outputs: {}, stop confirmed: {}\n", r.id, r.state,
                 o.exit_code, r.reason, r.outputs.size(), r.stop_confirmed ? "yes" : "no");
      fmt::print("{}\n", o.receipt_path);
    }
    *exit_code = o.exit_code;
    trace::mark("run.printed");
    trace::flush();  // SEALRUN_TRACE_STAGES (core/stage_trace.h)
  });
}

}  // namespace sealrun::cli
