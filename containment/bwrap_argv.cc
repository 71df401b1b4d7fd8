// SPDX-License-Identifier: Apache-2.0
// build_bwrap_argv(): see bwrap_argv.h for the choice of root; the view itself is view_plan.h's.
#include "containment/bwrap_argv.h"

#include "containment/view_plan.h"

namespace sealrun {

std::vector<std::string> build_bwrap_argv(const std::string& bwrap_path, const Grant& grant,
                                          const BwrapFds& fds) {
  const ContainmentSpec& spec = grant.spec;
  std::vector<std::string> a = {bwrap_path};
  auto add = [&a](std::initializer_list<std::string> items) { a.insert(a.end(), items); };

  // Namespaces: every one bwrap knows (user, ipc, pid, net, uts, cgroup); the network namespace
  // is empty apart from a loopback. --disable-userns stops a nested user namespace even where
  // seccomp would not (belt and braces with the unshare/clone rules).
  add({"--unshare-all", "--unshare-user", "--disable-userns"});
  add({"--die-with-parent", "--new-session"});
  // As an unprivileged user bwrap already gives the job no capabilities; --cap-drop ALL makes that
  // explicit and also holds if bwrap ever runs privileged.
  add({"--cap-drop", "ALL"});
  add({"--hostname", spec.hostname});
  if (spec.uid_in_job) {
    add({"--uid", std::to_string(*spec.uid_in_job), "--gid", std::to_string(*spec.uid_in_job)});
  } else if (spec.job_ids) {
    // The run's own host uid outside; inside, the job user's ids, as without one (job_ids.h).
    add({"--uid", std::to_string(spec.job_ids->in_job_uid), "--gid",
         std::to_string(spec.job_ids->in_job_gid)});
  }
  add({"--clearenv"});
  for (const auto& [name, value] : spec.env) add({"--setenv", name, value});

  // The view, in the planned order: kernel-made places first, then the mounts (parents before
  // the files and links bound inside the empty root).
  for (const ViewEntry& e : plan_view(spec, ViewRoot::kEmptyTmpfs)) {
    switch (e.kind) {
      case ViewKind::kProc:
        add({"--proc", e.job_path});
        break;
      case ViewKind::kDev:
        add({"--dev", e.job_path});
        break;
      case ViewKind::kTmp:
        add({"--tmpfs", e.job_path});
        break;
      case ViewKind::kLink:
        add({"--symlink", e.link_target, e.job_path});
        break;
      case ViewKind::kGenerated: {
        // Written by sealrun for the run (job_etc.h): bwrap copies the descriptor's bytes into
        // the sandbox and binds the copy read-only, readable by anyone there, like the host's.
        int fd = -1;
        for (const auto& [path, number] : fds.generated)
          if (path == e.job_path) fd = number;
        if (fd >= 0)
          add({"--perms", "0444", "--ro-bind-data", std::to_string(fd), e.job_path});
        else
          add({"--ro-bind", e.host_path, e.job_path});
        break;
      }
      case ViewKind::kDir:
        add({"--dir", e.job_path});
        break;
      case ViewKind::kClosure:
        // By path (bwrap resolves it as the job user): a closure has many files, and each was
        // verified by its SHA-256 just before the run; or from the closure's verified image.
        // The image holds each file at its host path (the same as its job path but for a file
        // a rebuild adds: libfaketime).
        add({"--ro-bind", fds.closure_stage.empty() ? e.host_path : fds.closure_stage + e.host_path,
             e.job_path});
        break;
      default: {
        // The image's own root ("/", podman's) is never a bind here; its entries are
        // (containment/image_root.h), from the spec's mounts like every other.
        if (e.mount_index < 0) break;
        size_t i = static_cast<size_t>(e.mount_index);
        int fd = i < fds.mount_sources.size() ? fds.mount_sources[i] : -1;
        if (i < fds.staged_sources.size())
          add({e.writable ? "--bind" : "--ro-bind", fds.staged_sources[i], e.job_path});
        else if (fd >= 0)
          add({e.writable ? "--bind-fd" : "--ro-bind-fd", std::to_string(fd), e.job_path});
        else
          add({e.writable ? "--bind" : "--ro-bind", e.host_path, e.job_path});
      }
    }
  }
  // Last: the tmpfs root itself read-only (the binds above keep their own flags).
  add({"--remount-ro", "/"});

  add({"--chdir", spec.cwd});
  if (fds.json_status >= 0) add({"--json-status-fd", std::to_string(fds.json_status)});
  if (fds.seccomp >= 0) add({"--seccomp", std::to_string(fds.seccomp)});
  if (fds.block >= 0) add({"--block-fd", std::to_string(fds.block)});
  a.push_back("--");
  a.insert(a.end(), spec.argv.begin(), spec.argv.end());
  return a;
}

}  // namespace sealrun
