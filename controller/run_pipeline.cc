// The run pipeline: see run_pipeline.h. One Pipeline object per run holds every resource the run
// acquires, so that cleanup_stage() can always find and release them, whatever stage failed.
#include "controller/run_pipeline.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "admission/admitted.h"
#include "census/census_thread.h"
#include "containment/bwrap.h"
#include "containment/grant.h"
#include "containment/grant_journal.h"
#include "containment/job_user.h"
#include "containment/podman.h"
#include "containment/podman_argv.h"
#include "containment/resgroup/cgroupfs_io.h"
#include "containment/resgroup/resource_group.h"
#include "controller/exit_codes.h"
#include "controller/run_dirs.h"
#include "controller/run_outputs.h"
#include "controller/run_plan.h"
#include "controller/stop_switch.h"
#include "core/atomic_write.h"
#include "core/syscall.h"
#include "fingerprint/tree.h"

namespace sealrun::run {

namespace {

class Pipeline {
 public:
  // The state directory is made absolute once: mechanisms bind paths into other namespaces.
  explicit Pipeline(const RunRequest& req)
      : req_(req),
        layout_(layout_for(std::filesystem::absolute(req.state_dir).lexically_normal().string(),
                           req.id)) {}
  RunOutcome run();

 private:
  bool admit_stage();
  bool grant_stage();
  bool group_stage();
  bool job_stage();
  void post_run_stage();
  void cleanup_stage();
  RunOutcome finish();

  // Records a failure; the most serious exit code wins (7 over 6 over 5, ...), the first reason
  // of the most serious code is the one a person reads.
  void fail(int code, std::string reason) {
    if (code > exit_) {
      exit_ = code;
      r_.reason = std::move(reason);
    } else if (r_.reason.empty()) {
      r_.reason = std::move(reason);
    }
  }
  void cleanup(std::string action, const Status& st, std::string detail = {}) {
    r_.cleanup.push_back(
        {std::move(action), st.ok(), st.ok() ? std::move(detail) : st.error().message()});
  }
  const admission::AdmissionDocument& doc() const { return admitted_->document(); }
  void stop_job_now();

