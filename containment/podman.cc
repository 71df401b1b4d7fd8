// SPDX-License-Identifier: Apache-2.0
// The rootless podman mechanism and its running job (see podman.h). spawn() prepares the run's
// storage, loads the verified archive and refuses unless the loaded image has the admitted id, then
// starts `podman run` (built by podman_argv.cc) as the job user inside the resource group. The job
// is stopped with `podman kill` (TERM, grace, KILL) and, should podman itself hang, by signalling
// the podman process through its pidfd; cleanup removes the container by name and the storage.
#include "containment/podman.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <optional>
#include <sstream>

#include "containment/grant.h"
#include "containment/ownedfs/private_ns.h"
#include "containment/pin_mount.h"
#include "containment/podman_pins.h"
#include "containment/podman_probe.h"
#include "containment/podman_runner.h"
#include "containment/podman_storage.h"
#include "containment/podman_view.h"
#include "containment/resgroup/group_spawn.h"
#include "containment/resgroup/resource_group.h"
#include "containment/view_plan.h"
#include "core/bounded_file.h"
#include "core/proc.h"
#include "core/process_ref.h"
#include "core/syscall.h"

namespace sealrun {

namespace {

using podman::HostFacts;
using podman::StorageLayout;

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

class PodmanJob final : public ContainedJob {
 public:
  PodmanJob(JobUser user, StorageLayout layout, HostFacts facts, std::string run_id, Child child,
            podman::Watchdog watchdog, int64_t wall_clock_ms, int64_t grace_ms,
            int64_t command_timeout_ms, std::vector<std::string> setup_actions,
            std::string not_before, podman::PinImageMounts pins)
      : user_(std::move(user)),
        layout_(std::move(layout)),
        facts_(std::move(facts)),
        run_id_(std::move(run_id)),
        child_(std::move(child)),
        watchdog_(std::move(watchdog)),
        deadline_ms_(monotonic_ms() + wall_clock_ms),
        grace_ms_(grace_ms),
        command_timeout_ms_(command_timeout_ms),
        setup_actions_(std::move(setup_actions)),
        not_before_(std::move(not_before)),
        pins_(std::move(pins)) {}

  // tidy sees an exception here only when podman_storage.cc is in its batch: std::get's
  // bad_variant_access in Result's accessors, which are read after ok() is checked.
  // NOLINTNEXTLINE(bugprone-exception-escape)
  ~PodmanJob() override {
    if (!cleaned_) {
      (void)stop(0);
      (void)cleanup();
    }
  }

  pid_t pid() const override { return child_.pid(); }

  std::string container_id() const override {
    std::lock_guard<std::mutex> lock(mu_);
    if (cid_.empty()) {
      auto text = read_bounded_file(AT_FDCWD, layout_.cidfile, 4096);
      if (text) cid_ = text->substr(0, text->find_first_of(" \n"));
    }
    return cid_;
  }

  Result<JobExit> wait() override {
    JobExit exit;
    if (!pidfd_exited_within(child_.pidfd(), std::max<int64_t>(0, deadline_ms_ - monotonic_ms()))) {
      exit.timed_out = true;
      SEALRUN_TRY_CTX(stop(grace_ms_), fmt::format("stop container {} at its wall-clock limit",
                                                   podman::container_name(run_id_)));
    }
    (void)container_id();  // the cidfile is gone once cleanup removed the storage
    exit.status =
        podman::job_status_from_podman(SEALRUN_TRY_CTX(child_.wait(), "wait for podman run"));
    return exit;
  }

  Status stop(int64_t grace_ms) override {
    if (pidfd_exited_within(child_.pidfd(), 0)) return ok_status();
    // podman kill reaches the container's PID 1 through the runtime; if the container does not
    // exist yet (still being created), the podman process forwards TERM itself (--sig-proxy).
    if (!kill_container("TERM")) (void)child_.signal(SIGTERM);
    if (pidfd_exited_within(child_.pidfd(), grace_ms)) return ok_status();
    (void)kill_container("KILL");
    if (pidfd_exited_within(child_.pidfd(), 10 * 1000)) return ok_status();
    // podman itself hangs: kill it; cleanup's `podman rm -f` ends a container it left running.
    (void)child_.signal(SIGKILL);
    if (pidfd_exited_within(child_.pidfd(), 5 * 1000)) return ok_status();
    return Error::make(fmt::format("podman run (pid {}) did not exit after KILL", child_.pid()));
  }

