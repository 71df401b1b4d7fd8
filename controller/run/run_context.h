// SPDX-License-Identifier: Apache-2.0
// The state of one run as it moves through the pipeline's stages (run_stages.h), and the one rule
// by which failures become the run's exit code and reason. Internal to the run pipeline.
//
// What a stage proves flows forward as a value (an AuthenticatedAdmission, an Admitted, a Grant);
// what a stage acquires (owned roots, a group, a journal record, a job, the census) is held here so
// that the cleanup stage can always find and release it, whatever stage failed.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "admission/admitted.h"
#include "attest/keys.h"
#include "census/census_thread.h"
#include "containment/grant.h"
#include "containment/grant_journal.h"
#include "containment/mechanism.h"
#include "containment/ownedfs/ownedfs.h"
#include "containment/resgroup/resource_group.h"
#include "controller/common/state_dir.h"
#include "controller/receipt/receipt.h"
#include "controller/run/run_closure_bound.h"
#include "controller/run/run_pipeline.h"
#include "controller/run/run_plan.h"
#include "controller/run/stop_switch.h"
#include "core/job_user.h"
#include "core/unique_fd.h"
#include "fingerprint/cached_tree.h"

namespace sealrun::run {

// The check after the job, running beside the cleanup (view_recheck.h).
struct PendingViewRecheck;

// Why a stage stopped the run: the exit code it means (docs/contract.md) and what a person reads.
struct StageFailure {
  int exit_code = 0;
  std::string reason;
};

// A stage's result: ok, or a StageFailure. Every failure reaches the run through record_failure().
class [[nodiscard]] StageStatus {
 public:
  StageStatus() = default;
  StageStatus(StageFailure f) : failure_(std::move(f)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return !failure_; }
  const StageFailure& failure() const { return *failure_; }

 private:
  std::optional<StageFailure> failure_;
};
inline StageStatus stage_ok() { return {}; }
inline StageStatus stage_fail(int exit_code, std::string reason) {
  return StageFailure{exit_code, std::move(reason)};
}

// The durable record of what this run holds, for `sweep` after a killed controller: written before
// each thing it names is created, updated as the run acquires more (record before create).
class RunJournal {
 public:
  // Opens the journal below the held state directory and writes the first record (run id,
  // controller, owned root). A journal that cannot be written is an error: nothing may be created
  // that `sweep` could not find.
  Status open(const StateDir& state, GrantRecord first);
  // Changes the record and writes it again. The caller decides what a failure means: before
  // something is created it must stop the run; after, it is a warning. kUntilReboot only for a
  // change that names nothing that outlives a reboot (RecordDurability, GrantJournal::record).
  Status update(const std::function<void(GrantRecord&)>& change,
                RecordDurability durability = RecordDurability::kDurable);
  // Changes the record in memory only; the next update() writes it. For a change that names
  // nothing that exists yet and nothing `sweep` would act on (bwrap's name: it leaves nothing of
  // its own to sweep), so that it costs no write of its own.
  void note(const std::function<void(GrantRecord&)>& change) { change(record_); }
  bool recorded() const { return recorded_; }
  const GrantRecord& record() const { return record_; }
  Status forget();

 private:
  std::optional<GrantJournal> journal_;
  GrantRecord record_;
  bool recorded_ = false;
};

struct RunContext {
  RunContext(RunRequest request, PipelineDeps deps);

  // The one priority rule: the most serious exit code wins (7 over 6 over 5, ...); the first
  // reason given for the winning code is the one a person reads.
  void record_failure(const StageFailure& failure);
  int exit_code() const { return exit_; }
  // A degradation the run survives: said once on stderr and kept for the receipt.
  void warn(std::string what);
  void cleanup_action(std::string action, const Status& st, std::string detail = {});
  // For the digest cache's reporting hooks: each use appended to the receipt's pin_cache.
  std::function<void(const PinCacheRecord&)> pin_cache_recorder();
  const admission::AdmissionDocument& doc() const { return admitted->document(); }
  int64_t stop_grace_ms() const { return grant ? grant->spec.stop_grace_ms : 5000; }

  const RunRequest req;
  const PipelineDeps deps;
  const RunLayout layout;
  const int64_t started_ms;
  receipt::Receipt receipt;
  size_t receipt_max_bytes = 1024 * 1024;
  std::vector<std::string> warnings;

  // Signals, guards and the outer deadline all stop the job through this switch.
  StopSwitch stop;
  std::optional<SignalWatch> watch;

  // The key the receipt will be signed with (chosen before anything runs), or none.
  std::optional<attest::SigningKey> signing_key;

  // Proven, in stage order.
  std::optional<admission::AuthenticatedAdmission> authenticated;
  std::optional<admission::AdmissionReport> admission_report;
  std::optional<admission::Admitted> admitted;
  // Each closure file's identity as it was hashed (stage 2): what the view must bind.
  ClosureIdentities closure_identities;
  std::optional<Grant> grant;
  JobUser job_user;               // who the job runs as (the caller itself when not root)
  std::optional<JobIds> job_ids;  // the run's own uid and gid while held (run_handover.h)

  // Acquired, released by the cleanup stage.
  std::optional<StateDir> state;  // checked and held from stage 0 on (state_dir.h)
  std::string temp_dir;           // this controller's temporaries, <state>/tmp/<pid>.<start>
  // What the mechanisms are made with: the deps' context, with this run's temporaries.
  MechanismContext mechanism_context;
  std::string export_dir;  // a git or bundle source's verified export (outside the owned root)
  UniqueFd image_lock;     // STATE/images/<hex> held shared while the job may see it (bwrap)
  // The pin images the job's view is served from and their STATE/pins/<key> locks
  // (run_pin_images.h): held until the job is gone.
  std::vector<UniqueFd> pin_holds;
  // `rebuild --vary fileordering`: the source's reordered copy (run_fileordering.h), removed with
  // the run.
  std::shared_ptr<void> reordered_source;
  bool owned_claimed = false;
  std::optional<ownedfs::OwnedFs> owned_fs;   // mounted over the owned root (run_owned_space.h)
  std::optional<ownedfs::OwnedFs> result_fs;  // the job's /out (run_result_space.h)
  uint64_t pids_refused = 0;  // the group's pids.events "max", read at its stop (limits_hit.h)
  RunJournal journal;
  std::vector<std::unique_ptr<Mechanism>> mechanisms;
  Mechanism* chosen = nullptr;
  std::vector<resgroup::BackendProbe> group_probes;  // probed once, for the grant and the group
  std::unique_ptr<resgroup::ResourceGroup> group;
  std::unique_ptr<census::CensusThread> census;
  std::unique_ptr<ContainedJob> job;
  std::optional<JobExit> job_exit;
  // The check after the job while it runs beside the cleanup (view_recheck.h).
  std::shared_ptr<PendingViewRecheck> view_recheck;

 private:
  int exit_ = 0;
};

}  // namespace sealrun::run
