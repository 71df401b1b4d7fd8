// SPDX-License-Identifier: Apache-2.0
// BwrapMechanism::run_probe(): what bubblewrap can enforce on this host, found by trying. It finds
// the binary and its version, checks that unprivileged user namespaces are allowed, then starts a
// throwaway sandbox exactly as a job would be started (same argv builder, same user, same seccomp
// policy) running /bin/sh, and reads back from inside: its namespaces (compared with ours), the
// network interfaces, whether / and /usr can be written, and the Seccomp/Cap*/NoNewPrivs lines of
// /proc/self/status. Each dimension is reported with how it was verified or why it failed. With a
// cache directory, findings made for the same bwrap binary, kernel, boot and job user are taken
// from the cache instead (bwrap_probe_cache.h), and the probe says so (MechanismProbe::cache).
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <sstream>

#include "containment/bwrap.h"
#include "containment/bwrap_launch.h"
#include "containment/bwrap_probe_cache.h"
#include "containment/caps.h"
#include "containment/view_plan.h"
#include "core/bounded_file.h"
#include "core/syscall.h"

namespace sealrun {

namespace {

constexpr const char* kProbeScript =
    "cat /proc/self/status; echo @@; cat /proc/net/dev; echo @@; "
    "readlink /proc/self/ns/pid /proc/self/ns/net /proc/self/ns/mnt; echo @@; "
    "if (: > /sealrun-probe) 2>/dev/null; then echo root-writable; else echo root-readonly; fi; "
    "if (: > /usr/sealrun-probe) 2>/dev/null; then echo usr-writable; else echo usr-readonly; fi";

std::string read_small(const std::string& path) {
  auto fd = open_at(AT_FDCWD, path, O_RDONLY);
  if (!fd) return {};
  auto text = read_up_to(fd->get(), 4096, path);
  return text ? *text : std::string();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::vector<std::string> split(const std::string& text, const std::string& sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t pos = text.find(sep, start);
    out.push_back(text.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) return out;
    start = pos + sep.size();
  }
}

// Interface names from /proc/net/dev (two header lines, then "  name: counters").
std::vector<std::string> interfaces(const std::string& net_dev) {
  std::vector<std::string> out;
  std::istringstream in(net_dev);
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos || line.find('|') != std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (!name.empty()) out.push_back(name);
  }
  return out;
}

void set(MechanismProbe& p, Dimension d, bool ok, std::string why) {
  p.dimensions.push_back({d, ok, std::move(why)});
}

MechanismProbe mark_unavailable(MechanismProbe& p, std::string why) {
  p.available = false;
  p.unavailable_reason = std::move(why);
  for (auto d : DimensionSet::all().list())
    set(p, d, false, "bwrap unavailable: " + p.unavailable_reason);
  return p;
}

}  // namespace

MechanismProbe BwrapMechanism::run_probe() {
  MechanismProbe p;
  p.name = "bwrap";
  auto unavailable = [&](std::string why) { return mark_unavailable(p, std::move(why)); };

  auto path = bwrap_internal::resolve_bwrap(options_);
  if (!path) return unavailable(path.error().message());
  p.path = *path;
  // The switches are read every time (they can change without a reboot).
  std::string max_userns = trim(read_small(options_.proc_sys + "/user/max_user_namespaces"));
  if (max_userns == "0")
    return unavailable(
        "user namespaces are disabled (/proc/sys/user/max_user_namespaces = 0); rootless bwrap "
        "needs them: sysctl user.max_user_namespaces=15000");
  if (trim(read_small(options_.proc_sys + "/kernel/unprivileged_userns_clone")) == "0")
    return unavailable(
        "unprivileged user namespaces are disabled (/proc/sys/kernel/unprivileged_userns_clone = "
        "0); rootless bwrap needs them: sysctl kernel.unprivileged_userns_clone=1");
  auto run_as = bwrap_internal::resolve_run_as(options_);
  if (!run_as) return unavailable(run_as.error().message());
  if (options_.probe_cache_dir.empty()) return probe_by_sandbox(std::move(p), *run_as);

  ProbeCacheUse use;
  auto key = bwrap_internal::probe_cache_key(p.path, *run_as, options_.proc_sys);
  if (!key) {
    use.note = "no cache key: " + key.error().message();
  } else {
    use.key = key->digest();
    if (auto cached =
            bwrap_internal::load_cached_probe(options_.probe_cache_dir, *key, &use.note)) {
      use.cached = true;
      cached->cache = use;
      return *cached;
    }
  }
  MechanismProbe fresh = probe_by_sandbox(std::move(p), *run_as);
  if (key && fresh.available) {
    auto stored = bwrap_internal::store_cached_probe(options_.probe_cache_dir, *key, fresh);
    use.note +=
        stored ? "; probed, and the entry written" : "; probed (" + stored.error().message() + ")";
  } else {
    use.note += "; probed, nothing cached";
  }
  fresh.cache = use;
  return fresh;
}

