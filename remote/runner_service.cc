// SPDX-License-Identifier: Apache-2.0
// RunnerService: see runner_service.h. The protocol glue only: what happens to one action is
// ActionFlow's, what its answer becomes on the wire is here.
#include "remote/runner_service.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "admission/freeze.h"
#include "admission/path_rules.h"
#include "containment/grant.h"
#include "containment/resgroup/resource_group.h"
#include "core/syscall.h"
#include "remote/usage_proto.h"

namespace sealrun::remote {

namespace {

namespace fs = std::filesystem;

grpc::StatusCode status_code(Answer answer) {
  switch (answer) {
    case Answer::kResponse:
      return grpc::StatusCode::OK;
    case Answer::kInvalidArgument:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case Answer::kFailedPrecondition:
      return grpc::StatusCode::FAILED_PRECONDITION;
    case Answer::kUnavailable:
      return grpc::StatusCode::UNAVAILABLE;
    case Answer::kCancelled:
      return grpc::StatusCode::CANCELLED;
    case Answer::kInternal:
      break;
  }
  return grpc::StatusCode::INTERNAL;
}

ActionFields fields_of(const buildbarn::runner::RunRequest& r) {
  ActionFields f;
  f.arguments.assign(r.arguments().begin(), r.arguments().end());
  for (const auto& [name, value] : r.environment_variables()) f.environment_variables[name] = value;
  f.working_directory = r.working_directory();
  f.stdout_path = r.stdout_path();
  f.stderr_path = r.stderr_path();
  f.input_root_directory = r.input_root_directory();
  f.temporary_directory = r.temporary_directory();
  f.server_logs_directory = r.server_logs_directory();
  return f;
}

// Freezes an admission for a do-nothing action on an empty input root with the runner's pins:
// the same path every action takes, so the configuration is proven once at start.
Result<admission::AdmissionDocument> sample_admission(const RunnerConfig& c) {
  std::string dir = fmt::format("{}/runner/.sample-{}", c.state_dir, ::getpid());
  std::error_code ec;
  fs::remove_all(dir, ec);
  SEALRUN_TRY(make_dir_at(AT_FDCWD, dir, 0700));
  SEALRUN_TRY(make_dir_at(AT_FDCWD, dir + "/root", 0755));
  CheckedAction action;
  action.argv = {"true"};
  action.cwd = "/src";
  auto frozen = admission::freeze_admission(
      action_freeze_request(c.pins, action, dir + "/root", 0, dir + "/admission.json"));
  fs::remove_all(dir, ec);
  if (!frozen) return std::move(frozen).error();
  return std::move(frozen->document);
}

}  // namespace

RunnerService::RunnerService(RunnerConfig config, BuildDir build)
    : config_(std::move(config)), build_(std::move(build)) {}

Result<std::unique_ptr<RunnerService>> RunnerService::create(RunnerConfig config) {
  if (config.concurrency == 0) return Error::make("--concurrency: must be at least 1");
  for (const auto& s : config.pins.sets) SEALRUN_TRY(check_runner_set(s));
  auto build = SEALRUN_TRY_CTX(BuildDir::open(config.build_dir), "--build-dir");
  std::error_code ec;
  fs::create_directories(config.state_dir, ec);
  if (ec) return Error::with_errno(ec.value(), "--state-dir " + config.state_dir);
  config.state_dir = fs::canonical(config.state_dir, ec).string();
  if (ec) return Error::with_errno(ec.value(), "--state-dir " + config.state_dir);
  std::string runner_dir = config.state_dir + "/runner";
  if (::mkdir(runner_dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Error::from_errno("mkdir " + runner_dir);
  auto doc = SEALRUN_TRY_CTX(sample_admission(config), "the runner's admission template");
  config.pins.toolchain_pin = doc.toolchain;
  config.pins.tree_pins = doc.trees;
  config.pins.outputs_max_bytes = doc.limits.result_max_bytes;
  config.pins.ceiling_bytes = doc.limits.ceiling_bytes;
  std::unique_ptr<RunnerService> service(new RunnerService(std::move(config), std::move(build)));
  service->required_ = doc.containment.required;
  service->mechanism_ = doc.containment.mechanism;
  return service;
}

void RunnerService::log(const std::string& line) const {
  if (config_.log) config_.log(line);
}

void RunnerService::stop_accepting() {
  std::lock_guard lock(mu_);
  accepting_ = false;
  slot_free_.notify_all();
}

bool RunnerService::acquire_slot(const std::function<bool()>& cancelled) {
  std::unique_lock lock(mu_);
  while (accepting_ && running_ >= config_.concurrency) {
    if (cancelled()) return false;
    // A cancelled call gives no notification of its own here; look again every 100 ms.
    slot_free_.wait_for(lock, std::chrono::milliseconds(100));
  }
  if (!accepting_) return false;
  ++running_;
  return true;
}

bool RunnerService::claim_input_root(const std::string& root) {
  std::lock_guard lock(mu_);
  for (const std::string& other : input_roots_)
    if (admission::paths_overlap(root, other)) return false;
  input_roots_.insert(root);
  return true;
}

void RunnerService::release_input_root(const std::string& root) {
  std::lock_guard lock(mu_);
  input_roots_.erase(root);
}

void RunnerService::release_slot() {
  std::lock_guard lock(mu_);
  --running_;
  slot_free_.notify_one();
}

std::string RunnerService::containment_problem() {
  std::lock_guard lock(readiness_mu_);
  int64_t now = monotonic_ms();
  if (readiness_checked_ms_ >= 0 && now - readiness_checked_ms_ < config_.readiness_cache_ms)
    return readiness_problem_;
  // Runs without a slot: it only probes (a throwaway sandbox each), it runs no action. The
  // mechanisms tried are those the pipeline would try for the runner's admissions (no image).
  GroupCapabilities groups;
  for (const auto& p : resgroup::probe_backends()) {
    if (!p.available) continue;
    groups.memory = groups.memory || p.memory_max;
    groups.process_count = groups.process_count || p.pids_max;
  }
  auto kinds = mechanism_candidates(false, mechanism_, std::nullopt);
  std::string problems = kinds ? "" : kinds.error().message();
  bool ready = false;
  for (MechanismKind kind : kinds ? *kinds : std::vector<MechanismKind>{}) {
    auto mechanism = make_mechanism(kind, config_.mechanism_context);
    if (!mechanism) {
      problems += (problems.empty() ? "" : "; ") + mechanism.error().message();
      continue;
    }
    auto probe = (*mechanism)->probe();
    DimensionSet missing = required_ - enforced_dimensions(probe, groups, DimensionSet::all());
    std::string name(mechanism_kind_name(kind));
    if (probe.available && missing.empty()) {
      ready = true;
      break;
    }
    problems += (problems.empty() ? "" : "; ") +
                (!probe.available ? name + " is unavailable: " + probe.unavailable_reason
                                  : name + " cannot enforce the required " + missing.joined());
  }
  readiness_problem_ = ready ? "" : problems;
  readiness_checked_ms_ = monotonic_ms();
  return readiness_problem_;
}

grpc::Status RunnerService::CheckReadiness(grpc::ServerContext*,
                                           const buildbarn::runner::CheckReadinessRequest* request,
                                           google::protobuf::Empty*) {
  {
    std::lock_guard lock(mu_);
    if (!accepting_) return {grpc::StatusCode::UNAVAILABLE, "the runner is shutting down"};
  }
  if (auto st = check_build_path("path", request->path()); !st)
    return {grpc::StatusCode::INVALID_ARGUMENT, st.error().message()};
  if (auto fd = build_.open_beneath(request->path(), O_PATH); !fd)
    return {fd.error().err() == ENOENT ? grpc::StatusCode::NOT_FOUND
                                       : grpc::StatusCode::INVALID_ARGUMENT,
            "path " + request->path() + ": " + fd.error().message()};
  if (std::string problem = containment_problem(); !problem.empty())
    return {grpc::StatusCode::UNAVAILABLE, "containment cannot be granted here: " + problem};
  return grpc::Status::OK;
}

grpc::Status RunnerService::Run(grpc::ServerContext* context,
                                const buildbarn::runner::RunRequest* request,
                                buildbarn::runner::RunResponse* response) {
  auto cancelled = [context] { return context->IsCancelled(); };
  FlowConfig flow_config{&build_, config_.state_dir, config_.sealrun, config_.pins};
  ActionFlow flow(flow_config);
  const ActionFields fields = fields_of(*request);
  // Every path of a request lies in its action's directory (check_confined), which serves one
  // action at a time, and is claimed before prepare() creates anything there: two actions in one
  // input root would see (and be charged with) each other's outputs, and a request whose directory
  // lies inside a running action's input root must not plant its log files there. A request with
  // no such directory is refused by prepare().
  const std::string claimed = action_directory(fields);
  if (!claimed.empty() && !claim_input_root(claimed))
    return {grpc::StatusCode::FAILED_PRECONDITION,
            "input_root_directory " + request->input_root_directory() +
                ": in use by another action (its action directory " + claimed +
                " is, or overlaps, a running action's)"};
  if (!flow.prepare(fields)) {
    if (!claimed.empty()) release_input_root(claimed);
    log("refused a request: " + flow.report().decision.message);
    return {grpc::StatusCode::INVALID_ARGUMENT, flow.report().decision.message};
  }
  if (!acquire_slot(cancelled)) {
    release_input_root(claimed);
    bool shutting_down = !cancelled();
    return {shutting_down ? grpc::StatusCode::UNAVAILABLE : grpc::StatusCode::CANCELLED,
            shutting_down ? "the runner is shutting down" : "cancelled while waiting for a slot"};
  }
  flow.run(cancelled);
  release_slot();
  release_input_root(claimed);

  const ActionReport& r = flow.report();
  const Decision& d = r.decision;
  log(fmt::format(
      "action {}: {} in {} ms: {}", r.id.empty() ? "-" : r.id,
      d.answer == Answer::kResponse ? fmt::format("exit {}", d.exit_code) : std::string("error"),
      r.elapsed_ms, d.message));
  if (d.answer != Answer::kResponse) {
    auto code = status_code(d.answer);
    // A deadline is a cancellation too; say which, as bb_worker would.
    if (code == grpc::StatusCode::CANCELLED &&
        context->deadline() <= std::chrono::system_clock::now())
      code = grpc::StatusCode::DEADLINE_EXCEEDED;
    return {code, d.message};
  }
  response->set_exit_code(d.exit_code);
  response->add_resource_usage()->PackFrom(posix_usage(r.usage, r.facts, d));
  if (r.facts)
    response->add_resource_usage()->PackFrom(
        receipt_reference(*r.facts, r.envelope_sha256, r.input_manifest_sha256));
  return grpc::Status::OK;
}

}  // namespace sealrun::remote
