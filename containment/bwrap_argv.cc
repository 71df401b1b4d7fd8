// build_bwrap_argv() and the host layout it is built on: see bwrap_argv.h for the choice of root.
#include "containment/bwrap_argv.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>

namespace sealrun {

const std::vector<std::string>& etc_essentials() {
  static const std::vector<std::string> kEtc = {
      "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",  "/etc/alternatives",
      "/etc/passwd",      "/etc/group",      "/etc/nsswitch.conf", "/etc/localtime",
      "/etc/hosts",       "/etc/host.conf",  "/etc/os-release",    "/etc/debian_version",
  };
  return kEtc;
}

HostRootLayout read_host_root_layout() {
  HostRootLayout layout;
  constexpr std::array<const char*, 7> kSystem = {"/usr",   "/bin",   "/sbin",  "/lib",
                                                  "/lib32", "/lib64", "/libx32"};
  for (const char* path : kSystem) {
    struct stat st {};
    if (::lstat(path, &st) != 0) continue;
    RootEntry e{path, RootEntry::Kind::kDirectory, {}};
    if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      ssize_t n = ::readlink(path, buf, sizeof buf - 1);
      if (n <= 0) continue;
      e.kind = RootEntry::Kind::kSymlink;
      e.symlink_target.assign(buf, static_cast<size_t>(n));
    } else if (!S_ISDIR(st.st_mode)) {
      continue;
    }
    layout.system.push_back(std::move(e));
  }
  for (const auto& path : etc_essentials()) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) layout.etc.push_back(path);
  }
  return layout;
}

std::vector<std::string> build_bwrap_argv(const std::string& bwrap_path, const Grant& grant,
                                          const HostRootLayout& layout, const BwrapFds& fds) {
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
  }
  add({"--clearenv"});
  for (const auto& [name, value] : spec.env) add({"--setenv", name, value});

  for (const auto& e : layout.system) {
    if (e.kind == RootEntry::Kind::kSymlink)
      add({"--symlink", e.symlink_target, e.path});
    else
      add({"--ro-bind", e.path, e.path});
  }
  for (const auto& path : layout.etc) add({"--ro-bind", path, path});

  add({"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"});

  for (size_t i = 0; i < spec.mounts.size(); ++i) {
    const auto& m = spec.mounts[i];
    int fd = i < fds.mount_sources.size() ? fds.mount_sources[i] : -1;
    bool writable = m.access == MountSpec::Access::kWritable;
    if (i < fds.staged_sources.size())
      add({writable ? "--bind" : "--ro-bind", fds.staged_sources[i], m.target});
    else if (fd >= 0)
      add({writable ? "--bind-fd" : "--ro-bind-fd", std::to_string(fd), m.target});
    else
      add({writable ? "--bind" : "--ro-bind", m.source, m.target});
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
