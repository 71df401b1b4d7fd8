// SPDX-License-Identifier: Apache-2.0
// The run pipeline: stages in docs/contract.md's order (run_stages.h), the one failure rule, and
// the receipt that is always written. See run_pipeline.h.
#include "controller/run/run_pipeline.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "containment/ownedfs/private_ns.h"
#include "controller/receipt/receipt_signing.h"
#include "controller/run/run_dirs.h"
#include "controller/run/run_stages.h"
#include "controller/run/slurm_context.h"
#include "core/atomic_write.h"
#include "core/exit_codes.h"
#include "core/run_id.h"
#include "core/stage_trace.h"
#include "core/syscall.h"
#include "core/version.h"

namespace sealrun::run {

namespace {

// The state directory is made absolute once: mechanisms bind paths into other namespaces.
RunLayout absolute_layout(const RunRequest& req) {
  return layout_for(state_dir_path(req.state_dir), req.id);
}

// Nothing was executed and nothing is left: the id is given back and the receipt goes to
// refusals/ (docs/contract.md: a run that executed nothing does not consume its id). A run whose
// cleanup was not confirmed (exit 7) keeps its claim: something of it may be left.
bool executed_nothing(const RunContext& run) {
  return run.job == nullptr && run.exit_code() != kExitStopUnconfirmed;
}

RunOutcome write_receipt(RunContext& run) {
  receipt::Receipt& r = run.receipt;
  r.exit = run.exit_code();
  r.state = run.job == nullptr ? "not_run" : (r.exit == kExitOk ? "built" : "failed");
  if (r.state == "built") r.reason = "the job exited 0 and every check passed";
  r.notes = run.warnings;
  if (run.census)
    for (auto& n : run.census->notes()) r.notes.push_back("census: " + n);
  r.finished = utc_timestamp_now();

  RunOutcome o;
  o.exit_code = r.exit;
  std::string path = run.layout.receipt_path;
  if (!run.state) {  // the state directory was refused (or never reached): nothing goes there
    o.receipt = std::move(r);
    return o;
  }
  if (executed_nothing(run) || !run.owned_claimed) {
    if (!is_valid_run_id(run.req.id)) {  // no name to file it under: the message says it all
      o.receipt = std::move(r);
      return o;
    }
    if (run.owned_claimed) {
      Status released = release_run_claim(*run.state, run.layout, run.req.id);
      if (!released) run.warn("the run id could not be given back: " + released.error().message());
    }
    auto refusal = refusal_receipt_path(*run.state, run.req.id);
    if (!refusal) {
      o.message = "the receipt could not be written: " + refusal.error().message();
      o.receipt = std::move(r);
      return o;
    }
    path = *refusal;
  }
  trace::mark("receipt.render");
  std::string bytes = receipt::render_receipt(r, run.receipt_max_bytes);
  trace::mark("receipt.write");
  if (auto st = run.state->write_atomic(path, bytes, 0644); st) {
    o.receipt_path = path;
    trace::mark("receipt.record");
    auto recorded = receipt::sign_and_record(*run.state, path, bytes,
                                             run.signing_key ? &*run.signing_key : nullptr,
                                             run.req.id, r.state);
    if (!recorded) {
      // The receipt stands, but what vouches for it (its signature, its ledger line) is missing.
      o.message = "the receipt was written but not fully recorded: " + recorded.error().message();
      o.exit_code = std::max(o.exit_code, static_cast<int>(kExitStopUnconfirmed));
    }
  } else {
    o.message = "the receipt could not be written: " + st.error().message();
    o.exit_code = std::max(o.exit_code, static_cast<int>(kExitStopUnconfirmed));
  }
  o.receipt = std::move(r);
  return o;
}

}  // namespace

RunContext::RunContext(RunRequest request, PipelineDeps d)
    : req(std::move(request)),
      deps(std::move(d)),
      layout(absolute_layout(req)),
      started_ms(monotonic_ms()),
      mechanism_context(deps.mechanism_context) {}

void RunContext::record_failure(const StageFailure& f) {
  if (f.exit_code > exit_) {
    exit_ = f.exit_code;
    receipt.reason = f.reason;
  } else if (receipt.reason.empty()) {
    receipt.reason = f.reason;
  }
}

void RunContext::warn(std::string what) {
  std::fprintf(stderr, "sealrun run: warning: %s\n", what.c_str());
  warnings.push_back(std::move(what));
}

std::function<void(const PinCacheRecord&)> RunContext::pin_cache_recorder() {
  return [this](const PinCacheRecord& r) { receipt.pin_cache.push_back(pin_cache_to_json(r)); };
}

void RunContext::cleanup_action(std::string action, const Status& st, std::string detail) {
  receipt.cleanup.push_back(
      {std::move(action), st.ok(), st.ok() ? std::move(detail) : st.error().message()});
}

PipelineDeps default_pipeline_deps(const MechanismContext& context) {
  PipelineDeps d;
  d.mechanism_context = context;
  d.make_mechanism = [](MechanismKind kind, const MechanismContext& c) {
    return make_mechanism(kind, c);
  };
  d.probe_groups = [] { return resgroup::probe_backends(); };
  d.make_group = [](const std::string& id, const resgroup::GroupLimits& limits,
                    const std::vector<resgroup::BackendProbe>& probes) {
    return resgroup::create_group(id, limits, probes);
  };
  d.probe_owned_fs = [] { return ownedfs::probe_ownedfs(); };
  return d;
}

RunOutcome run_pipeline(const RunRequest& request, const PipelineDeps& deps) {
  RunContext run(request, deps);
  run.receipt.id = request.id;
  run.receipt.admission_sha256 = request.sha256;
  run.receipt.rebuild_of = request.rebuild_of;
  run.receipt.started = utc_timestamp_now();
  if (auto slurm = slurm_context(environ_map())) run.receipt.slurm = std::move(*slurm);
  const SealrunVersion version = sealrun_version();
  run.receipt.sealrun_version = {
      {"version", version.version}, {"commit", version.commit}, {"dirty", version.dirty}};
  // Before any thread exists: the run's owned file systems are mounted in a mount namespace of
  // this controller's own, where no other run's namespace can copy them (private_ns.h).
  if (::geteuid() == 0)
    if (auto st = ownedfs::enter_private_mount_namespace(); !st)
      run.warn(
          "the owned file systems are mounted in the host's mount namespace, where other runs "
          "can hold copies of them: " +
          st.error().message());
  // Before any thread exists: block the stop signals and watch them on a thread of our own. The
  // outer deadline is provisional until the admission's outer_s is known.
  run.watch.emplace(run.stop, run.started_ms + 1800 * 1000);

  using Stage = StageStatus (*)(RunContext&);
  struct Named {
    Stage stage;
    const char* name;  // the stage trace's label (core/stage_trace.h)
  };
  constexpr Named kStages[] = {
      {stage_check_request, "stage.check_request"},
      {stage_read_admission, "stage.read_admission"},
      {stage_verify_pins, "stage.verify_pins"},
      {stage_claim_owned_roots, "stage.claim_owned_roots"},
      {stage_acquire_grant, "stage.acquire_grant"},
      {stage_create_group, "stage.create_group"},
      {stage_prepare_census, "stage.prepare_census"},
      {stage_run_job, "stage.run_job"},
      {stage_post_run, "stage.post_run"},
  };
  for (const Named& named : kStages) {
    trace::mark(named.name);
    StageStatus st = named.stage(run);
    if (!st.ok()) {
      run.record_failure(st.failure());
      break;
    }
    // A stop asked for between stages (a signal, the outer deadline) ends the run here.
    if (auto why = run.stop.requested(); why && run.job == nullptr) {
      run.record_failure({why->exit_code, why->reason});
      break;
    }
  }
  trace::mark("stage.cleanup");
  stage_cleanup(run);
  trace::mark("stage.receipt");
  RunOutcome outcome = write_receipt(run);
  trace::mark("stage.watch_stop");
  run.watch.reset();
  trace::mark("pipeline.end");
  return outcome;
}

}  // namespace sealrun::run
