// SPDX-License-Identifier: Apache-2.0
// The gRPC service bb_worker talks to (buildbarn.runner.Runner): CheckReadiness and Run mapped
// onto ActionFlow, with at most `concurrency` runs at a time (further calls wait for a slot, or
// for their cancellation), and a readiness answer that checks the path bb_worker names and that
// containment can still be granted here (the bubblewrap probe and the resource-group back ends,
// against the dimensions the runner's admissions require; cached for a few seconds, as bb_worker
// asks before every synchronisation with the scheduler).
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "containment/mechanism_registry.h"
#include "core/dimension.h"
#include "pkg/proto/runner/runner.grpc.pb.h"
#include "remote/action_flow.h"
#include "remote/build_dir.h"

namespace sealrun::remote {

struct RunnerConfig {
  std::string build_dir;
  std::string state_dir;
  std::string sealrun = "/proc/self/exe";
  // The job user (configuration the controller reads, passed in): the readiness probe's
  // mechanisms run as it, as the runs' do.
  MechanismContext mechanism_context;
  RunnerPins pins;
  size_t concurrency = 1;
  int64_t readiness_cache_ms = 10000;
  // One line per action and per refusal, for the operator (the runner's stderr).
  std::function<void(const std::string&)> log;
};

class RunnerService final : public buildbarn::runner::Runner::Service {
 public:
  // Opens the build directory, prepares the state directory and freezes one sample admission
  // from the configuration (so a bad --set or toolchain fails here, not on the first action).
  static Result<std::unique_ptr<RunnerService>> create(RunnerConfig config);

  grpc::Status CheckReadiness(grpc::ServerContext* context,
                              const buildbarn::runner::CheckReadinessRequest* request,
                              google::protobuf::Empty* response) override;
  grpc::Status Run(grpc::ServerContext* context, const buildbarn::runner::RunRequest* request,
                   buildbarn::runner::RunResponse* response) override;

  // From now on Run and CheckReadiness answer UNAVAILABLE; runs in flight continue until the
  // server's shutdown deadline cancels them.
  void stop_accepting();
  // The admissions' required dimensions (from the sample admission).
  const DimensionSet& required() const { return required_; }

 private:
  explicit RunnerService(RunnerConfig config, BuildDir build);
  // Waits for a free slot; false if `cancelled` became true first.
  bool acquire_slot(const std::function<bool()>& cancelled);
  void release_slot();
  // An action directory (and so its input root) serves one action at a time: false when `root`
  // is, or overlaps, one in use.
  bool claim_input_root(const std::string& root);
  void release_input_root(const std::string& root);
  // Empty when containment can be granted; else why not.
  std::string containment_problem();
  void log(const std::string& line) const;

  RunnerConfig config_;
  BuildDir build_;
  DimensionSet required_;
  MechanismChoice mechanism_;  // what the admissions allow (containment.mechanism)
  std::mutex mu_;
  std::condition_variable slot_free_;
  size_t running_ = 0;
  std::set<std::string> input_roots_;  // of the actions running or waiting for a slot
  bool accepting_ = true;
  std::mutex readiness_mu_;  // one probe at a time; its answer is shared until it is stale
  int64_t readiness_checked_ms_ = -1;
  std::string readiness_problem_;
};

}  // namespace sealrun::remote