  Result<std::vector<std::string>> cleanup() override {
    std::vector<std::string> actions = setup_actions_;
    bool confirmed = true;
    if (child_.running()) {
      Status st = stop(0);
      actions.push_back(st ? "stopped podman run" : "stop podman run: " + st.error().message());
      child_.kill_and_reap();
    }
    Status disarmed = watchdog_.disarm();
    actions.push_back(disarmed ? "podman watchdog disarmed"
                               : "podman watchdog: " + disarmed.error().message());
    std::string name = podman::container_name(run_id_);
    auto rm = podman::run_as_job_user(user_, layout_, podman::rm_argv(layout_, facts_, run_id_),
                                      command_timeout_ms_);
    actions.push_back(rm ? fmt::format("podman rm -f {}: ok", name)
                         : fmt::format("podman rm -f {}: {}", name, rm.error().message()));
    auto left = podman::podman_output(user_, layout_, podman::ps_argv(layout_, facts_, run_id_),
                                      command_timeout_ms_);
    if (left && left->find_first_not_of(" \n") == std::string::npos) {
      actions.push_back(
          fmt::format("podman ps -a --filter label={}: none left", podman::run_label(run_id_)));
    } else {
      confirmed = false;
      actions.push_back(fmt::format("podman ps -a --filter label={}: {}",
                                    podman::run_label(run_id_),
                                    left ? "still there: " + *left : left.error().message()));
    }
    Status removed = podman::remove_storage(layout_, user_, facts_, not_before_, actions);
    confirmed = confirmed && removed.ok();
    // Now that podman's processes (its pause process holds a copy of them) are gone.
    Status unpinned = pins_.detach(actions);
    confirmed = confirmed && unpinned.ok();
    cleaned_ = true;
    if (!confirmed)
      return Error::make(fmt::format("podman cleanup not confirmed: {}", join(actions, "; ")));
    return actions;
  }

 private:
  bool kill_container(const char* signal) {
    auto r = podman::run_as_job_user(
        user_, layout_, podman::kill_argv(layout_, facts_, run_id_, signal), command_timeout_ms_);
    return r.ok();
  }

  JobUser user_;
  StorageLayout layout_;
  HostFacts facts_;
  std::string run_id_;
  Child child_;
  podman::Watchdog watchdog_;
  int64_t deadline_ms_;
  int64_t grace_ms_;
  int64_t command_timeout_ms_;
  std::vector<std::string> setup_actions_;
  std::string not_before_;  // the controller's starttime: what runs from the storage came later
  podman::PinImageMounts pins_;
  mutable std::mutex mu_;
  mutable std::string cid_;
  std::atomic<bool> cleaned_{false};
};

class PodmanMechanism final : public Mechanism {
 public:
  explicit PodmanMechanism(PodmanOptions options) : options_(std::move(options)) {}

  MechanismKind kind() const override { return MechanismKind::kPodman; }
  // Podman runs the admitted image's own root; it has no moment between the sandbox and the
  // command (so no learning, no check of the closure files bound).
  ViewRoot view_root() const override { return ViewRoot::kImage; }
  // Bound by path from where the images are attached in the controller's private mount namespace
  // (podman_pins.h): only a thread in one (the run's, a root controller's) can.
  bool serves_pins_from_images() const override { return ownedfs::in_private_mount_namespace(); }

  MechanismProbe probe() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!outcome_) {
      try {
        outcome_ = podman::run_probe(options_);
      } catch (const std::exception& e) {  // a probe that throws counts as unavailable
        podman::ProbeOutcome failed;
        failed.probe.name = "podman";
        failed.probe.unavailable_reason = std::string("probe failed: ") + e.what();
        outcome_ = failed;
      }
    }
    return outcome_->probe;
  }

  std::map<std::string, std::string> journal_locators(const ContainmentSpec& spec) const override {
    // Where sweep finds the container and its storage if the controller is killed.
    return {{"container_name", podman::container_name(spec.run_id)},
            {"podman_root", podman::storage_layout(spec.owned_root, options_.link_dir).graph_root}};
  }

