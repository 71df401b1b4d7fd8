// SPDX-License-Identifier: Apache-2.0
// Stages 0–2 of the run (run_stages.h): the request, the admission's own bytes, every pin.
#include <fmt/format.h>

#include <cctype>
#include <memory>

#include "controller/receipt/receipt_admission.h"
#include "controller/receipt/receipt_signing.h"
#include "controller/run/run_dirs.h"
#include "controller/run/run_progress.h"
#include "controller/run/run_stages.h"
#include "core/exit_codes.h"
#include "core/hex.h"

namespace sealrun::run {

namespace {

receipt::Verification to_verification(const admission::PinCheck& c) {
  std::string observed = c.observed;
  if (c.status == admission::CheckStatus::kSkipped) observed = "skipped: " + observed;
  return {c.target, c.expected, observed, c.passed()};
}

// Why an admission was refused, naming each failed pin with what was found.
std::string refusal_reason(const admission::AdmissionReport& report) {
  std::string details;
  for (const auto& c : report.checks) {
    if (c.status != admission::CheckStatus::kFail || report.refusal) continue;
    details += fmt::format("; {}: observed {}", c.target,
                           c.observed.size() > 300 ? c.observed.substr(0, 300) + "…" : c.observed);
  }
  return "admission refused: " + report.summary() + details;
}

}  // namespace

StageStatus stage_check_request(RunContext& run) {
  if (auto st = validate_run_id(run.req.id); !st)
    return stage_fail(kExitUsage, st.error().message());
  std::string sha = run.req.sha256;
  for (char& c : sha) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!is_sha256_hex(sha))
    return stage_fail(kExitUsage,
                      fmt::format("--sha256 {:?}: expected 64 hexadecimal digits (the SHA-256 "
                                  "`sealrun admit freeze` printed for the admission)",
                                  run.req.sha256));
  // Root writes below the state directory from here on: it must be one that only root (or the
  // invoking user) can write, ancestors included, and it is held open from now on (state_dir.h).
  auto state = StateDir::open(run.layout.state_dir);
  if (!state) return stage_fail(kExitUsage, "--state-dir: " + state.error().message());
  run.state.emplace(std::move(*state));
  if (auto st = check_id_unused(*run.state, run.layout, run.req.id); !st)
    return stage_fail(kExitUsage, st.error().message());
  auto key = receipt::choose_signing_key(run.req.signing_key, *run.state);
  if (!key) return stage_fail(kExitUsage, "the signing key: " + key.error().message());
  run.signing_key = std::move(*key);
  run.receipt.signing = run.signing_key
                            ? nlohmann::json{{"key_id", run.signing_key->key_id()},
                                             {"envelope", "the receipt's name with .dsse.json"}}
                            : nlohmann::json(nullptr);
  if (GrantJournal::has_record_in(run.state->fd(), run.req.id))
    return stage_fail(kExitUsage,
                      fmt::format("run id {} has a grant record left by a killed run; run "
                                  "`sealrun sweep` first, or choose a new --id",
                                  run.req.id));
  // This controller's temporaries live where `sweep` finds them if it is killed.
  auto temp = controller_temp_dir(run.state->path());
  if (Status made = temp ? make_temp_dir(*run.state, *temp) : Status(temp.error()); !made)
    return stage_fail(kExitUsage, "--state-dir: " + made.error().message());
  run.temp_dir = *temp;
  run.mechanism_context.scratch_dir = run.temp_dir;
  return stage_ok();
}

StageStatus stage_read_admission(RunContext& run) {
  // A learning run's admission gets its closure (and with it, maybe, its toolchain) afterwards.
  admission::ParseOptions parse;
  parse.closure_follows = run.req.learning.has_value();
  auto read = admission::read_admission(run.req.admission_path, run.req.sha256, parse);
  for (const auto& c : read.report.checks) run.receipt.verifications.push_back(to_verification(c));
  if (!read.admission) return stage_fail(kExitAdmissionRefused, refusal_reason(read.report));
  const auto& limits = read.admission->document().limits;
  run.receipt_max_bytes = limits.receipt_max_bytes;
  run.watch->set_deadline(run.started_ms + static_cast<int64_t>(limits.outer_s) * 1000);
  run.admission_report = std::move(read.report);
  run.authenticated.emplace(std::move(*read.admission));
  return stage_ok();
}

StageStatus stage_verify_pins(RunContext& run) {
  admission::VerifyOptions options;
  {
    // The source is verified on a private export (git, bundle) or snapshot (tree) that the job
    // then sees: exactly the bytes that were verified, whatever happens on the host afterwards.
    auto dir = make_export_dir(*run.state, run.req.id);
    if (!dir)
      return stage_fail(kExitContainmentUnavailable,
                        "cannot make the source export directory: " + dir.error().message());
    run.export_dir = *dir;
    options.source_export_dir = *dir + "/source";
  }
  options.digest_cache_state_dir = run.layout.state_dir;
  options.rehash = run.req.rehash;
  // One line per pinned tree while it is verified (run_progress.h: redrawn on a terminal, plain
  // lines every 5 s elsewhere, none with --quiet): files and bytes, by stat or hashed, rate, ETA.
  options.tree_progress = per_tree_progress();
  options.on_pin_cache = run.pin_cache_recorder();
  options.on_host_file = [&run](const std::string& path, const admission::FileIdentity& id) {
    run.closure_identities[path] = id;
  };
  size_t already = run.receipt.verifications.size();
  auto outcome = admission::verify_admission(std::move(*run.authenticated),
                                             std::move(*run.admission_report), options);
  run.authenticated.reset();
  run.admission_report.reset();
  for (size_t i = already; i < outcome.report.checks.size(); ++i)
    run.receipt.verifications.push_back(to_verification(outcome.report.checks[i]));
  if (!outcome.admitted) return stage_fail(kExitAdmissionRefused, refusal_reason(outcome.report));
  run.admitted.emplace(std::move(*outcome.admitted));
  auto summary = receipt::admission_summary(*run.admitted);
  if (summary)
    run.receipt.admission = std::move(*summary);
  else
    run.warn("the receipt cannot list the admitted inputs: " + summary.error().message());
  return stage_ok();
}

}  // namespace sealrun::run
