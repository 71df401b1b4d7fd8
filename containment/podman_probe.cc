// SPDX-License-Identifier: Apache-2.0
// The podman probe (see podman_probe.h). Every "unavailable" answer names the step that failed and
// what podman said, so `sealrun probe` tells a person what to install or fix.
#include "containment/podman_probe.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "containment/podman_runner.h"
#include "containment/podman_storage.h"
#include "containment/seccomp_policy.h"
#include "core/proc.h"

namespace sealrun::podman {

namespace fs = std::filesystem;

std::string job_seccomp_profile_json() { return seccomp_policy_oci_json(job_seccomp_policy()); }

Result<HostFacts> basic_host_facts(const PodmanOptions& o) {
  HostFacts f;
  f.podman_path = o.podman_path;
  if (f.podman_path.empty())
    f.podman_path = SEALRUN_TRY_CTX(find_program("podman"), "rootless podman");
  // docs/testbed.md: crun refuses this host's hybrid cgroup layout; runc works.
  f.runtime_path = SEALRUN_TRY_CTX(find_program("runc"), "podman's OCI runtime");
  // podman 4.3's default init_path (containers.conf); the catatonit package installs it.
  f.have_init = ::access("/usr/libexec/podman/catatonit", X_OK) == 0;
  if (f.have_init) f.init_path = "/usr/libexec/podman/catatonit";
  return f;
}

Result<PodmanInfo> podman_info(const JobUser& user, const StorageLayout& layout,
                               const HostFacts& facts, int64_t timeout_ms) {
  auto argv = global_args(layout, facts);
  argv.insert(argv.end(), {"info", "--format",
                           "{{.Version.Version}}\n{{.Host.Security.Rootless}}\n"
                           "{{.Host.CgroupsVersion}}\n{{.Host.OCIRuntime.Name}}\n"
                           "{{.Host.CgroupManager}}"});
  std::string out = SEALRUN_TRY(podman_output(user, layout, std::move(argv), timeout_ms));
  std::istringstream in(out);
  std::string rootless, cgroups;
  PodmanInfo info;
  std::getline(in, info.version);
  std::getline(in, rootless);
  std::getline(in, cgroups);
  std::getline(in, info.runtime);
  std::getline(in, info.cgroup_manager);
  info.rootless = rootless == "true";
  info.cgroups_v2 = cgroups == "v2";
  return info;
}

namespace {

constexpr const char* kMarker = "@@sealrun-probe-checks";

// What the throwaway container reports: its status file, then one check per line.
constexpr const char* kProbeScript =
    "/bin/busybox cat /proc/self/status; echo @@sealrun-probe-checks; "
    "if /bin/busybox touch /probe-write 2>/dev/null; then echo root_write=allowed; "
    "else echo root_write=denied; fi; "
    "echo net_ifaces=$(/bin/busybox awk -F: 'NR>2{gsub(/ /,\"\",$1); printf \"%s,\", $1}' "
    "/proc/net/dev); "
    "if /bin/busybox unshare -U /bin/busybox true 2>/dev/null; then echo userns=allowed; "
    "else echo userns=denied; fi; "
    "echo pid1=$(/bin/busybox tr '\\0' ' ' < /proc/1/cmdline); "
    "echo pidns=$(/bin/busybox readlink /proc/self/ns/pid)";

std::map<std::string, std::string> parse_lines(const std::string& text, char sep) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t at = line.find(sep);
    if (at == std::string::npos) continue;
    std::string value = line.substr(at + 1);
    size_t b = value.find_first_not_of(" \t");
    size_t e = value.find_last_not_of(" \t");
    out[line.substr(0, at)] = b == std::string::npos ? "" : value.substr(b, e - b + 1);
  }
  return out;
}

bool all_zero_hex(const std::string& v) {
  return !v.empty() && v.find_first_not_of('0') == std::string::npos;
}

// Makes work/rootfs.tar: /bin/busybox (static) and /bin/sh, plus the job's mount points.
Status build_probe_rootfs(const fs::path& work, const std::string& busybox) {
  std::error_code ec;
  fs::path root = work / "rootfs";
  for (const char* d : {"bin", "etc", "tmp", "src", "out", "scratch", "proc", "dev", "sys"})
    fs::create_directories(root / d, ec);
  fs::copy_file(busybox, root / "bin/busybox", ec);
  if (!ec) fs::create_symlink("busybox", root / "bin/sh", ec);
  if (ec)
    return Error::with_errno(ec.value(), fmt::format("copy {} into the probe image", busybox));
  std::string tar = SEALRUN_TRY(find_program("tar"));
  SpawnOptions o;
  o.argv = {tar,  "--numeric-owner", "--owner=0", "--group=0",
            "-C", root.string(),     "-cf",       (work / "rootfs.tar").string(),
            "."};
  o.env = std::vector<std::string>{"PATH=/usr/bin:/bin", "LC_ALL=C"};
  auto c = SEALRUN_TRY(run_capture(std::move(o), 60 * 1000, 16 * 1024));
  if (!c.status.success())
    return Error::make(fmt::format("tar the probe image: {}", last_stderr_line(c.err)));
  return ok_status();
}

}  // namespace