MechanismProbe BwrapMechanism::probe_by_sandbox(MechanismProbe p,
                                                const std::optional<JobUser>& run_as) {
  auto unavailable = [&](std::string why) { return mark_unavailable(p, std::move(why)); };
  SpawnOptions version;
  version.argv = {p.path, "--version"};
  version.env = std::vector<std::string>{};
  auto v = run_capture(version, 10000, 4096);
  if (!v || !v->status.success())
    return unavailable(fmt::format("`{} --version` failed: {}", p.path,
                                   v ? v->status.describe() : v.error().message()));
  p.version = trim(v->out);

  // The throwaway sandbox, through the same launch path as a job.
  Grant g;
  g.mechanism = "bwrap";
  g.spec.run_id = "sealrun-probe";
  g.spec.argv = {"/bin/sh", "-c", kProbeScript};
  g.spec.cwd = "/";
  g.spec.env = {{"PATH", "/usr/bin:/bin"}};
  // Not a job: the probe's own shell and tools are the host's, read-only (a job sees only what
  // its admission pins; this sandbox runs nothing but the script above).
  g.spec.mounts.push_back(
      {"/usr", "/usr", MountSpec::Access::kReadOnly, ViewKind::kTree, "host /usr (probe only)"});
  add_compat_links(read_host_compat_links(), &g.spec);
  g.requested = g.enforced = DimensionSet::all();
  auto out = make_pipe();
  auto err = make_pipe();
  if (!out || !err) return unavailable("cannot make pipes for the probe sandbox");
  JobIo io{-1, out->write_end.get(), err->write_end.get()};
  auto launched = bwrap_internal::launch(p.path, run_as, g, nullptr, io, options_.probe_timeout_ms);
  out->write_end.reset();
  err->write_end.reset();
  std::string err_text;
  if (!launched) {
    if (::fcntl(err->read_end.get(), F_SETFL, O_NONBLOCK) == 0) {
      auto e = read_up_to(err->read_end.get(), 4096, "probe stderr");
      if (e) err_text = trim(*e);
    }
    return unavailable(fmt::format("a test sandbox could not be started as {}: {}{}",
                                   run_as ? run_as->name : "the current user",
                                   launched.error().message(),
                                   err_text.empty() ? "" : " (bwrap: " + err_text + ")"));
  }
  // Output is small (a few KiB, below the pipe buffer), so reading after exit cannot deadlock.
  auto st = launched->bwrap.wait_for(options_.probe_timeout_ms);
  if (!st || !st->has_value()) {
    launched->bwrap.kill_and_reap();
    return unavailable("the test sandbox did not finish in time");
  }
  auto text = read_up_to(out->read_end.get(), 1 << 20, "probe output");
  auto etext = read_up_to(err->read_end.get(), 4096, "probe stderr");
  if (!(*st)->success() || !text)
    return unavailable(fmt::format("the test sandbox failed ({}): {}", (*st)->describe(),
                                   etext ? trim(*etext) : std::string()));

  auto parts = split(*text, "@@\n");
  if (parts.size() < 4) return unavailable("the test sandbox's report was incomplete");
  SecurityStatus sec = parse_security_status(parts[0]);
  auto ifaces = interfaces(parts[1]);
  auto ns = split(trim(parts[2]), "\n");
  auto host_ns = [](const char* n) {
    char buf[256];
    ssize_t len = ::readlink(fmt::format("/proc/self/ns/{}", n).c_str(), buf, sizeof buf - 1);
    return len > 0 ? std::string(buf, static_cast<size_t>(len)) : std::string();
  };
  bool own_pid = ns.size() == 3 && ns[0] != host_ns("pid");
  bool own_net = ns.size() == 3 && ns[1] != host_ns("net");
  bool own_mnt = ns.size() == 3 && ns[2] != host_ns("mnt");
  bool root_ro = parts[3].find("root-readonly") != std::string::npos &&
                 parts[3].find("usr-readonly") != std::string::npos;
  bool only_lo = ifaces.size() == 1 && ifaces[0] == "lo";

  p.available = true;
  std::string user = run_as ? fmt::format("as user {}", run_as->name) : "as the current user";
  set(p, Dimension::kFilesystem, own_mnt && root_ro,
      own_mnt && root_ro
          ? fmt::format("test sandbox ({}): own mount namespace; writing / and /usr failed", user)
          : fmt::format("test sandbox: own mount namespace {}, / and /usr read-only {}", own_mnt,
                        root_ro));
  set(p, Dimension::kProcessTree, own_pid,
      own_pid ? "own pid namespace (--unshare-pid) and --die-with-parent: killing bwrap ends it all"
              : "the test sandbox shared the host's pid namespace");
  set(p, Dimension::kWallClock, true,
      "sealrun stops the job at its limit: TERM to its processes, grace, SIGKILL to bwrap");
  set(p, Dimension::kNetwork, own_net && only_lo,
      own_net && only_lo ? "own network namespace with only a loopback interface"
                         : fmt::format("network namespace separate: {}; interfaces: {}", own_net,
                                       fmt::format("{}", fmt::join(ifaces, ","))));
  set(p, Dimension::kMemory, false, "bwrap sets no resource limits (a resource group does)");
  set(p, Dimension::kProcessCount, false, "bwrap sets no pids limit (a resource group does)");
  set(p, Dimension::kSyscalls, sec.seccomp == 2,
      sec.seccomp == 2
          ? "Seccomp: 2 (filter) read back inside the test sandbox"
          : fmt::format("Seccomp: {} inside the test sandbox", sec.seccomp.value_or(-1)));
  bool caps_ok = sec.no_capabilities() && sec.no_new_privs == 1;
  set(p, Dimension::kCapabilities, caps_ok,
      caps_ok ? "CapPrm/CapEff/CapBnd/CapAmb 0 and NoNewPrivs 1 read back inside the test sandbox"
              : "inside the test sandbox: " + sec.problems());
  return p;
}

}  // namespace sealrun
