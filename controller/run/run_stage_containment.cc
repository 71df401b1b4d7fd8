// SPDX-License-Identifier: Apache-2.0
// Stages 3–5 of the run (run_stages.h): the owned roots, the grant, the resource group. Each thing
// the run creates is recorded in the grant journal before it exists, so `sealrun sweep` can find
// it after a killed controller.
#include <fmt/format.h>
#include <unistd.h>

#include "containment/view_plan.h"
#include "controller/receipt/receipt_admission.h"
#include "controller/run/run_dirs.h"
#include "controller/run/run_fileordering.h"
#include "controller/run/run_handover.h"
#include "controller/run/run_image_root.h"
#include "controller/run/run_owned_space.h"
#include "controller/run/run_pin_images.h"
#include "controller/run/run_result_space.h"
#include "controller/run/run_stages.h"
#include "controller/run/slurm_context.h"
#include "controller/run/view_exec_check.h"
#include "core/exit_codes.h"
#include "core/proc.h"
#include "core/stage_trace.h"
#include "core/syscall.h"

namespace sealrun::run {

namespace {

// What a person refused for want of containment can do about it: most refusals of a run started
// without root come from what only root may set up (cgroups, the job user), and report-only mode
// runs anyway with the shortfall recorded.
// Under Slurm, when process_count is what is missing, the SPANK plugin that gives it
// (slurm_context.h).
std::string ways_out(const RunContext& run, bool process_count_missing = false) {
  if (run.req.mode == GrantMode::kReportOnly) return "";
  const std::string slurm =
      slurm_spank_advice(environ_map(), process_count_missing, ::geteuid() == 0);
  if (!slurm.empty())
    return ". " + slurm + ". Else: pass --mode report-only to run with the shortfall recorded";
  std::string out = ". Ways out: ";
  if (::geteuid() != 0)
    out +=
        "run sealrun as root (it then runs the job as the unprivileged job user, with its "
        "limits enforced), or ";
  return out + "pass --mode report-only to run with the shortfall recorded in the receipt";
}

}  // namespace

StageStatus stage_claim_owned_roots(RunContext& run) {
  auto user = resolve_job_identity(run.mechanism_context.job_user);
  if (!user)
    return stage_fail(kExitContainmentUnavailable,
                      "no unprivileged identity to run the job as: " + user.error().message());
  run.job_user = *user;
  // The run's own uid and gid (run_handover.h): the job's directories are given to them.
  auto mine = take_job_ids(run, *user);
  if (!mine)
    return stage_fail(kExitContainmentUnavailable,
                      "no uid of its own for the run: " + mine.error().message());
  GrantRecord first;
  first.id = run.req.id;
  first.owner_uid = ::geteuid();
  first.controller_pid = ::getpid();
  auto start = own_starttime();  // lets sweep tell our pid from a recycled one
  first.controller_start = start ? *start : "";
  first.job_user = user->drop ? user->name : "";
  first.owned_root = run.layout.owned_root;
  if (run.job_ids) {
    first.job_uid = run.job_ids->uid;
    first.job_gid = run.job_ids->gid;
  }
  first.created_at = utc_timestamp_now();
  // Record before create: without a record, `sweep` could not find what follows.
  trace::mark("claim.journal_open");
  if (auto st = run.journal.open(*run.state, std::move(first)); !st) {
    (void)give_back_job_ids(run);  // nothing was given to them
    return stage_fail(kExitContainmentUnavailable,
                      "the run cannot be recorded for `sealrun sweep`, so nothing is created: " +
                          st.error().message());
  }
  if (auto st = claim_run_dirs(*run.state, run.layout, run.req.id); !st)
    return stage_fail(kExitUsage, st.error().message());
  run.owned_claimed = true;
  trace::mark("claim.owned_and_result_space");
  PendingResultSpace result_space = begin_result_space(run);  // made meanwhile, on a thread
  make_owned_space(run);
  if (auto st = make_result_space(run, std::move(result_space)); !st)
    return stage_fail(kExitContainmentUnavailable, st.error().message());
  trace::mark("claim.job_dirs");
  if (auto st = prepare_job_dirs(*run.state, run.layout, *mine); !st)
    return stage_fail(kExitContainmentUnavailable,
                      "cannot prepare the job's directories: " + st.error().message());
  // A writable source is the run's private copy (never the host's tree): the job's to change.
  if (run.doc().mounts.source_writable)
    if (auto st = give_tree(job_source_root(run), *mine); !st)
      return stage_fail(kExitContainmentUnavailable,
                        "cannot give the source copy to the job user: " + st.error().message());
  return stage_ok();
}

StageStatus stage_acquire_grant(RunContext& run) {
  const auto& doc = run.doc();
  // A learning run needs a moment between the sandbox and the command (Mechanism docs).
  auto kinds = run.req.learning
                   ? Result<std::vector<MechanismKind>>(learning_mechanisms(run.mechanism_context))
                   : mechanism_candidates(doc.image.has_value(), doc.containment.mechanism,
                                          run.req.mechanism);
  if (!kinds) return stage_fail(kExitUsage, kinds.error().message());
  // The probe cache lives in the state directory: root's (or the caller's), never the job's.
  run.mechanism_context.probe_cache_dir = run.layout.state_dir + "/probe-cache";
  std::vector<Mechanism*> ranked;
  for (MechanismKind kind : *kinds) {
    auto made = run.deps.make_mechanism(kind, run.mechanism_context);
    if (!made) return stage_fail(kExitContainmentUnavailable, made.error().message());
    run.mechanisms.push_back(std::move(*made));
    ranked.push_back(run.mechanisms.back().get());
  }
  run.group_probes = run.deps.probe_groups();
  const GroupCapabilities groups = group_capabilities(run.group_probes);
  ContainmentSpec spec =
      containment_spec(*run.admitted, job_layout(run), run.req.id, run.req.mode, run.req.vary);
  if (run.job_ids)
    spec.job_ids =
        ContainmentSpec::HostIds{run.job_ids->uid, run.job_ids->gid, run.job_ids->podman_user,
                                 run.job_user.uid, run.job_user.gid};
  if (run.req.learning) add_learning_mounts(*run.req.learning, spec);
  if (auto st = vary_file_order(run, spec); !st)  // rebuild --vary fileordering
    return stage_fail(kExitContainmentUnavailable, st.error().message());
  // A merged-/usr host's /bin, /lib64, ... links, where the view has what they point to.
  add_compat_links(read_host_compat_links(), &spec);
  if (run.doc().env.find("PATH") == run.doc().env.end())
    run.warn("the admission sets no PATH: the job was given PATH=" + default_job_path(run.doc()));
  auto grant = acquire_grant(spec, ranked, groups);
  if (!grant)
    return stage_fail(kExitContainmentUnavailable,
                      "no containment grant: " + grant.error().message() +
                          ways_out(run, spec.required.contains(Dimension::kProcessCount) &&
                                            !groups.process_count));
  run.grant.emplace(std::move(*grant));
  for (const auto& m : run.mechanisms)
    if (m->name() == run.grant->mechanism) run.chosen = m.get();
  for (const auto& w : run.grant->warnings) run.warn(w);
  const Grant& g = *run.grant;
  run.receipt.grant =
      receipt::ContainmentRecord{g.mechanism,
                                 g.mode == GrantMode::kEnforcing ? "enforcing" : "report-only",
                                 g.enforced.names(),
                                 g.degraded.names(),
                                 g.unenforced_required.names(),
                                 g.required.names(),
                                 g.tried};
  run.receipt.grant->job_identity = run.job_ids ? "own" : "caller";
  run.receipt.grant->job_uid = run.job_ids ? run.job_ids->uid : run.job_user.uid;
  run.receipt.grant->job_gid = run.job_ids ? run.job_ids->gid : run.job_user.gid;
  if (run.chosen == nullptr)
    return stage_fail(kExitContainmentUnavailable,
                      "the grant names mechanism " + g.mechanism + ", which was not asked");
  // probe() is memoized: this is the probe the grant was made from.
  if (auto use = run.chosen->probe().cache)
    run.receipt.grant->probe = receipt::ProbeRecord{use->cached, use->key, use->note};
  // For a mechanism that cannot run an image itself (bwrap) an admitted image is unpacked
  // (verified, cached) and its entries become the root.
  if (auto st = add_image_root(run); !st)
    return stage_fail(kExitContainmentUnavailable,
                      "the image's root file system for bwrap: " + st.error().message());
  // What the mechanism itself puts into the view (podman: its init binary, the files it would
  // generate), each pinned, so that the view recorded is all the job sees (docs/view.md).
  auto own = run.chosen->own_view_entries(run.grant->spec);
  if (!own)
    return stage_fail(kExitContainmentUnavailable,
                      "the mechanism's own part of the view: " + own.error().message());
  for (ViewEntry& e : *own) run.grant->spec.files_and_links.push_back(std::move(e));
  // Pinned trees, the image root and the closure from verified read-only images where possible.
  if (auto st = serve_pins_from_images(run); !st.ok()) return st;
  // What the job will see, from the same plan the mechanism's command line is built from.
  run.receipt.view = receipt::view_json(plan_view(g.spec, run.chosen->view_root()));
  receipt::annotate_source_view(&run.receipt.view, run.admitted->document());
  // A command that cannot start in this view (its ELF interpreter absent) is refused before it
  // runs, naming what is missing (view_exec_check.h). A mechanism whose root is its own image
  // (podman) is not read here: only a view made wholly of planned entries can be checked.
  if (run.chosen->view_root() == ViewRoot::kEmptyTmpfs)
    if (auto st = check_job_can_exec(plan_view(g.spec, ViewRoot::kEmptyTmpfs), g.spec.argv,
                                     g.spec.env, g.spec.cwd);
        !st)
      return stage_fail(kExitAdmissionRefused, "admission refused: " + st.error().message());
  // Locators name what the mechanism will make that outlives a reboot (podman's storage): the
  // record of them is durable before they exist. Without any (bwrap: namespaces and mounts, gone
  // with a reboot, and nothing for sweep to do by the mechanism's name), the name is written with
  // the next update (the resource group's or the job's): no write of its own.
  auto locators = run.chosen->journal_locators(g.spec);
  auto change = [&](GrantRecord& r) {
    r.mechanism = g.mechanism;
    r.mechanism_locators = std::move(locators);
  };
  if (locators.empty()) {
    run.journal.note(change);
    return stage_ok();
  }
  if (auto recorded = run.journal.update(change, RecordDurability::kDurable); !recorded)
    // what the mechanism makes could not be found by `sweep`: make nothing
    return stage_fail(
        kExitContainmentUnavailable,
        "the grant could not be recorded for `sealrun sweep`: " + recorded.error().message());
  return stage_ok();
}

StageStatus stage_create_group(RunContext& run) {
  const Grant& g = *run.grant;
  bool memory_required =
      g.required.contains(Dimension::kMemory) || g.required.contains(Dimension::kProcessCount);
  bool enforcing = g.mode == GrantMode::kEnforcing;
  auto group = run.deps.make_group(run.req.id, group_limits(run.doc().limits), run.group_probes);
  if (!group) {
    if (memory_required && enforcing)
      return stage_fail(
          kExitContainmentUnavailable,
          "no resource group for the required memory limits (required: " +
              (g.required & DimensionSet{Dimension::kMemory, Dimension::kProcessCount}).joined() +
              "): " + group.error().message() +
              ways_out(run, g.required.contains(Dimension::kProcessCount)));
    run.warn("running without a resource group: " + group.error().message());
    return stage_ok();
  }
  run.group = std::move(*group);
  // Recorded at once: the group exists from here on, and sweep must be able to find it.
  // (Should this fail, sweep still finds the group by its name: sweep_stray_groups.) Not fsync'd
  // (the live record): a group (a cgroup, a transient systemd scope) does not outlive a reboot;
  // until then the renamed record is what every reader (sweep) sees.
  if (auto st = run.journal.update(
          [&](GrantRecord& r) {
            r.group_backend = std::string(resgroup::backend_name(run.group->backend()));
            r.group_locators = run.group->locators();
          },
          RecordDurability::kUntilReboot);
      !st)
    run.warn("grant journal: " + st.error().message());
  receipt::MemoryRecord memory;
  memory.backend = std::string(resgroup::backend_name(run.group->backend()));
  auto readback = run.group->read_back();
  if (!readback)
    return stage_fail(kExitContainmentUnavailable,
                      "could not read the group's limits back: " + readback.error().message());
  bool max_applied = false;
  for (const auto& l : *readback) {
    memory.limits.push_back(
        {l.name, l.requested, l.observed, l.applied, l.note, l.effective, l.effective_set_by});
    if (l.name == "memory_max_bytes")
      max_applied = l.applied && l.observed && *l.observed == l.requested;
  }
  run.receipt.memory = memory;
  if (!max_applied && enforcing && g.required.contains(Dimension::kMemory))
    return stage_fail(kExitContainmentUnavailable,
                      "memory.max was not applied as admitted (see memory.limits)");
  return stage_ok();
}

}  // namespace sealrun::run