std::vector<DimensionCheck> dimensions_from_probe(const std::string& status,
                                                  const std::string& checks,
                                                  const std::string& podman_stderr,
                                                  const HostFacts& facts) {
  auto st = parse_lines(status, ':');
  auto ck = parse_lines(checks, '=');
  std::vector<DimensionCheck> dims;
  auto add = [&dims](Dimension d, bool ok, std::string why) {
    dims.push_back({d, ok, std::move(why)});
  };

  bool ro = ck["root_write"] == "denied";
  add(Dimension::kFilesystem, ro,
      ro ? "--read-only: a write to / failed inside the probe container; only admitted binds and "
           "a private /tmp are writable"
         : fmt::format("a write to / inside the probe container was {}",
                       ck["root_write"].empty() ? "not reported" : "allowed"));

  // PID 1's command line, first three words ("/run/podman-init -- /bin/sh"), not the script.
  std::string pid1 = ck["pid1"];
  for (size_t i = 0, words = 0; i < pid1.size(); ++i)
    if (pid1[i] == ' ' && ++words == 3) pid1.resize(i);
  // The caller appends host_pidns= (its own /proc/self/ns/pid) to the container's report.
  bool own_pidns = ck["pidns"].rfind("pid:[", 0) == 0 && !ck["host_pidns"].empty() &&
                   ck["pidns"] != ck["host_pidns"] && !ck["pid1"].empty();
  add(Dimension::kProcessTree, own_pidns,
      own_pidns ? fmt::format("own PID namespace ({} inside, {} outside), PID 1 is \"{}\"; "
                              "`podman rm -f` ends every process in it",
                              ck["pidns"], ck["host_pidns"], pid1)
                : fmt::format("no private PID namespace seen (inside \"{}\", outside \"{}\")",
                              ck["pidns"], ck["host_pidns"]));

  add(Dimension::kWallClock, true,
      "stopped at the limit by `podman kill` TERM, grace, KILL, then the podman process by pidfd");

  bool lo_only = ck["net_ifaces"] == "lo,";
  add(Dimension::kNetwork, lo_only,
      lo_only ? "--network=none: only loopback in the probe container's /proc/net/dev"
              : fmt::format("network interfaces inside: \"{}\"", ck["net_ifaces"]));

  add(Dimension::kMemory, false,
      "rootless podman with cgroupfs creates no cgroup of its own here; memory limits come from "
      "the resource group it is placed in");

  bool ignored = podman_stderr.find("Resource limits are not supported") != std::string::npos;
  bool pids = facts.cgroups_v2 && !ignored;
  add(Dimension::kProcessCount, pids,
      pids      ? "--pids-limit on cgroup v2"
      : ignored ? "podman: \"Resource limits are not supported and ignored on cgroups V1 "
                  "rootless systems\"; the resource group enforces the pids limit"
                : "cgroup v1 rootless: podman ignores --pids-limit; the resource group "
                  "enforces the pids limit");

  bool filtered = st["Seccomp"] == "2";
  bool userns_denied = ck["userns"] == "denied";
  add(Dimension::kSyscalls, filtered && userns_denied,
      filtered && userns_denied
          ? "Seccomp: 2 in the probe container and unshare(CLONE_NEWUSER) was denied"
      : filtered
          ? "a seccomp filter is installed but unshare(CLONE_NEWUSER) was allowed: the "
            "job policy did not take effect"
          : fmt::format("Seccomp: \"{}\" in the probe container (2 = filter)", st["Seccomp"]));

  bool caps = all_zero_hex(st["CapInh"]) && all_zero_hex(st["CapPrm"]) &&
              all_zero_hex(st["CapEff"]) && all_zero_hex(st["CapBnd"]) &&
              all_zero_hex(st["CapAmb"]) && st["NoNewPrivs"] == "1";
  add(Dimension::kCapabilities, caps,
      caps ? "CapInh/CapPrm/CapEff/CapBnd/CapAmb all 0 and NoNewPrivs: 1 in the probe container"
           : fmt::format("probe container shows CapEff {} CapBnd {} NoNewPrivs {}", st["CapEff"],
                         st["CapBnd"], st["NoNewPrivs"]));
  return dims;
}