  Result<std::vector<ViewEntry>> own_view_entries(const ContainmentSpec& spec) override {
    (void)probe();  // memoized: the facts the grant was made from
    HostFacts facts;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (outcome_) facts = outcome_->facts;
    }
    return podman::own_view_entries(spec, facts);
  }

  std::vector<SweepStep> sweep_leftovers(const LeftoverRun& run) override;
  std::vector<SweepStep> sweep_strays(const std::vector<StrayDir>& dead_dirs) override;

 protected:
  Result<std::unique_ptr<ContainedJob>> start(const Grant& grant, resgroup::ResourceGroup* group,
                                              const JobIo& io) override {
    if (io.on_sandbox_ready || !io.traced_syscalls.empty())
      return Error::make(
          "podman cannot stop a container between its setup and its command; "
          "a job that must be watched from its first instruction needs bwrap");
    const ContainmentSpec& spec = grant.spec;
    // The common re-check (Mechanism::spawn) has run; what is podman's own: an image to run.
    if (!grant.spec.image)
      return Error::make("podman spawn: the spec names no image (a verified archive and id)");
    {
      std::lock_guard<std::mutex> lock(mu_);
      facts_ = outcome_->facts;
    }
    JobUser user = SEALRUN_TRY(podman::resolve_job_user(options_.job_user));
    StorageLayout layout = podman::storage_layout(spec.owned_root, options_.link_dir);
    std::string not_before = SEALRUN_TRY(own_starttime());
    std::vector<std::string> actions;
    // Before podman's first command for this run makes its pause process, whose mount namespace
    // (a copy of ours, taken then) is where `podman run` binds from.
    podman::PinImageMounts pins;
    auto served = pins.attach(spec, actions);
    if (!served) return std::move(served).error();
    Status prepared = podman::prepare_storage(layout, user);
    auto job = prepared ? start_in(*served, group, io, user, layout, not_before, actions, pins)
                        : Result<std::unique_ptr<ContainedJob>>(prepared.error());
    if (!job) {
      // Nothing may stay behind from a refused or failed start: no container, no storage, no
      // pin image mounted.
      std::vector<std::string> undo;
      (void)podman::run_as_job_user(user, layout, podman::rm_argv(layout, facts_, spec.run_id),
                                    options_.command_timeout_ms);
      (void)podman::remove_storage(layout, user, facts_, not_before, undo);
      (void)pins.detach(undo);
    }
    return job;
  }

 private:
  // `spec`: the grant's, its pinned mounts and closure files pointing into the attached images.
  Result<std::unique_ptr<ContainedJob>> start_in(const ContainmentSpec& spec,
                                                 resgroup::ResourceGroup* group, const JobIo& io,
                                                 const JobUser& user, const StorageLayout& layout,
                                                 const std::string& not_before,
                                                 std::vector<std::string>& actions,
                                                 podman::PinImageMounts& pins) {
    SEALRUN_TRY(podman::write_seccomp_profile(layout, user, podman::job_seccomp_profile_json()));
    std::string archive = SEALRUN_TRY(
        podman::accessible_image_archive(layout, user, spec.image->archive_path, actions));
    std::string source =
        SEALRUN_TRY_CTX(podman::image_source(user, layout, archive, options_.command_timeout_ms),
                        fmt::format("load image archive {}", spec.image->archive_path));
    SEALRUN_TRY_CTX(podman::run_as_job_user(user, layout, podman::pull_argv(layout, facts_, source),
                                            options_.command_timeout_ms, layout.base),
                    fmt::format("load image archive {}", spec.image->archive_path));
    std::string ids = SEALRUN_TRY(podman::podman_output(
        user, layout, podman::image_ids_argv(layout, facts_), options_.command_timeout_ms));
    std::string want = "sha256:" + SEALRUN_TRY(podman::image_hex(spec.image->image_id));
    std::istringstream in(ids);
    std::vector<std::string> loaded;
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) loaded.push_back(line.rfind("sha256:", 0) == 0 ? line : "sha256:" + line);
    if (std::find(loaded.begin(), loaded.end(), want) == loaded.end())
      return Error::make(fmt::format(
          "image archive {} loaded as [{}], not the admitted image id {}: refusing to run",
          spec.image->archive_path, join(loaded, ", "), want));
    actions.push_back(
        fmt::format("loaded {} as {} (matches the admitted id)", spec.image->archive_path, want));
    // The mounts are the job's: checked and handed over as the ids its processes have on the host
    // (the run's own, job_ids.h), while podman itself runs as the job user.
    JobUser job = user;
    if (spec.job_ids && user.drop) {
      job.uid = spec.job_ids->uid;
      job.gid = spec.job_ids->gid;
      job.name = fmt::format("{} (the run's uid {})", user.name, job.uid);
    }
    auto mounts = SEALRUN_TRY(podman::prepare_mounts(spec, layout, job, actions));
    SEALRUN_TRY(podman::write_generated_files(spec, actions));
    auto argv = SEALRUN_TRY(podman::run_argv(spec, mounts, layout, facts_, want));

    SpawnOptions o = podman::as_job_user(user, layout, argv);
    o.stdin_fd = io.stdin_fd;
    o.stdout_fd = io.stdout_fd;
    o.stderr_fd = io.stderr_fd;
    // Inherited through podman, conmon and the OCI runtime (none is set-id) by the job; the
    // container's UTS namespace copies the domain name, which only a root controller can set.
    o.personality = spec.personality;
    if (user.drop) o.domainname = spec.domainname;
    if (group != nullptr) resgroup::hold_for_group(o, *group);
    podman::Watchdog watchdog =
        SEALRUN_TRY(podman::start_watchdog(user, layout, facts_, spec.run_id));
    Child child = SEALRUN_TRY_CTX(spawn_process(o), "start podman run");
    if (group != nullptr)
      SEALRUN_TRY_CTX(resgroup::release_into_group(child, *group), "start podman run");
    return std::unique_ptr<ContainedJob>(std::make_unique<PodmanJob>(
        user, layout, facts_, spec.run_id, std::move(child), std::move(watchdog),
        spec.wall_clock_ms, spec.stop_grace_ms, options_.command_timeout_ms, std::move(actions),
        not_before, std::move(pins)));
  }

  static Result<Child> spawn_process(const SpawnOptions& o) { return sealrun::spawn(o); }

  PodmanOptions options_;
  std::mutex mu_;
  std::optional<podman::ProbeOutcome> outcome_;
  HostFacts facts_;
};

}  // namespace

