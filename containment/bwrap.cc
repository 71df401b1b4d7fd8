// SPDX-License-Identifier: Apache-2.0
// The bubblewrap mechanism's job lifecycle: spawn under a re-checked grant, wait with the
// wall-clock limit, stop (TERM to the job's processes, grace, then KILL), cleanup.
//
// Process shape: sealrun -> bwrap (our child, run as the job user) -> the sandbox's PID 1 (bwrap's
// init, in the new pid namespace) -> the job. bwrap passes PR_SET_PDEATHSIG(SIGKILL) to the
// sandbox (--die-with-parent), and when a pid namespace's PID 1 dies the kernel kills every other
// process in it, so SIGKILL to bwrap ends the whole tree; a signal to the namespace's PID 1 from
// outside would be ignored unless it is SIGKILL, which is why TERM goes to the job's processes.
#include "containment/bwrap.h"

#include <dirent.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include "containment/bwrap_launch.h"
#include "containment/grant.h"
#include "containment/job_etc.h"
#include "containment/resgroup/resource_group.h"
#include "core/process_ref.h"
#include "core/syscall.h"

namespace sealrun {

using bwrap_internal::Launched;

namespace {

class BwrapJob : public ContainedJob {
 public:
  BwrapJob(Launched launched, int64_t wall_clock_ms, int64_t grace_ms)
      : l_(std::move(launched)),
        deadline_ms_(monotonic_ms() + wall_clock_ms),
        grace_ms_(grace_ms) {}
  ~BwrapJob() override { kill_all(); }

  pid_t pid() const override { return l_.bwrap.pid(); }

  Result<JobExit> wait() override {
    if (exit_) return *exit_;
    JobExit out;
    for (;;) {
      int64_t left = deadline_ms_ - monotonic_ms();
      if (left <= 0) {
        out.timed_out = true;
        SEALRUN_TRY(stop(grace_ms_));
        break;
      }
      // Slices, so the status pipe cannot fill while the job runs long.
      auto st = SEALRUN_TRY(l_.bwrap.wait_for(std::min<int64_t>(left, 1000)));
      bwrap_internal::drain_status(l_);
      if (st) {
        bwrap_status_ = *st;
        break;
      }
    }
    if (!bwrap_status_) bwrap_status_ = SEALRUN_TRY(l_.bwrap.wait());
    bwrap_internal::drain_status(l_);
    // Nothing may outlive the job: the sandbox's PID 1 must be gone too.
    if (!pidfd_exited_within(l_.sandbox_pidfd.get(), 2000)) {
      bwrap_internal::pidfd_kill(l_.sandbox_pidfd.get());
      if (!pidfd_exited_within(l_.sandbox_pidfd.get(), 5000))
        return Error::make(fmt::format("the sandbox's PID 1 ({}) survived bwrap", l_.sandbox_pid));
    }
    out.status = *bwrap_status_;
    // bwrap exits with the job's code, or 128 + N when the job died of signal N (its own
    // convention, as in a shell); "exit-code" in the status stream says the same. A job that
    // deliberately exits 129..192 is indistinguishable; it is read as a signal.
    auto code = bwrap_internal::status_value(l_.status_text, "exit-code");
    if (out.status.signal == 0 && code) out.status.code = static_cast<int>(*code);
    out.status = status_from_shell_convention(out.status);
    exit_ = out;
    return out;
  }

  Status stop(int64_t grace_ms) override {
    if (bwrap_status_ || !l_.bwrap.running()) return ok_status();
    // TERM to the job's processes (not the namespace's PID 1, which would ignore it), each
    // through a pidfd checked to still be inside the sandbox's tree.
    if (l_.sandbox_pid > 0) {
      for (pid_t p : process_descendants(l_.sandbox_pid)) {
        int fd = pidfd_open_raw(p, 0);
        if (fd < 0) continue;
        UniqueFd owned(fd);
        pidfd_send_signal_raw(owned.get(), SIGTERM);
      }
    }
    if (grace_ms > 0 && pidfd_exited_within(l_.bwrap.pidfd(), grace_ms)) return ok_status();
    kill_all();
    if (!pidfd_exited_within(l_.bwrap.pidfd(), 5000))
      return Error::make(fmt::format("bwrap ({}) did not exit after SIGKILL", l_.bwrap.pid()));
    return ok_status();
  }