  RunRequest req_;
  RunLayout layout_;
  receipt::Receipt r_;
  int exit_ = kExitOk;
  int64_t started_ms_ = monotonic_ms();
  size_t receipt_max_bytes_ = 1024 * 1024;
  std::optional<SignalWatch> watch_;
  StopSwitch stop_;
  std::optional<admission::Admitted> admitted_;
  std::vector<std::unique_ptr<Mechanism>> mechanisms_;
  Mechanism* chosen_ = nullptr;
  std::optional<Grant> grant_;
  std::unique_ptr<resgroup::ResourceGroup> group_;
  std::optional<GrantJournal> journal_;
  bool journal_recorded_ = false;
  GrantRecord journal_record_;
  std::unique_ptr<ContainedJob> job_;
  std::optional<JobExit> job_exit_;
  std::unique_ptr<census::CensusThread> census_;
};

// Said once, where it is handled: a degradation the run survives, for the person at stderr.
void warn(const std::string& what) {
  std::fprintf(stderr, "sealrun run: warning: %s\n", what.c_str());
}

receipt::Verification to_verification(const admission::PinCheck& c) {
  std::string observed = c.observed;
  if (c.status == admission::CheckStatus::kSkipped) observed = "skipped: " + observed;
  return {c.target, c.expected, observed, c.passed()};
}

bool Pipeline::admit_stage() {
  admission::VerifyOptions options;
  options.source_export_dir = layout_.source_dir;
  auto outcome = admission::admit(req_.admission_path, req_.sha256, options);
  for (const auto& c : outcome.report.checks) r_.verifications.push_back(to_verification(c));
  if (!outcome.admitted) {
    // Name each failed pin with what was found, so a person sees which file drifted.
    std::string details;
    for (const auto& c : outcome.report.checks) {
      if (c.status != admission::CheckStatus::kFail || outcome.report.refusal) continue;
      details +=
          fmt::format("; {}: observed {}", c.target,
                      c.observed.size() > 300 ? c.observed.substr(0, 300) + "…" : c.observed);
    }
    fail(kExitAdmissionRefused, "admission refused: " + outcome.report.summary() + details);
    return false;
  }
  admitted_.emplace(std::move(*outcome.admitted));
  receipt_max_bytes_ = doc().limits.receipt_max_bytes;
  watch_->set_deadline(started_ms_ + static_cast<int64_t>(doc().limits.outer_s) * 1000);
  if (auto why = stop_.requested()) {
    fail(why->exit_code, why->reason);
    return false;
  }
  return true;
}

bool Pipeline::grant_stage() {
  auto request = parse_mechanism(req_.mechanism);
  if (!request) {
    fail(kExitUsage, request.error().message());
    return false;
  }
  auto order = mechanism_order(doc(), *request);
  if (!order) {
    fail(kExitUsage, order.error().message());
    return false;
  }
  std::vector<Mechanism*> ranked;
  for (const auto& name : *order) {
    mechanisms_.push_back(name == "podman" ? make_podman_mechanism() : make_bwrap_mechanism());
    ranked.push_back(mechanisms_.back().get());
  }
  if (auto st = prepare_job_dirs(layout_); !st) {
    fail(kExitContainmentUnavailable,
         "cannot prepare the job's directories: " + st.error().message());
    return false;
  }
  GroupCapabilities groups;
  for (const auto& p : resgroup::probe_backends()) {
    if (!p.available) continue;
    groups.memory = groups.memory || p.memory_max;
    groups.process_count = groups.process_count || p.pids_max;
    if (groups.backend.empty()) groups.backend = std::string(resgroup::backend_name(p.backend));
  }
  ContainmentSpec spec = containment_spec(*admitted_, layout_, req_.id, req_.mode);
  auto grant = acquire_grant(spec, ranked, groups);
  if (!grant) {
    fail(kExitContainmentUnavailable, "no containment grant: " + grant.error().message());
    return false;
  }
  grant_.emplace(std::move(*grant));
  for (const auto& m : mechanisms_)
    if (m->name() == grant_->mechanism) chosen_ = m.get();
  for (const auto& w : grant_->warnings) warn(w);
  r_.grant = receipt::GrantRecord{grant_->mechanism,
                                  req_.mode == GrantMode::kEnforcing ? "enforcing" : "report-only",
                                  grant_->enforced.names(),
                                  grant_->degraded.names(),
                                  grant_->unenforced_required.names(),
                                  grant_->required.names(),
                                  grant_->tried};
  if (chosen_ == nullptr) {
    fail(kExitContainmentUnavailable,
         "the grant names mechanism " + grant_->mechanism + ", which was not asked");
    return false;
  }
  return true;
}

bool Pipeline::group_stage() {
  const auto& limits = doc().limits;
  bool memory_required = grant_->required.contains(Dimension::kMemory) ||
                         grant_->required.contains(Dimension::kProcessCount);
  bool enforcing = req_.mode == GrantMode::kEnforcing;
  auto group = resgroup::create_group(req_.id, group_limits(limits));
  if (!group) {
    if (memory_required && enforcing) {
      fail(kExitContainmentUnavailable,
           "no resource group for the required memory limits: " + group.error().message());
      return false;
    }
    warn("running without a resource group: " + group.error().message());
    return true;
  }
  group_ = std::move(*group);
  receipt::MemoryRecord memory;
  memory.backend = std::string(resgroup::backend_name(group_->backend()));
  auto readback = group_->read_back();
  if (!readback) {
    fail(kExitContainmentUnavailable,
         "could not read the group's limits back: " + readback.error().message());
    return false;
  }
  bool max_applied = false;
  for (const auto& l : *readback) {
    memory.limits.push_back({l.name, l.requested, l.observed, l.applied, l.note});
    if (l.name == "memory_max_bytes")
      max_applied = l.applied && l.observed && *l.observed == l.requested;
  }
  r_.memory = memory;
  if (!max_applied && enforcing && grant_->required.contains(Dimension::kMemory)) {
    fail(kExitContainmentUnavailable, "memory.max was not applied as admitted (see memory.limits)");
    return false;
  }

  // Record the grant durably before anything runs, so `sealrun sweep` finds what a killed
  // controller leaves. A journal that cannot be written is loud, but narrows nothing.
  auto journal = GrantJournal::open(layout_.state_dir);
  if (journal) {
    journal_.emplace(std::move(*journal));
    GrantRecord rec;
    rec.id = req_.id;
    rec.owner_uid = ::geteuid();
    rec.controller_pid = ::getpid();
    auto start = own_process_start();  // lets sweep tell our pid from a recycled one
    rec.controller_start = start ? *start : "";
    rec.mechanism = grant_->mechanism;
    rec.job_user = ::geteuid() == 0 ? job_user_name() : "";
    rec.group_backend = memory.backend;
    rec.group_locators = group_->locators();
    rec.owned_root = layout_.owned_root;
    if (grant_->mechanism == "podman") {  // where sweep finds the container if we are killed
      rec.container_name = podman::container_name(req_.id);
      rec.podman_root = podman::storage_layout(layout_.owned_root).graph_root;
    }
    rec.created_at = utc_timestamp_now();
    journal_record_ = rec;
    if (auto st = journal_->record(rec); st)
      journal_recorded_ = true;
    else
      warn("grant journal: " + st.error().message());
  } else {
    warn("grant journal: " + journal.error().message());
  }
  return true;
}

void Pipeline::stop_job_now() {
  int64_t grace = grant_ ? grant_->spec.stop_grace_ms : 5000;
  if (group_)
    (void)group_->stop(grace);
  else if (job_)
    (void)job_->stop(grace);
}

bool Pipeline::job_stage() {
  auto out = open_at(AT_FDCWD, layout_.logs_dir + "/job.stdout",
                     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
  auto err = open_at(AT_FDCWD, layout_.logs_dir + "/job.stderr",
                     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
  if (!out || !err) {
    fail(kExitContainmentUnavailable, "cannot create the job's log files in " + layout_.logs_dir);
    return false;
  }
  receipt::CommandRecord cmd;
  cmd.label = "job";
  cmd.argv = doc().command.argv;
  cmd.started = utc_timestamp_now();
  JobIo io{-1, out->get(), err->get()};
  auto job = chosen_->spawn(*grant_, group_.get(), io);
  if (!job) {
    fail(kExitContainmentUnavailable,
         "the contained job could not be started: " + job.error().message());
    return false;
  }
  job_ = std::move(*job);
  out->reset();
  err->reset();
  if (journal_recorded_) {  // now sweep can also find the job's outermost process
    journal_record_.job_pid = job_->pid();
    // The pid and its starttime together name the process: sweep will not mistake a recycled pid
    // for the job.
    if (auto start = resgroup::process_starttime("/proc", job_->pid()); start)
      journal_record_.job_start = *start;
    if (auto st = journal_->record(journal_record_); !st)
      warn("grant journal: " + st.error().message());
  }

  census_ = std::make_unique<census::CensusThread>(
      census_config(doc().limits, layout_), [this](const census::GuardTrip& trip) {
        stop_.request({"growth guard tripped: " + trip.describe(), kExitGuardTripped});
      });
  if (auto st = census_->start(); !st)
    stop_.request(
        {"the growth census could not start, so guards were unenforced: " + st.error().message(),
         kExitJobFailed});
  stop_.arm([this] { stop_job_now(); });

  auto exit = job_->wait();
  cmd.finished = utc_timestamp_now();
  if (exit) {
    job_exit_ = *exit;
    if (exit->status.code >= 0) cmd.exit = exit->status.code;
    cmd.signal = exit->status.signal;
    cmd.timed_out = exit->timed_out;
  } else {
    fail(kExitJobFailed, "waiting for the job failed: " + exit.error().message());
  }
  if (auto s = summarise_stream(layout_.logs_dir + "/job.stdout"); s) cmd.stdout_record = *s;
  if (auto s = summarise_stream(layout_.logs_dir + "/job.stderr"); s) cmd.stderr_record = *s;
  r_.commands.push_back(cmd);
  return true;
}

void Pipeline::post_run_stage() {
  // A stop that was asked for (guard, signal, deadline) explains the job's end better than the
  // signal the job died of, so it is recorded first.
  if (auto why = stop_.requested()) fail(why->exit_code, why->reason);
  if (job_exit_ && !job_exit_->status.success()) {
    fail(kExitJobFailed,
         job_exit_->timed_out
             ? fmt::format("the job ran past its wall-clock limit of {} s and was stopped",
                           doc().limits.wall_clock_s)
             : "the job ended with " + job_exit_->status.describe());
  }

  // The toolchain must be exactly what was admitted, after the job as before it.
  auto after = tree_digest(doc().toolchain.root);
  std::string observed = after ? after->sha256 : after.error().message();
  bool same = after && after->sha256 == doc().toolchain.tree_sha256;
  r_.verifications.push_back(
      {"toolchain.tree_sha256 (after the run)", doc().toolchain.tree_sha256, observed, same});
  if (!same) fail(kExitJobFailed, "the toolchain changed during the run");

  auto outputs = collect_outputs(layout_.output_dir);
  if (outputs) {
    r_.outputs = outputs->outputs;
    for (const auto& ignored : outputs->ignored)
      r_.cleanup.push_back({"ignore output " + ignored, true, ""});
  } else {
    fail(kExitJobFailed, "the outputs could not be collected: " + outputs.error().message());
  }
  // Logs are kept beside the receipt, within what is left of the result allowance.
  uint64_t used = outputs ? outputs->total_bytes : 0;
  uint64_t allowance =
      doc().limits.result_max_bytes > used ? doc().limits.result_max_bytes - used : 0;
  uint64_t per_log = std::min<uint64_t>(allowance / 2, 16ULL << 20);
  if (make_dir_at(AT_FDCWD, layout_.results_root + "/logs", 0755)) {
    for (const char* name : {"job.stdout", "job.stderr"}) {
      auto kept = keep_log_tail(layout_.logs_dir + "/" + name,
                                layout_.results_root + "/logs/" + name, per_log);
      cleanup(fmt::format("keep log {}", name), kept.ok() ? ok_status() : Status(kept.error()),
              kept ? fmt::format("{} bytes kept", *kept) : "");
    }
  }
}

void Pipeline::cleanup_stage() {
  stop_.disarm();
  if (census_) {
    census_->stop();
    r_.samples = census_->samples();
    r_.samples_dropped = census_->dropped();
    if (auto trip = census_->trip()) {
      r_.guard = receipt::GuardRecord{trip->name, trip->limit, trip->observed, trip->t_ms};
      fail(kExitGuardTripped, "growth guard tripped: " + trip->describe());
    }
  }
  bool spawned = job_ != nullptr;
  r_.stop_confirmed = !spawned;
  stop_.exclusive([&] {
    int64_t grace = grant_ ? grant_->spec.stop_grace_ms : 5000;
    if (job_ && !job_exit_) cleanup("stop the job", job_->stop(grace));
    if (group_) {
      auto stop = group_->stop(grace);
      if (stop) {
        r_.stop_confirmed = stop->confirmed;
        std::string actions;
        for (const auto& a : stop->actions) actions += (actions.empty() ? "" : "; ") + a;
        cleanup(
            "stop the resource group",
            stop->confirmed ? ok_status() : Status(Error::make("not confirmed empty: " + actions)),
            actions);
      } else {
        cleanup("stop the resource group", Status(stop.error()));
      }
      if (auto mem = group_->memory_report(); mem && r_.memory) {
        r_.memory->peak_bytes = mem->peak_bytes;
        r_.memory->events_high = mem->events_high;
        r_.memory->events_max = mem->events_max;
        r_.memory->events_oom = mem->events_oom;
        r_.memory->events_oom_kill = mem->events_oom_kill;
        r_.memory->swap_used_bytes = mem->swap_used_bytes;
      }
      cleanup("remove the resource group", group_->remove());
    } else if (spawned) {
      // Without a group only the outermost process can be confirmed gone; the mechanism's pid
      // namespace (bwrap --die-with-parent / podman's) takes the rest with it.
      r_.stop_confirmed = job_exit_.has_value();
    }
  });
  if (job_) {
    auto actions = job_->cleanup();
    // The mechanism's own words (with pids and container ids) are details; the action label stays
    // stable so that `receipt diff` of two runs of the same thing shows no difference.
    if (actions)
      for (const auto& a : *actions)
        r_.cleanup.push_back({grant_->mechanism + " cleanup", true, a});
    else
      cleanup("remove what the mechanism created", Status(actions.error()));
  }
  if (r_.memory && r_.memory->events_oom_kill > 0 && exit_ == kExitJobFailed) {
    uint64_t max = 0;
    for (const auto& l : r_.memory->limits)
      if (l.name == "memory_max_bytes") max = l.requested;
    r_.reason = fmt::format(
        "out of memory: the job was OOM-killed at its memory limit "
        "(memory_max_bytes {}; {} OOM kill(s))",
        max, r_.memory->events_oom_kill);
  }
  if (journal_recorded_) cleanup("forget the grant record", journal_->forget(req_.id));
  cleanup("remove the owned root", remove_owned_root(layout_, req_.id), layout_.owned_root);
  if (spawned && !r_.stop_confirmed)
    fail(kExitStopUnconfirmed, "the job's stop could not be confirmed");
  for (const auto& c : r_.cleanup)
    if (!c.ok) fail(kExitStopUnconfirmed, "cleanup failed: " + c.action + ": " + c.detail);
}

RunOutcome Pipeline::finish() {
  r_.exit = exit_;
  r_.state = job_ == nullptr ? "not_run" : (exit_ == kExitOk ? "built" : "failed");
  if (r_.state == "built") r_.reason = "the job exited 0 and every check passed";
  r_.finished = utc_timestamp_now();
  RunOutcome o;
  o.exit_code = exit_;
  std::string bytes = receipt::render_receipt(r_, receipt_max_bytes_);
  if (auto st = write_file_atomic(layout_.receipt_path, bytes, 0644); st) {
    o.receipt_path = layout_.receipt_path;
  } else {
    o.message = "the receipt could not be written: " + st.error().message();
    o.exit_code = std::max(o.exit_code, static_cast<int>(kExitStopUnconfirmed));
  }
  o.receipt = std::move(r_);
  return o;
}

RunOutcome Pipeline::run() {
  r_.id = req_.id;
  r_.admission_sha256 = req_.sha256;
  r_.started = utc_timestamp_now();
  if (auto st = validate_run_id(req_.id); !st) return {kExitUsage, "", {}, st.error().message()};
  if (auto st = claim_run_dirs(layout_, req_.id); !st)
    return {kExitUsage, "", {}, st.error().message()};
  // Before any thread exists: block the stop signals and watch them on a thread of our own.
  watch_.emplace(stop_, started_ms_ + 1800 * 1000);
  if (admit_stage() && grant_stage() && group_stage() && job_stage()) post_run_stage();
  cleanup_stage();
  RunOutcome outcome = finish();
  watch_.reset();
  return outcome;
}

}  // namespace

RunOutcome run_pipeline(const RunRequest& request) { return Pipeline(request).run(); }

}  // namespace sealrun::run
