// SPDX-License-Identifier: Apache-2.0
// sweep_recorded_run(): see sweep_run.h.
#include "containment/sweep_run.h"

#include <fmt/format.h>
#include <signal.h>

#include <charconv>

#include "containment/pin_mount.h"
#include "containment/resgroup/resource_group.h"
#include "core/job_user.h"
#include "core/proc.h"
#include "core/process_ref.h"

namespace sealrun {
namespace {

uint64_t to_u64(std::string_view s) {
  uint64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

}  // namespace

SweepStep sweep_job_process(const GrantRecord& r) {
  SweepStep s{fmt::format("job pid {}", r.job_pid), "", false};
  auto proc = ProcessRef::from_pid(r.job_pid);
  if (!proc) {
    s.outcome = "not running";
    return s;
  }
  // The ProcessRef pins the process whose start time it read: the checks below are about it.
  bool same = r.job_start.empty() ? to_u64(proc->starttime()) >= to_u64(r.controller_start)
                                  : proc->starttime() == r.job_start;
  bool user_ok = true;
  if (!r.job_user.empty()) {
    auto u = lookup_job_user(r.job_user);
    auto uid = process_real_uid(r.job_pid);
    // bwrap's process runs as the run's own uid (job_ids.h), podman's as the job user.
    user_ok = uid.ok() && ((u.ok() && *uid == u->uid) ||
                           (r.job_uid >= 0 && static_cast<int64_t>(*uid) == r.job_uid));
  }
  if (!same || !user_ok) {
    const char* why = !same ? (r.job_start.empty() ? "started before the controller"
                                                   : "started at another time than the job")
                            : "not the job user's";
    s.outcome = fmt::format("pid now belongs to another process ({}): not touched", why);
    return s;
  }
  (void)proc->signal(SIGKILL);
  if (proc->exited_within(5000)) {
    s.outcome = "killed";
  } else {
    s.outcome = "SIGKILL sent but the process did not exit within 5 s";
    s.left = true;
  }
  return s;
}

std::vector<SweepStep> sweep_recorded_run(const GrantRecord& r, int64_t grace_ms,
                                          const MechanismContext& context) {
  std::vector<SweepStep> steps;
  if (recorded_in_another_boot(r)) {
    // Written before a reboot: its groups and processes are gone, and a pid with the same start
    // time now may well be another process (start times count from boot).
    if (!r.group_locators.empty() || r.job_pid > 0)
      steps.push_back({"groups and processes of run " + r.id,
                       "gone with the reboot (recorded in boot " + r.boot_id + ")", false});
  } else {
    steps = resgroup::sweep_recorded(
        {r.group_backend, r.group_locators, r.id, r.controller_pid, r.controller_start}, grace_ms);
    if (r.job_pid > 0) steps.push_back(sweep_job_process(r));
    // Its pin images' loop devices (pin_mount.h), once nothing of the job is left to use them.
    for (auto& s : sweep_pin_loops(r.id)) steps.push_back(std::move(s));
  }
  // Recorded before a grant named a mechanism: no mechanism was given anything to make.
  if (r.mechanism.empty() && r.mechanism_locators.empty()) return steps;
  auto kind = parse_mechanism_kind(r.mechanism);
  if (!kind) {
    steps.push_back({"mechanism " + r.mechanism,
                     fmt::format("unknown to this sealrun (it knows {}): its leftovers, if any, "
                                 "are not swept",
                                 mechanism_kind_names()),
                     !r.mechanism_locators.empty()});
    return steps;
  }
  MechanismContext ctx = context;
  if (!r.job_user.empty()) ctx.job_user = r.job_user;
  auto mechanism = make_mechanism(*kind, ctx);
  if (!mechanism) {
    steps.push_back({"mechanism " + r.mechanism, mechanism.error().message(), true});
    return steps;
  }
  for (auto& s : (*mechanism)
                     ->sweep_leftovers({r.id, r.owned_root, r.job_user, r.mechanism_locators,
                                        r.controller_start}))
    steps.push_back(std::move(s));
  return steps;
}

}  // namespace sealrun
