// SPDX-License-Identifier: Apache-2.0
// prove_learned(): see learn_prove.h.
#include "controller/run/learn_prove.h"

#include <fmt/format.h>

#include "controller/common/host_config.h"
#include "controller/run/run_plan.h"
#include "learn/lookup_closure.h"
#include "learn/lookup_syscalls.h"
#include "learn/lookup_tracer.h"

namespace sealrun::cli {

namespace {

// How many lacking paths the message names.
constexpr size_t kNamed = 8;

std::string lacking_text(const std::vector<std::string>& lacking) {
  if (lacking.empty())
    return "; it looked up or opened nothing of the host that the learned view lacks (so the "
           "difference lies elsewhere: the command may not do the same twice)";
  std::string names;
  for (size_t i = 0; i < lacking.size() && i < kNamed; ++i)
    names += (i == 0 ? "" : ", ") + lacking[i];
  if (lacking.size() > kNamed) names += fmt::format(" and {} more", lacking.size() - kNamed);
  return "; it looked up or opened host paths the learned view lacks: " + names;
}

}  // namespace

std::string learn_stderr_tail(const run::RunOutcome& o) {
  for (const auto& c : o.receipt.commands) {
    if (c.label != "job" || c.stderr_record.tail.empty()) continue;
    std::string tail = c.stderr_record.tail;
    if (tail.size() > 2000) tail = "..." + tail.substr(tail.size() - 2000);
    while (!tail.empty() && tail.back() == '\n') tail.pop_back();
    return "; its stderr ended with:\n" + tail;
  }
  return "";
}

namespace {

// One run of the learned admission through the pipeline, as `sealrun run` runs it; with `tracer`,
// every lookup and open of the job is recorded into `looked`.
run::RunOutcome run_learned(const ProveRequest& request, learn::LookupTracer* tracer,
                            learn::ObservedLookups* looked) {
  run::RunRequest req;
  req.admission_path = request.admission_path;
  req.sha256 = request.sha256;
  // Ids of one second's runs are alike: the traced re-run is told apart by its own prefix.
  req.id = run::generated_run_id(tracer == nullptr ? "prove" : "prove-traced");
  req.mechanism = MechanismKind::kBwrap;
  req.state_dir = request.state_dir;
  req.live_output_fd = request.live_output_fd;
  // No host trees: the view is the learned admission's, as in `sealrun run`.
  if (tracer != nullptr)
    req.learning = run::LearningRun{{},
                                    [&](pid_t pid) { return tracer->attach(pid); },
                                    [&] { *looked = tracer->finish(); },
                                    learn::traced_syscalls(learn::TraceSet::kProving)};
  run::RunOutcome o = run::run_pipeline(req, run::default_pipeline_deps(mechanism_context()));
  if (tracer != nullptr) *looked = tracer->finish();  // again: the job may never have started
  return o;
}

bool built(const run::RunOutcome& o) { return o.exit_code == 0 && o.receipt.state == "built"; }

}  // namespace

// The proving run itself is untraced, exactly a `sealrun run` (a traced run of a fork-heavy build
// such as a configure script takes about twice as long: every traced call and every fork stops
// the job for the tracer). Only when it fails is the admission run once more with the tracer, to
// name what the learned view lacked.
Status prove_learned(const ProveRequest& request) {
  run::RunOutcome o = run_learned(request, nullptr, nullptr);
  if (built(o)) return ok_status();
  auto tracer = learn::LookupTracer::create({request.roots, request.excluded, 400000});
  learn::ObservedLookups looked;
  run_learned(request, tracer.get(), &looked);
  auto lacking = learn::lacking_in_view(looked, request.roots, request.places, request.closure);
  return Error::make(fmt::format(
      "the proving run of the learned admission did not build as the learning run did (exit {}: "
      "{}){}; no admission was written{}",
      o.exit_code, o.receipt.reason.empty() ? o.message : o.receipt.reason, lacking_text(lacking),
      learn_stderr_tail(o)));
}

}  // namespace sealrun::cli
