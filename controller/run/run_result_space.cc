// SPDX-License-Identifier: Apache-2.0
// make_result_space(), take_result_space(), remove_result_space(), sweep_result_space(): see
// run_result_space.h.
#include "controller/run/run_result_space.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include "containment/ownedfs/ownedfs.h"
#include "controller/run/result_copy.h"
#include "controller/run/run_owned_space.h"
#include "core/exit_codes.h"

namespace sealrun::run {

uint64_t result_max_inodes(const admission::Limits& limits) {
  return limits.result_max_inodes != 0 ? limits.result_max_inodes
                                       : ownedfs::default_owned_max_inodes(limits.result_max_bytes);
}

namespace {

std::string result_mount_point(const RunLayout& layout, const std::string& id) {
  return layout.state_dir + "/owned/" + ownedfs::result_fs_id(id);
}

// The job's part of the result space: a directory at its root (ownedfs::OwnedFsSpec::job_dir),
// beside what the job must not see (lost+found, the filler inodes of an exact inode bound).
constexpr const char* kJobDir = "out";
std::string job_dir_of(const std::string& mount_point) { return mount_point + "/" + kJobDir; }

bool from_source(const RunContext& run) {
  return run.doc().mounts.outputs_from == admission::OutputsFrom::kSource;
}

// For outputs taken from the source, copies the verified source copy onto the result space just
// made, as the job's /src. When that fails — the source copy does not fit (the inputs alone fill
// result_max_bytes or its inodes) — the result space is removed again and the run goes on as
// before, the census guarding the source copy: the reason.
std::string fill_with_source(RunContext& run) {
  if (!from_source(run)) return "";
  const std::string root = job_dir_of(result_mount_point(run.layout, run.req.id));
  const std::string what = "the source copy could not be put on its own file system: ";
  Status st = ok_status();
  {
    auto from = run.state->open(run.admitted->source_root(), O_RDONLY | O_DIRECTORY);
    auto to = run.state->open(root, O_RDONLY | O_DIRECTORY);
    st = !from ? Status(from.error()) : !to ? Status(to.error()) : ok_status();
    if (st) st = copy_result_tree(from->get(), to->get(), {}, nullptr);
  }
  if (st) return "";
  std::string why = what + st.error().message();
  remove_result_space(run);
  return why;
}

}  // namespace

PendingResultSpace begin_result_space(RunContext& run) {
  const auto& limits = run.doc().limits;
  PendingResultSpace pending;
  ownedfs::Availability host;
  if (run.deps.probe_owned_fs) host = run.deps.probe_owned_fs();
  if (!host.available) {
    pending.why_not = "no file system of its own for the owned space either: " +
                      (host.why.empty() ? std::string("not probed") : host.why);
    return pending;
  }
  pending.why_not = ownedfs::unfit_shape(limits.result_max_bytes, result_max_inodes(limits));
  const std::string mount_point = result_mount_point(run.layout, run.req.id);
  if (pending.why_not.empty()) {
    if (auto st = run.state->make_dir(mount_point, 0711); !st)
      pending.why_not = "its mount point could not be made: " + st.error().message();
  }
  if (!pending.why_not.empty()) return pending;
  ownedfs::OwnedFsSpec spec;
  spec.state_dir = run.layout.state_dir;
  spec.id = ownedfs::result_fs_id(run.req.id);
  spec.mount_point = mount_point;
  spec.size_bytes = limits.result_max_bytes;
  spec.inodes = result_max_inodes(limits);
  // Like results/<id>/out it stands for: the job's, 0700 — the run's own uid and gid where it
  // has them (run_handover.h), else the job user's.
  spec.owner_uid = run.job_ids         ? run.job_ids->uid
                   : run.job_user.drop ? run.job_user.uid
                                       : ::geteuid();
  spec.owner_gid = run.job_ids         ? run.job_ids->gid
                   : run.job_user.drop ? run.job_user.gid
                                       : ::getegid();
  spec.root_mode = 0700;
  spec.job_dir = kJobDir;
  // The spec is the thread's own copy; it touches nothing of the run.
  pending.made = std::async(std::launch::async,
                            [spec = std::move(spec)] { return ownedfs::create_owned_fs(spec); });
  return pending;
}

Status make_result_space(RunContext& run, PendingResultSpace pending) {
  const auto& limits = run.doc().limits;
  receipt::OwnedSpaceRecord space{"directory", limits.result_max_bytes, result_max_inodes(limits),
                                  "", ""};
  std::string why = pending.why_not;
  const std::string mount_point = result_mount_point(run.layout, run.req.id);
  if (pending.made.valid()) {
    auto fs = pending.made.get();
    if (fs && !run.owned_fs) {
      // Both file systems or neither: without the owned one, /out stays a directory as before.
      run.result_fs = std::move(*fs);
      remove_result_space(run);
      why = "no file system of its own for the owned space either: " +
            (run.receipt.owned_space ? run.receipt.owned_space->why_not : std::string("not made"));
    } else if (fs) {
      space.kind = "filesystem";
      space.size_bytes = fs->size_bytes;
      space.inodes = fs->inodes;
      space.made = fs->made_by;
      run.result_fs = std::move(*fs);
      why = fill_with_source(run);
      if (!why.empty())
        space = {"directory", limits.result_max_bytes, result_max_inodes(limits), "", ""};
    } else {
      why = "the result file system could not be made: " + fs.error().message();
      (void)run.state->remove(mount_point, true);  // ours, just made, empty
    }
  }
  space.why_not = why;
  run.receipt.result_space = space;
  // Only a result space part-filled with the source copy that then would not go: the job must not
  // see a part of its source.
  if (run.result_fs && !why.empty())
    return Error::make("the result space could not be made ready nor removed: " + why);
  return ok_status();
}

RunLayout job_layout(const RunContext& run) {
  RunLayout layout = run.layout;
  if (run.result_fs && from_source(run))
    layout.job_source_dir = job_dir_of(run.result_fs->mount_point);
  else if (run.result_fs)
    layout.job_output_dir = job_dir_of(run.result_fs->mount_point);
  return layout;
}

std::string job_source_root(const RunContext& run) {
  return run.result_fs && from_source(run) ? job_dir_of(run.result_fs->mount_point)
                                           : run.admitted->source_root();
}

void guard_result_space(const RunContext& run, census::CensusConfig& config) {
  if (!from_source(run)) return;
  // The job's writes into /src are the run's results: on the result space its statfs figure (the
  // inputs included, as result_max_bytes counts them); else the walk of the source copy.
  if (run.result_fs)
    config.result_fs_root = run.result_fs->mount_point;
  else
    config.result_root = run.admitted->source_root();
}

bool take_result_space(RunContext& run, const StopCheck& stop) {
  if (!run.result_fs) return true;
  // By the state directory's own spelling (the file system's is canonical), beneath the held
  // state directory like every other path of the run.
  auto from = run.state->open(job_dir_of(result_mount_point(run.layout, run.req.id)),
                              O_RDONLY | O_DIRECTORY);
  // A writable source goes back where the source outputs are taken from (source_outputs.h): the
  // source copy, emptied first (the job's /src was the result space, not it).
  const std::string to_dir = from_source(run) ? run.admitted->source_root() : run.layout.output_dir;
  Status st = ok_status();
  if (from_source(run)) st = run.state->remove_tree(to_dir);
  if (st && from_source(run)) st = run.state->make_dir(to_dir, 0700);
  auto to = st ? run.state->open(to_dir, O_RDONLY | O_DIRECTORY) : Result<UniqueFd>(st.error());
  if (st) st = !from ? Status(from.error()) : !to ? Status(to.error()) : ok_status();
  if (st) st = copy_result_tree(from->get(), to->get(), stop, nullptr);
  if (!st) {
    std::string why = st.error().message();
    run.receipt.not_finished.push_back("outputs: not taken from /out's file system: " + why);
    run.record_failure({kExitJobFailed, "the outputs could not be taken from /out: " + why});
    return false;
  }
  return true;
}

namespace {

void record_result_space_removal(RunContext& run, const std::vector<ownedfs::Step>& steps) {
  // One cleanup entry for the whole teardown (unmount, loop device, image, record, mount point):
  // its detail lists each step, and it fails naming the steps that left something.
  bool left = false;
  std::string detail, failed;
  for (const auto& step : steps) {
    left |= step.left;
    std::string line = step.what + ": " + step.outcome;
    detail += (detail.empty() ? "" : "; ") + line;
    if (step.left) failed += (failed.empty() ? "" : "; ") + line;
  }
  run.cleanup_action(
      "remove /out's file system",
      left ? Status(Error::make(failed + " (all steps: " + detail + ")")) : ok_status(), detail);
  if (!left) run.result_fs.reset();
}

}  // namespace

void remove_result_space(RunContext& run) {
  if (!run.result_fs) return;
  record_result_space_removal(run, ownedfs::remove_owned_fs(*run.result_fs));
}

void remove_result_and_owned_space(RunContext& run) {
  std::future<std::vector<ownedfs::Step>> result_steps;
  if (run.result_fs)
    result_steps = std::async(std::launch::async,
                              [fs = *run.result_fs] { return ownedfs::remove_owned_fs(fs); });
  std::vector<ownedfs::Step> owned_steps;
  if (run.owned_fs) owned_steps = ownedfs::remove_owned_fs(*run.owned_fs);
  if (result_steps.valid()) record_result_space_removal(run, result_steps.get());
  record_owned_space_removal(run, owned_steps);
}

std::vector<SweepStep> sweep_result_space(const StateDir& state, const std::string& id) {
  std::vector<SweepStep> steps =
      ownedfs::sweep_owned_fs_of_run(state.path(), ownedfs::result_fs_id(id));
  bool left = false;
  for (const auto& s : steps) left |= s.left;
  // A mount point made just before a kill, with no file system yet: empty, and ours.
  const std::string mount_point = state.path() + "/owned/" + ownedfs::result_fs_id(id);
  if (!left && state.exists(mount_point)) {
    auto st = state.remove(mount_point, true);
    steps.push_back({"mount point " + mount_point,
                     st ? "removed" : "remove failed: " + st.error().message(), !st.ok()});
  }
  return steps;
}

}  // namespace sealrun::run
