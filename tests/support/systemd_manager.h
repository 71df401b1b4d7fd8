// A real systemd manager for tests (docs/testbed.md), booted from the debootstrap root that
// tests/fixtures/systemd_root.sh builds, in throwaway namespaces: fresh child cgroups of our own in
// every hierarchy (so the manager's cgroup namespace, and everything it creates, lies inside groups
// this harness made), `unshare --pid --fork --mount --uts --ipc --cgroup`, proc/sysfs/cgroupfs,
// tmpfs /run and /tmp, /dev, then `chroot ROOT env container=other /lib/systemd/systemd`.
// RAII: the destructor SIGKILLs the manager's PID 1 (which ends its whole pid namespace), waits for
// the groups to empty and removes them, so a failing test still leaves nothing behind.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "core/process.h"
#include "core/result.h"

namespace sealrun::testing {

// Makes sure OUTDIR/systemd-root exists (runs SOURCE_DIR/tests/fixtures/systemd_root.sh OUTDIR if
// its .complete marker is missing) and returns its path.
Result<std::string> ensure_systemd_root(const std::string& source_dir, const std::string& outdir);

class SystemdManager {
 public:
  // Boots the manager from `root` and waits (at most timeout_ms) until its system bus answers and
  // its boot has finished.
  static Result<std::unique_ptr<SystemdManager>> boot(const std::string& root,
                                                      int64_t timeout_ms = 90000);
  ~SystemdManager();
  SystemdManager(const SystemdManager&) = delete;
  SystemdManager& operator=(const SystemdManager&) = delete;

  pid_t pid() const { return manager_pid_; }  // the manager (its PID 1), as seen from here
  const std::string& root() const { return root_; }
  // The manager's system bus and cgroupfs, as paths valid inside its mount namespace.
  std::string bus_address() const;
  std::string cgroupfs_root() const;
  // The child group this harness made in the host's `name` hierarchy ("memory", "systemd",
  // "pids", ...), as a host path; empty if that hierarchy is not mounted here.
  std::string host_group(const std::string& name) const;

  // Runs argv inside the manager's mount and pid namespaces (nsenter -t PID -m -p) and in the
  // harness's groups (so the manager may move its processes); captures the output.
  Result<Captured> run_inside(const std::vector<std::string>& argv, int64_t timeout_ms);
  // `systemctl ARGS...` in the manager's root (nsenter -t PID -m -p -r).
  Result<Captured> systemctl(const std::vector<std::string>& args, int64_t timeout_ms = 30000);
  // The manager's console output so far (for failure messages).
  std::string log() const;

 private:
  struct Group {
    std::string hierarchy;  // basename of the host mount point: "memory", "systemd", "unified"
    std::string fstype;     // "cgroup" or "cgroup2"
    std::string options;    // mount options selecting the hierarchy: "memory", "none,name=systemd"
    std::string host_dir;   // the child group we made
  };
  SystemdManager() = default;
  Status make_groups();
  Status start(int64_t timeout_ms);
  void shutdown();
  std::vector<int> join_fds() const;

  std::string root_;
  std::string log_path_;
  std::vector<Group> groups_;
  std::vector<UniqueFd> procs_fds_;
  Child unshare_;
  pid_t manager_pid_ = -1;
  UniqueFd manager_pidfd_;
};

}  // namespace sealrun::testing
