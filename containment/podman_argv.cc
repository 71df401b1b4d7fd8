// SPDX-License-Identifier: Apache-2.0
// Pure builders of podman command lines (see podman_argv.h). Each flag of `podman run` is chosen
// for a stated reason, so a reviewer can check the job's boundary by reading one function.
#include "containment/podman_argv.h"

#include <fmt/format.h>

#include <cstdint>
#include <string_view>

#include "containment/view_plan.h"

namespace sealrun::podman {

StorageLayout storage_layout(const std::string& owned_root, const std::string& link_dir) {
  StorageLayout l;
  l.link_dir = link_dir.empty() ? default_short_link_dir() : link_dir;
  l.base = owned_root + "/podman";
  l.home = l.base + "/home";
  l.graph_root = l.base + "/graph";
  l.run_root = l.base + "/runroot";
  uint64_t h = 1469598103934665603ULL;  // FNV-1a: stable across builds, unlike std::hash
  for (unsigned char c : l.base) h = (h ^ c) * 1099511628211ULL;
  l.run_root_link = fmt::format("{}/{:016x}", l.link_dir, h);
  l.tmp_dir = l.base + "/tmp";
  l.runtime_dir = l.base + "/xdg";
  l.stage_dir = l.base + "/stage";
  l.seccomp_profile = l.base + "/seccomp.json";
  l.image_copy = l.base + "/image.tar";
  l.image_dir = l.base + "/image";
  l.cidfile = l.base + "/container.id";
  l.conmon_pidfile = l.base + "/conmon.pid";
  return l;
}

std::vector<std::string> storage_dirs(const StorageLayout& l) {
  return {l.base, l.home, l.graph_root, l.run_root, l.tmp_dir, l.runtime_dir, l.stage_dir};
}

std::vector<std::string> podman_environment(const StorageLayout& l) {
  return {
      "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",  // podman finds conmon, runc, newuidmap
      "HOME=" + l.home,
      "XDG_RUNTIME_DIR=" + l.runtime_dir,
      "TMPDIR=" + l.tmp_dir,
  };
}

std::vector<std::string> global_args(const StorageLayout& l, const HostFacts& f) {
  return {
      f.podman_path,
      "--root",
      l.graph_root,
      "--runroot",
      l.run_root_link,
      "--tmpdir",
      l.tmp_dir,
      // vfs needs neither fuse-overlayfs nor kernel overlay in a user namespace (docs/testbed.md).
      "--storage-driver",
      "vfs",
      "--runtime",
      f.runtime_path,
      // The systemd manager is unreachable rootless here; cgroupfs lets podman run inside the
      // resource group the controller placed it in, which conmon and the container inherit.
      "--cgroup-manager",
      "cgroupfs",
      // No journald, and no events file growing outside the run's accounting.
      "--events-backend",
      "none",
  };
}

std::string container_name(const std::string& run_id) { return "sealrun-" + run_id; }
std::string run_label(const std::string& run_id) { return "sealrun.run=" + run_id; }

Result<std::string> image_hex(const std::string& image_id) {
  std::string_view hex = image_id;
  if (hex.substr(0, 7) == "sha256:") hex.remove_prefix(7);
  bool ok = hex.size() == 64;
  for (char c : hex) ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  if (!ok)
    return Error::make(fmt::format(
        "image id \"{}\" is not \"sha256:\" followed by 64 lowercase hex digits", image_id));
  return std::string(hex);
}

Result<std::string> mount_option(const MountSpec& m) {
  for (const std::string* p : {&m.source, &m.target}) {
    if (p->empty() || (*p)[0] != '/')
      return Error::make(fmt::format("mount path \"{}\" must be absolute", *p));
    // podman splits --mount on ',' and each field on '='; such a path would be misread as options.
    if (p->find_first_of(",=\n") != std::string::npos)
      return Error::make(fmt::format(
          "mount path \"{}\" contains ',', '=' or a newline, which podman's --mount syntax cannot "
          "carry; rename it",
          *p));
  }
  // nosuid,nodev on every bind, as bwrap makes each of its binds: a set-id program or a device
  // node the job finds (or made, in /out) under a bind grants nothing.
  std::string opt = fmt::format("type=bind,src={},dst={},nosuid,nodev", m.source, m.target);
  if (m.access == MountSpec::Access::kReadOnly) opt += ",ro=true";
  return opt;
}

Result<std::vector<std::string>> run_argv(const ContainmentSpec& spec,
                                          const std::vector<MountSpec>& mounts,
                                          const StorageLayout& l, const HostFacts& f,
                                          const std::string& image_id) {
  std::string hex = SEALRUN_TRY(image_hex(image_id));
  if (spec.argv.empty()) return Error::make("podman run: the job has an empty argv");
  std::vector<std::string> a = global_args(l, f);
  auto add = [&a](std::initializer_list<std::string> more) { a.insert(a.end(), more); };
  add({"run",
       // Kept after exit so cleanup can confirm and remove it by name, reporting each step.
       "--rm=false", "--name", container_name(spec.run_id), "--label", run_label(spec.run_id),
       // No registry is reachable and a tag could be re-pointed: run the verified id, never pull.
       "--pull=never",
       // Own network namespace with only loopback: no connect() out, no host abstract sockets.
       "--network=none",
       // Root file system read-only, and no implicit writable tmpfs on /run, /tmp, /var/tmp
       // (podman's --read-only-tmpfs default): only the admitted mounts and /tmp below are
       // writable.
       "--read-only", "--read-only-tmpfs=false", "--cap-drop=all", "--security-opt",
       "no-new-privileges", "--security-opt", "seccomp=" + l.seccomp_profile,
       // A fixed hostname: podman always exports HOSTNAME, and a container id there would make
       // builds differ from run to run.
       "--hostname", spec.hostname,
       // The job's environment is exactly the admitted one: drop podman's defaults (PATH, TERM,
       // container=podman), never copy the host's, never inject proxy variables.
       "--unsetenv-all", "--env-host=false", "--http-proxy=false", "--systemd=false",
       // Output goes straight to the caller's descriptors through `podman run`'s attach; no
       // log file grows outside the accounted trees.
       "--log-driver", "none", "--cidfile", l.cidfile, "--conmon-pidfile", l.conmon_pidfile,
       // Default rootless mapping: container root is the unprivileged job user (with no
       // capabilities), other ids are subordinate ids; with a run's own ids the job runs as one of
       // those (--user below), never as container root. keep-id would need /etc/passwd edits in
       // a read-only root and buys nothing here.
       "--workdir", spec.cwd, "--tmpfs", "/tmp:rw,nosuid,nodev,exec,mode=1777",
       // No generated /etc/hosts (its name line carries the container's name): the image's own
       // /etc/hosts, if it has one, is what the job sees. (--network=none already leaves out
       // /etc/resolv.conf.)
       "--no-hosts"});
  if (spec.umask) add({"--umask", fmt::format("{:04o}", *spec.umask)});
  // The run's own host uid (job_ids.h): the in-namespace id that podman's rootless mapping puts
  // on it, for uid and gid; no passwd entry added for it (the image's /etc stays as pinned).
  if (spec.job_ids) {
    std::string id = std::to_string(spec.job_ids->podman_user);
    add({"--user", id + ":" + id, "--passwd=false"});
  }
  if (f.cgroups_v2) add({"--pids-limit", std::to_string(spec.pids_max)});
  if (f.have_init) add({"--init"});
  for (const auto& [key, value] : spec.env) add({"--env", key + "=" + value});
  // The image is the root; the rest of the planned view (view_plan.h) is extra mounts: the
  // spec's mounts (`mounts`, possibly staged copies of them), then the closure's single files.
  for (const MountSpec& m : mounts) {
    std::string opt = SEALRUN_TRY_CTX(mount_option(m), "podman run");
    add({"--mount", opt});
  }
  // A link to a mount's place (`rebuild --vary build_path`: /src -> the moved source) is that
  // mount bound a second time at the link's path: podman makes no links in an image root.
  for (const ViewEntry& e : plan_view(spec, ViewRoot::kImage)) {
    if (e.kind != ViewKind::kLink) continue;
    for (const MountSpec& m : mounts) {
      if (m.target != e.link_target) continue;
      MountSpec again = m;
      again.target = e.job_path;
      add({"--mount", SEALRUN_TRY_CTX(mount_option(again), "podman run")});
    }
  }
  for (const ViewEntry& e : plan_view(spec, ViewRoot::kImage)) {
    // The init binary the view pinned (Mechanism::own_view_entries), by the path that was hashed.
    if (e.kind == ViewKind::kInit) {
      if (!f.have_init) add({"--init"});
      add({"--init-path", e.host_path});
      continue;
    }
    if (e.kind != ViewKind::kClosure && e.kind != ViewKind::kGenerated) continue;
    MountSpec file{e.host_path, e.job_path, MountSpec::Access::kReadOnly, e.kind, e.pin};
    std::string opt = SEALRUN_TRY_CTX(mount_option(file), "podman run");
    add({"--mount", opt});
  }
  a.push_back(hex);
  a.insert(a.end(), spec.argv.begin(), spec.argv.end());
  return a;
}

std::vector<GeneratedFile> generated_files(const ContainmentSpec& spec) {
  const std::string dir = spec.owned_root + "/view";
  return {
      {"/etc/hostname", dir + "/hostname", spec.hostname + "\n"},
      // Tools look for the file to know they run in a container; podman's names the container,
      // its id and the image, which would differ from run to run.
      {"/run/.containerenv", dir + "/containerenv", "engine=\"podman\"\n"},
  };
}

std::vector<std::string> load_argv(const StorageLayout& l, const HostFacts& f,
                                   const std::string& archive) {
  auto a = global_args(l, f);
  a.insert(a.end(), {"load", "--quiet", "--input", archive});
  return a;
}

std::vector<std::string> pull_argv(const StorageLayout& l, const HostFacts& f,
                                   const std::string& transport_ref) {
  auto a = global_args(l, f);
  a.insert(a.end(), {"pull", "--quiet", transport_ref});
  return a;
}

std::vector<std::string> image_ids_argv(const StorageLayout& l, const HostFacts& f) {
  auto a = global_args(l, f);
  a.insert(a.end(), {"images", "--all", "--no-trunc", "--quiet"});
  return a;
}

std::vector<std::string> kill_argv(const StorageLayout& l, const HostFacts& f,
                                   const std::string& run_id, const std::string& signal) {
  auto a = global_args(l, f);
  a.insert(a.end(), {"kill", "--signal", signal, container_name(run_id)});
  return a;
}

std::vector<std::string> rm_argv(const StorageLayout& l, const HostFacts& f,
                                 const std::string& run_id) {
  auto a = global_args(l, f);
  a.insert(a.end(), {"rm", "--force", "--time", "0", "--ignore", container_name(run_id)});
  return a;
}

std::vector<std::string> ps_argv(const StorageLayout& l, const HostFacts& f,
                                 const std::string& run_id) {
  auto a = global_args(l, f);
  a.insert(a.end(),
           {"ps", "--all", "--no-trunc", "--quiet", "--filter", "label=" + run_label(run_id)});
  return a;
}

std::vector<std::string> inspect_pid_argv(const StorageLayout& l, const HostFacts& f,
                                          const std::string& run_id) {
  auto a = global_args(l, f);
  a.insert(a.end(), {"inspect", "--type", "container", "--format", "{{.State.Pid}}",
                     container_name(run_id)});
  return a;
}

std::vector<std::string> unshare_rm_argv(const StorageLayout& l, const HostFacts& f,
                                         const std::vector<std::string>& paths) {
  auto a = global_args(l, f);
  a.insert(a.end(), {"unshare", "rm", "-rf", "--"});
  a.insert(a.end(), paths.begin(), paths.end());
  return a;
}

}  // namespace sealrun::podman
