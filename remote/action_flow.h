// SPDX-License-Identifier: Apache-2.0
// One Run, start to end, without the protocol: the action is checked, the places its answer goes
// are reserved in the build directory (stdout and stderr created, the server-logs directory
// opened), the admission frozen, `sealrun run` started and waited for (its job changes a private,
// verified copy of the input root, never the input root itself), and the answer assembled — the
// outputs installed into the input root, the job's streams copied where bb_worker asked, the
// receipt, its envelope and the admission put into server_logs_directory.
#pragma once

#include <sys/resource.h>

#include <functional>
#include <optional>
#include <string>

#include "remote/action_admission.h"
#include "remote/action_request.h"
#include "remote/action_result.h"
#include "remote/build_dir.h"

namespace sealrun::remote {

struct FlowConfig {
  const BuildDir* build = nullptr;
  std::string state_dir;  // absolute
  std::string sealrun;    // the executable to run as `sealrun run`
  RunnerPins pins;
};

// Where the answer goes, reserved before anything runs.
struct Reserved;

struct ActionReport {
  Decision decision;  // what to answer
  std::string id;     // the run id, once one was made
  std::optional<ReceiptFacts> facts;
  std::string envelope_sha256;        // of receipt.dsse.json, when the run was signed
  std::string input_manifest_sha256;  // the input root as pinned (source.manifest_sha256)
  struct rusage usage {};
  int64_t elapsed_ms = 0;
};

class ActionFlow {
 public:
  explicit ActionFlow(FlowConfig config);
  ~ActionFlow();
  ActionFlow(const ActionFlow&) = delete;
  ActionFlow& operator=(const ActionFlow&) = delete;

  // Step 1, before waiting for a slot: check the request and reserve its answer's places. False
  // when the request is refused (kInvalidArgument, with the message).
  bool prepare(const ActionFields& fields);
  // Step 2, in a slot: freeze, run, collect. `cancelled` is polled while the run goes on.
  void run(const std::function<bool()>& cancelled);
  const ActionReport& report() const { return report_; }
  // The input root's host path, once prepare() succeeded.
  const std::string& input_root() const { return input_root_; }

 private:
  void refuse(Answer answer, std::string message);
  // A failure to deliver turns a RunResponse into an error: bb_worker must not take a partial
  // answer for the action's.
  void delivery_failed(const std::string& what, const Error& error);
  void deliver_receipt(const std::string& receipt_bytes, const std::string& action_dir);
  // From results/<id>/out/ into the input root (nothing for a run that executed nothing).
  void deliver_outputs();
  // From results/<id>/logs/ (nothing for a run that executed nothing).
  void deliver_streams();

  FlowConfig config_;
  std::optional<CheckedAction> action_;
  std::unique_ptr<Reserved> reserved_;
  std::string input_root_;
  std::string receipt_path_;  // where the run wrote its receipt (results/<id>/ or refusals/)
  ActionReport report_;
};

// A new run id: "reapi-<UTC time>-<8 random hex digits>".
std::string new_action_id();

}  // namespace sealrun::remote
