// SPDX-License-Identifier: Apache-2.0
// `sealrun run ADMISSION --sha256 HEX --id ID ...`: the job (docs/contract.md). A short summary
// goes to stdout, and the receipt's path is always the last line of stdout when one was written.
// On stderr, unless --quiet: the job's output as it arrives (`job| `, live_output.h) and, unless
// --json, what systemd-run --wait says after its unit (how the job ended, time, memory peak).
#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "controller/commands.h"
#include "controller/exit_codes.h"
#include "controller/output.h"
#include "controller/host_config.h"
#include "controller/run_pipeline.h"
#include "controller/run_plan.h"
#include "controller/state_dir.h"
#include "core/stage_trace.h"
#include "core/syscall.h"

namespace sealrun::cli {

namespace {
std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", bytes / 1048576.0); }

// After the live output, the job's end in a line or two (the verdict and the receipt's path are
// on stdout, the reason of a failure was said above).
void print_run_summary(const receipt::Receipt& r, int64_t elapsed_ms) {
  if (r.state == "not_run") return;
  std::string line = fmt::format("sealrun run: {}: ", r.id);
  for (const auto& c : r.commands) {
    if (c.label != "job") continue;
    if (c.exit)
      line += fmt::format("the job exited {}", *c.exit);
    else if (c.signal != 0)
      line += fmt::format("the job was killed by signal {}", c.signal);
    else
      line += "the job's end is unknown";
    if (c.timed_out) line += " (its time limit was reached)";
    line += ", ";
  }
  line += fmt::format("{} in {:.2f} s", r.state, elapsed_ms / 1000.0);
  if (r.memory && r.memory->peak_bytes) line += ", memory peak " + mib(*r.memory->peak_bytes);
  fmt::print(stderr, "{}\n", line);
  if (r.guard)
    fmt::print(
        stderr, "sealrun run: {}: growth guard {} tripped at {:.2f} s: {} observed, limit {}\n",
        r.id, r.guard->name, r.guard->t_ms / 1000.0, mib(r.guard->observed), mib(r.guard->limit));
}
}  // namespace

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
                "`job| `, at most 16 MiB) nor the summary after it; errors are still shown");
  cmd->callback([=] {
    req->mode = *mode == "report-only" ? GrantMode::kReportOnly : GrantMode::kEnforcing;
    req->mechanism = parse_mechanism_kind(*mechanism);  // "auto": nullopt
    if (req->id.empty()) req->id = run::generated_run_id("run");
    // Every temporary of the run (the admission's scratch copies, git's) goes where `sealrun
    // sweep` finds it should this controller be killed: its own directory under the state
    // directory, made by the run's first stage (docs/state-directory.md).
    if (auto temp = run::controller_temp_dir(run::state_dir_path(req->state_dir)); temp)
      ::setenv("TMPDIR", temp->c_str(), 1);
    req->live_output_fd = *quiet ? -1 : STDERR_FILENO;
    const int64_t started_ms = monotonic_ms();
    trace::mark("run.parsed");
    run::RunOutcome o = run::run_pipeline(*req, run::default_pipeline_deps(mechanism_context()));
    if (!*quiet && !*json) print_run_summary(o.receipt, monotonic_ms() - started_ms);
    const auto& r = o.receipt;
    *exit_code = o.exit_code;  // set first: a closed stdout below must not change it
    // Why it did not build, for the person at the terminal (the receipt says it too).
    if (o.exit_code != 0 && !r.reason.empty()) print_error("run", r.reason);
    if (!o.message.empty()) print_error("run", o.message);
    if (*json) {
      // Exactly one JSON document on stdout, whatever happened.
      print_json({{"id", req->id},
                  {"state", r.state},
                  {"exit", o.exit_code},
                  {"reason", r.reason},
                  {"outputs", r.outputs.size()},
                  {"stop_confirmed", r.stop_confirmed},
                  {"receipt_path", o.receipt_path.empty() ? nlohmann::json(nullptr)
                                                          : nlohmann::json(o.receipt_path)},
                  {"error", o.message.empty() ? nlohmann::json(nullptr)
                                              : nlohmann::json(o.message)}});
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