  Result<std::vector<std::string>> cleanup() override {
    std::vector<std::string> actions;
    if (!bwrap_status_ && l_.bwrap.running()) {
      kill_all();
      actions.push_back(fmt::format("bwrap {}: killed (cleanup before it had finished)", pid()));
    }
    bool gone = pidfd_exited_within(l_.bwrap.pidfd(), 5000) &&
                pidfd_exited_within(l_.sandbox_pidfd.get(), 5000);
    actions.push_back(
        gone ? fmt::format("bwrap {} and sandbox PID 1 {}: gone", pid(), l_.sandbox_pid)
             : fmt::format("bwrap {} or sandbox PID 1 {}: STILL RUNNING", pid(), l_.sandbox_pid));
    actions.push_back("bwrap: no state outside the run's owned root to remove");
    if (!gone) return Error::make(actions[0]);
    return actions;
  }

 private:
  void kill_all() {
    if (l_.bwrap.running() && !bwrap_status_) (void)l_.bwrap.signal(SIGKILL);
    bwrap_internal::pidfd_kill(l_.sandbox_pidfd.get());
  }

  Launched l_;
  int64_t deadline_ms_;
  int64_t grace_ms_;
  std::optional<ExitStatus> bwrap_status_;
  std::optional<JobExit> exit_;
};

}  // namespace

BwrapMechanism::BwrapMechanism(BwrapOptions options) : options_(std::move(options)) {}

MechanismProbe BwrapMechanism::probe() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!last_probe_) last_probe_ = run_probe();
  return *last_probe_;
}

Result<std::unique_ptr<ContainedJob>> BwrapMechanism::start(const Grant& grant,
                                                            resgroup::ResourceGroup* group,
                                                            const JobIo& io) {
  auto bwrap = SEALRUN_TRY(bwrap_internal::resolve_bwrap(options_));
  auto run_as = SEALRUN_TRY(bwrap_internal::resolve_run_as(options_));
  if (run_as && grant.spec.job_ids) {  // the run's own ids (job_ids.h), no supplementary groups
    run_as->uid = grant.spec.job_ids->uid;
    run_as->gid = grant.spec.job_ids->gid;
  }
  auto who = SEALRUN_TRY(resolve_job_identity(options_.job_user));
  auto etc = SEALRUN_TRY_CTX(write_job_etc(grant.spec, who), "the job's generated /etc files");
  auto launched = SEALRUN_TRY_CTX(
      bwrap_internal::launch(bwrap, run_as, grant, group, io, options_.probe_timeout_ms, etc),
      fmt::format("start run \"{}\" under bwrap", grant.spec.run_id));
  return std::unique_ptr<ContainedJob>(std::make_unique<BwrapJob>(
      std::move(launched), grant.spec.wall_clock_ms, grant.spec.stop_grace_ms));
}

Result<std::vector<ViewEntry>> BwrapMechanism::own_view_entries(const ContainmentSpec& spec) {
  auto who = SEALRUN_TRY(resolve_job_identity(options_.job_user));
  return job_etc_entries(spec, who);
}

std::vector<SweepStep> BwrapMechanism::sweep_leftovers(const LeftoverRun&) {
  // bwrap keeps no state outside the run's owned root, and its processes die with their parent
  // (--die-with-parent, and the pid namespace's PID 1 takes the rest): nothing of its own to find.
  return {};
}

std::unique_ptr<Mechanism> make_bwrap_mechanism(BwrapOptions options) {
  return std::make_unique<BwrapMechanism>(std::move(options));
}

}  // namespace sealrun