ExitStatus podman::job_status_from_podman(const ExitStatus& podman_run) {
  return status_from_shell_convention(podman_run);
}

Result<std::vector<std::string>> podman::sweep_podman_storage(const std::string& owned_root,
                                                              const std::string& run_id,
                                                              const std::string& job_user,
                                                              const std::string& link_dir,
                                                              const std::string& not_before) {
  StorageLayout layout = podman::storage_layout(owned_root, link_dir);
  std::vector<std::string> actions;
  std::error_code ec;
  JobUser user =
      SEALRUN_TRY(podman::resolve_job_user(job_user.empty() ? kDefaultJobUser : job_user));
  if (!std::filesystem::exists(std::filesystem::symlink_status(layout.base, ec))) {
    // Out of sight is not gone: on a killed controller's owned file system, which a process of the
    // storage keeps alive in a mount namespace of its own (its pause process copied the
    // controller's private one, containment/ownedfs/private_ns.h). Such processes are found by
    // their XDG_RUNTIME_DIR; the file system goes with the last of them.
    podman::stop_storage_processes(layout, user, not_before, actions);
    actions.push_back(fmt::format("podman storage {}: none", layout.base));
    return actions;
  }
  HostFacts facts = SEALRUN_TRY(podman::basic_host_facts(PodmanOptions{}));
  // The link is gone if the storage was half removed; podman needs it (or recreates a directory).
  (void)podman::ensure_runroot_link(layout, user);
  auto rm =
      podman::run_as_job_user(user, layout, podman::rm_argv(layout, facts, run_id), 120 * 1000);
  actions.push_back(rm ? fmt::format("podman rm -f {}: ok", podman::container_name(run_id))
                       : fmt::format("podman rm -f {}: {}", podman::container_name(run_id),
                                     rm.error().message()));
  SEALRUN_TRY(podman::remove_storage(layout, user, facts, not_before, actions));
  return actions;
}