namespace {

Status probe_container(MechanismProbe& p, HostFacts& facts, const PodmanOptions& o,
                       const JobUser& user, const fs::path& work) {
  fs::path owned = work / "owned";
  std::error_code ec;
  fs::create_directory(owned, ec);
  fs::permissions(owned, fs::perms(0711), ec);
  if (ec) return Error::with_errno(ec.value(), fmt::format("create {}", owned.string()));
  StorageLayout layout = storage_layout(owned.string(), o.link_dir);
  std::vector<std::string> actions;
  std::string not_before = SEALRUN_TRY(own_starttime());
  struct StorageGuard {
    const StorageLayout& layout;
    const JobUser& user;
    const HostFacts& facts;
    const std::string& not_before;
    std::vector<std::string>& actions;
    // As ~PodmanJob (podman.cc): only std::get's bad_variant_access in Result's accessors,
    // which are read after ok() is checked, reaches tidy's exception analysis.
    // NOLINTNEXTLINE(bugprone-exception-escape)
    ~StorageGuard() { (void)remove_storage(layout, user, facts, not_before, actions); }
  } guard{layout, user, facts, not_before, actions};
  SEALRUN_TRY(prepare_storage(layout, user));

  PodmanInfo info =
      SEALRUN_TRY_CTX(podman_info(user, layout, facts, o.command_timeout_ms), "podman info");
  p.version = info.version;
  facts.cgroups_v2 = info.cgroups_v2;
  if (!info.rootless && user.drop)
    return Error::make("podman info says it is not running rootless as the job user");

  SEALRUN_TRY(build_probe_rootfs(work, o.busybox_path));
  std::string tarball = (work / "rootfs.tar").string();
  if (user.drop && ::chown(tarball.c_str(), user.uid, user.gid) != 0)
    return Error::from_errno(fmt::format("chown {}", tarball));
  auto import = global_args(layout, facts);
  import.insert(import.end(), {"import", "--quiet", tarball, "localhost/sealrun-probe:1"});
  std::string id = SEALRUN_TRY_CTX(podman_output(user, layout, import, o.command_timeout_ms),
                                   "import the busybox probe image");
  id = id.substr(0, id.find_first_of("\n "));
  if (id.rfind("sha256:", 0) != 0) id = "sha256:" + id;

  SEALRUN_TRY(write_seccomp_profile(layout, user, job_seccomp_profile_json()));
  ContainmentSpec spec;
  spec.run_id = fmt::format("probe-{}", ::getpid());  // probe_run_id() says the same for sweep
  spec.owned_root = owned.string();
  spec.argv = {"/bin/sh", "-c", kProbeScript};
  spec.cwd = "/";
  auto argv = SEALRUN_TRY(run_argv(spec, {}, layout, facts, id));
  auto run =
      SEALRUN_TRY(run_capture(as_job_user(user, layout, argv), o.command_timeout_ms, 256 * 1024));
  (void)run_as_job_user(user, layout, rm_argv(layout, facts, spec.run_id), o.command_timeout_ms);
  if (run.timed_out || !run.status.success())
    return Error::make(fmt::format(
        "rootless podman (runc, cgroupfs, vfs) could not run a busybox container: {}: {}",
        run.timed_out ? "timed out" : run.status.describe(), last_stderr_line(run.err)));
  size_t at = run.out.find(kMarker);
  if (at == std::string::npos)
    return Error::make("the probe container's report was incomplete: " + run.out.substr(0, 200));
  std::string checks = run.out.substr(at) +
                       "\nhost_pidns=" + fs::read_symlink("/proc/self/ns/pid", ec).string() + "\n";
  p.dimensions = dimensions_from_probe(run.out.substr(0, at), checks, run.err, facts);
  return ok_status();
}

}  // namespace

std::string probe_run_id(const std::string& controller_temp_dir) {
  std::string name = controller_temp_dir.substr(controller_temp_dir.rfind('/') + 1);
  return "probe-" + name.substr(0, name.find('.'));
}

ProbeOutcome run_probe(const PodmanOptions& o) {
  ProbeOutcome out;
  MechanismProbe& p = out.probe;
  p.name = "podman";
  auto fail = [&out](std::string why) {
    out.probe.available = false;
    out.probe.unavailable_reason = std::move(why);
    return out;
  };
  auto facts = basic_host_facts(o);
  if (!facts) return fail(facts.error().message() + " (install podman and runc)");
  out.facts = *facts;
  p.path = out.facts.podman_path;
  auto user = resolve_job_user(o.job_user);
  if (!user) return fail(user.error().message());
  if (::access(o.busybox_path.c_str(), R_OK) != 0)
    return fail(
        fmt::format("{} is missing: the probe builds its throwaway image from it; install "
                    "busybox-static",
                    o.busybox_path));
  // Under the controller's temporaries, where sweep finds it (and the pause process its storage
  // starts) should the controller be killed mid-probe; /var/tmp only without a state directory.
  std::string parent = o.probe_dir.empty() ? "/var/tmp" : o.probe_dir;
  std::string tmpl =
      parent + (o.probe_dir.empty() ? "/sealrun-" : "/") + kProbeDirPrefix + "XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr)
    return fail(fmt::format("create a probe directory in {}: {}", parent, errno_text(errno)));
  fs::path work = tmpl;
  std::error_code ec;
  fs::permissions(work, fs::perms(0711), ec);
  Status st = probe_container(p, out.facts, o, *user, work);
  fs::remove_all(work, ec);
  if (!st) return fail(st.error().message());
  p.available = true;
  return out;
}

}  // namespace sealrun::podman