std::vector<SweepStep> PodmanMechanism::sweep_leftovers(const LeftoverRun& run) {
  if (run.locators.empty()) return {};  // recorded before podman was given anything to make
  auto get = [&](const char* key) {
    auto it = run.locators.find(key);
    return it == run.locators.end() ? std::string() : it->second;
  };
  std::string name = get("container_name");
  SweepStep s{
      fmt::format("podman container {}", name.empty() ? podman::container_name(run.run_id) : name),
      "", false};
  if (run.owned_root.empty()) {
    s.outcome = "refused: the record names no owned root to find its podman storage";
    s.left = true;
    return {s};
  }
  // Re-derived from the owned root and the run id; a record pointing podman elsewhere is refused.
  auto layout = podman::storage_layout(run.owned_root, options_.link_dir);
  if (get("podman_root") != layout.graph_root || name != podman::container_name(run.run_id)) {
    s.outcome = fmt::format("refused: recorded storage {} / name {} are not this run's ({} / {})",
                            get("podman_root"), name, layout.graph_root,
                            podman::container_name(run.run_id));
    s.left = true;
    return {s};
  }
  // The container (podman rm -f), the rootless pause process, the storage and its runroot link.
  auto actions = podman::sweep_podman_storage(run.owned_root, run.run_id, run.job_user,
                                              options_.link_dir, run.controller_start);
  if (!actions) {
    s.outcome = "podman sweep failed: " + actions.error().message();
    s.left = true;
    return {s};
  }
  // The run's runroot link, if its storage was out of sight (a killed controller's namespace) and
  // so left: it is this run's (it points at this storage), and the run is being swept.
  podman::remove_runroot_link(layout, *actions);
  // Its pin images went with the last process of the killed controller's namespace (podman's,
  // ended just now); a loop device, had erofs needed one, clears itself then (autoclear).
  for (const SweepStep& loop : sweep_pin_loops(run.run_id))
    actions->push_back(loop.what + ": " + loop.outcome);
  for (const auto& a : *actions) s.outcome += (s.outcome.empty() ? "" : "; ") + a;
  if (s.outcome.empty()) s.outcome = "nothing of podman's was left";
  return {s};
}

std::vector<SweepStep> PodmanMechanism::sweep_strays(const std::vector<StrayDir>& dead_dirs) {
  std::vector<SweepStep> steps;
  // The probe's storages in the temporaries of controllers that are gone (podman_probe.cc names
  // them podman-probe-*): their pause process and anything else still running from them.
  for (const StrayDir& dead : dead_dirs) {
    auto dir = open_at(AT_FDCWD, dead.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (!dir) continue;
    for (const std::string& name : list_dir_names(dir->get())) {
      if (name.rfind(podman::kProbeDirPrefix, 0) != 0) continue;
      std::string owned = dead.path + "/" + name + "/owned";
      SweepStep s{"podman probe storage " + owned + "/podman", "", false};
      auto actions =
          podman::sweep_podman_storage(owned, podman::probe_run_id(dead.path), options_.job_user,
                                       options_.link_dir, dead.creator_start);
      if (!actions) {
        s.outcome = "podman sweep failed: " + actions.error().message();
        s.left = true;
      } else {
        for (const auto& a : *actions) s.outcome += (s.outcome.empty() ? "" : "; ") + a;
      }
      steps.push_back(std::move(s));
    }
  }
  auto links = podman::sweep_dangling_links(options_.link_dir);
  if (!links.empty()) {
    SweepStep s{"podman runroot links in " + options_.link_dir, "", false};
    for (const auto& a : links) s.outcome += (s.outcome.empty() ? "" : "; ") + a;
    steps.push_back(std::move(s));
  }
  return steps;
}

std::unique_ptr<Mechanism> make_podman_mechanism(PodmanOptions options) {
  return std::make_unique<PodmanMechanism>(std::move(options));
}

}  // namespace sealrun
