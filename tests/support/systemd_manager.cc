// See systemd_manager.h. The boot follows docs/testbed.md's checked recipe; the only addition is
// that the harness makes a child group in *every* hierarchy this process is in, not just
// name=systemd and memory: the manager mounts whatever hierarchies it finds, rooted at its cgroup
// namespace, and a hierarchy where we sat at the root would let it create groups at the host's top
// level. With a child everywhere, all it creates lies below groups we made and remove.
#include "tests/support/systemd_manager.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/syscall.h"

namespace sealrun::testing {
namespace fs = std::filesystem;
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep)) out.push_back(item);
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

void sleep_ms(int ms) { usleep(static_cast<useconds_t>(ms) * 1000); }

struct MountedHierarchy {
  std::string mount_point;
  std::string fstype;
  std::vector<std::string> super_options;
};

std::vector<MountedHierarchy> cgroup_mounts() {
  std::vector<MountedHierarchy> out;
  std::istringstream in(slurp("/proc/self/mountinfo"));
  std::string line;
  while (std::getline(in, line)) {
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    auto left = split(line.substr(0, dash), ' ');
    auto right = split(line.substr(dash + 3), ' ');
    if (left.size() < 5 || right.size() < 3) continue;
    // Only whole hierarchies (mount root "/"), not bind mounts of a subtree.
    if (left[3] != "/" || (right[0] != "cgroup" && right[0] != "cgroup2")) continue;
    out.push_back({left[4], right[0], split(right[2], ',')});
  }
  return out;
}

// Removes a group and every group below it, deepest first, retrying while the kernel still
// reports them busy (processes of a dying namespace are reaped asynchronously).
void remove_group_tree(const std::string& top, int64_t deadline) {
  std::vector<std::string> dirs{top};
  std::error_code ec;
  for (fs::recursive_directory_iterator it(top, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) dirs.push_back(it->path().string());
  }
  std::sort(dirs.begin(), dirs.end(), [](const std::string& a, const std::string& b) {
    return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
  });
  for (const auto& d : dirs) {
    while (rmdir(d.c_str()) != 0 && errno == EBUSY && monotonic_ms() < deadline) sleep_ms(20);
  }
}

// Groups an earlier, killed test process left (its pid is in the name and no longer alive): a
// SIGKILLed test cannot run its destructor, so the next one tidies up after it.
void remove_stale_groups(const std::string& parent) {
  const std::string prefix = "sealrun-sdtest-";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    std::string pid = name.substr(prefix.size(), name.find('-', prefix.size()) - prefix.size());
    if (pid.empty() || fs::exists("/proc/" + pid)) continue;
    remove_group_tree(entry.path().string(), monotonic_ms() + 1000);
  }
}

}  // namespace

Result<std::string> ensure_systemd_root(const std::string& source_dir, const std::string& outdir) {
  std::string root = outdir + "/systemd-root";
  if (fs::exists(root + "/.complete")) return root;
  SpawnOptions o;
  o.argv = {"/bin/bash", source_dir + "/tests/fixtures/systemd_root.sh", outdir};
  auto done = SEALRUN_TRY(run_capture(o, 900000));
  if (!done.status.success()) {
    return Error::make("tests/fixtures/systemd_root.sh " + outdir + " failed (" +
                       done.status.describe() + "): " + done.err);
  }
  return root;
}

Status SystemdManager::make_groups() {
  static int counter = 0;
  std::string name = "sealrun-sdtest-" + std::to_string(getpid()) + "-" + std::to_string(++counter);
  auto mounts = cgroup_mounts();
  std::istringstream in(slurp("/proc/self/cgroup"));
  std::string line;
  while (std::getline(in, line)) {
    auto first = line.find(':');
    auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    auto controllers = split(line.substr(first + 1, second - first - 1), ',');
    std::string path = line.substr(second + 1);
    const MountedHierarchy* found = nullptr;
    for (const auto& m : mounts) {
      bool v2 = controllers.empty();
      if (v2 != (m.fstype == "cgroup2")) continue;
      bool all = std::all_of(controllers.begin(), controllers.end(), [&](const std::string& c) {
        return std::find(m.super_options.begin(), m.super_options.end(), c) !=
               m.super_options.end();
      });
      if (all) {
        found = &m;
        break;
      }
    }
    if (!found) continue;  // not mounted here: the manager cannot reach it either
    Group g;
    g.hierarchy = fs::path(found->mount_point).filename().string();
    g.fstype = found->fstype;
    std::string opts;
    for (const auto& c : controllers) opts += (opts.empty() ? "" : ",") + c;
    g.options = opts.rfind("name=", 0) == 0 ? "none," + opts : opts;
    std::string parent = found->mount_point + (path == "/" ? "" : path);
    remove_stale_groups(parent);
    g.host_dir = parent + "/" + name;
    if (mkdir(g.host_dir.c_str(), 0755) != 0) return Error::from_errno("mkdir " + g.host_dir);
    groups_.push_back(g);
    // A new cpuset group has no cpus or mems, and nothing can join it until it has.
    if (std::find(controllers.begin(), controllers.end(), "cpuset") != controllers.end()) {
      for (const char* f : {"cpuset.cpus", "cpuset.mems"}) {
        std::ofstream(g.host_dir + "/" + f) << slurp(parent + "/" + f);
      }
    }
    auto fd = SEALRUN_TRY(open_at(AT_FDCWD, g.host_dir + "/cgroup.procs", O_WRONLY));
    procs_fds_.push_back(std::move(fd));
  }
  if (groups_.empty()) return Error::make("no cgroup hierarchy found in /proc/self/mountinfo");
  return ok_status();
}

std::vector<int> SystemdManager::join_fds() const {
  std::vector<int> fds;
  for (const auto& fd : procs_fds_) fds.push_back(fd.get());
  return fds;
}

Status SystemdManager::start(int64_t timeout_ms) {
  static const char* kScript = R"(set -e
R=$1; shift
mount -t proc proc "$R/proc"
mount -t sysfs sysfs "$R/sys"
mount -t tmpfs -o mode=755 tmpfs "$R/sys/fs/cgroup"
for spec in "$@"; do
  name=${spec%%:*}; rest=${spec#*:}; type=${rest%%:*}; opts=${rest#*:}
  mkdir -p "$R/sys/fs/cgroup/$name"
  if [ "$type" = cgroup2 ]; then
    mount -t cgroup2 cgroup2 "$R/sys/fs/cgroup/$name"
  else
    mount -t cgroup -o "$opts" cgroup "$R/sys/fs/cgroup/$name"
  fi
done
mount -t tmpfs -o mode=755 tmpfs "$R/run"
mount -t tmpfs -o mode=1777 tmpfs "$R/tmp"
mount --rbind /dev "$R/dev"
exec chroot "$R" /usr/bin/env container=other /lib/systemd/systemd
)";
  char log_template[] = "/tmp/sealrun-systemd-manager-XXXXXX";
  int log_fd = mkstemp(log_template);
  if (log_fd < 0) return Error::from_errno("mkstemp for the manager's log");
  UniqueFd log_file(log_fd);
  log_path_ = log_template;

  SpawnOptions o;
  o.argv = {SEALRUN_TRY(find_program("unshare")),
            "--pid",
            "--fork",
            "--kill-child",
            "--mount",
            "--uts",
            "--ipc",
            "--cgroup",
            "--propagation",
            "private",
            "/bin/sh",
            "-c",
            kScript,
            "sh",
            root_};
  for (const auto& g : groups_) o.argv.push_back(g.hierarchy + ":" + g.fstype + ":" + g.options);
  o.env = std::vector<std::string>{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
  o.stdout_fd = log_file.get();
  o.stderr_fd = log_file.get();
  o.join_cgroup_fds = join_fds();
  o.die_with_parent = true;
  o.new_session = true;
  unshare_ = SEALRUN_TRY_CTX(spawn(o), "boot the systemd manager");

  int64_t deadline = monotonic_ms() + timeout_ms;
  std::string children = "/proc/" + std::to_string(unshare_.pid()) + "/task/" +
                         std::to_string(unshare_.pid()) + "/children";
  // unshare's child runs the script, then chroot, env and finally systemd: wait for the last.
  while (manager_pid_ < 0) {
    std::string kids = trim(slurp(children));
    if (!kids.empty()) {
      pid_t pid = static_cast<pid_t>(std::stol(kids));
      if (trim(slurp("/proc/" + std::to_string(pid) + "/comm")) == "systemd") {
        manager_pidfd_.reset(pidfd_open_raw(pid, 0));
        if (!manager_pidfd_) return Error::from_errno("pidfd_open the manager");
        manager_pid_ = pid;
        break;
      }
    }
    auto exited = SEALRUN_TRY(unshare_.wait_for(0));
    if (exited) return Error::make("the manager's namespace setup failed: " + log());
    if (monotonic_ms() > deadline) return Error::make("systemd did not start: " + log());
    sleep_ms(20);
  }
  // Booted = the bus answers and the boot transaction is over ("degraded" is fine: units such as
  // systemd-logind cannot work in this container and fail).
  for (;;) {
    auto state = systemctl({"is-system-running"}, 10000);
    std::string s = state.ok() ? trim(state->out) : "";
    if (s == "running" || s == "degraded") return ok_status();
    if (monotonic_ms() > deadline) {
      return Error::make("systemd did not finish booting (state \"" + s + "\"): " + log());
    }
    sleep_ms(200);
  }
}

Result<std::unique_ptr<SystemdManager>> SystemdManager::boot(const std::string& root,
                                                             int64_t timeout_ms) {
  if (!fs::exists(root + "/lib/systemd/systemd")) {
    return Error::make(root + " is not a systemd root: run tests/fixtures/systemd_root.sh");
  }
  std::unique_ptr<SystemdManager> m(new SystemdManager());
  m->root_ = root;
  SEALRUN_TRY(m->make_groups());
  SEALRUN_TRY(m->start(timeout_ms));
  return m;
}

void SystemdManager::shutdown() {
  // SIGKILL to the PID 1 of a pid namespace kills every process in it.
  if (manager_pidfd_) pidfd_send_signal_raw(manager_pidfd_.get(), SIGKILL);
  // unshare reaps the manager and then exits; killing unshare first would leave the manager a
  // zombie for the host's init to collect.
  if (unshare_.running()) {
    auto exited = unshare_.wait_for(10000);
    (void)exited;
  }
  unshare_.kill_and_reap();
  procs_fds_.clear();
  // The namespace's processes die asynchronously: remove_group_tree waits for each group.
  int64_t deadline = monotonic_ms() + 10000;
  for (const auto& g : groups_) remove_group_tree(g.host_dir, deadline);
  groups_.clear();
  if (!log_path_.empty()) unlink(log_path_.c_str());
}

SystemdManager::~SystemdManager() { shutdown(); }

std::string SystemdManager::bus_address() const {
  return "unix:path=" + root_ + "/run/dbus/system_bus_socket";
}

std::string SystemdManager::cgroupfs_root() const { return root_ + "/sys/fs/cgroup"; }

std::string SystemdManager::host_group(const std::string& name) const {
  for (const auto& g : groups_) {
    if (g.hierarchy == name) return g.host_dir;
  }
  return "";
}

Result<Captured> SystemdManager::run_inside(const std::vector<std::string>& argv,
                                            int64_t timeout_ms) {
  SpawnOptions o;
  o.argv = {
      SEALRUN_TRY(find_program("nsenter")), "-t", std::to_string(manager_pid_), "-m", "-p", "--"};
  o.argv.insert(o.argv.end(), argv.begin(), argv.end());
  o.join_cgroup_fds = join_fds();
  o.die_with_parent = true;
  return run_capture(o, timeout_ms);
}

Result<Captured> SystemdManager::systemctl(const std::vector<std::string>& args,
                                           int64_t timeout_ms) {
  SpawnOptions o;
  o.argv = {SEALRUN_TRY(find_program("nsenter")),
            "-t",
            std::to_string(manager_pid_),
            "-m",
            "-p",
            "-r",
            "-w",
            "--",
            "/bin/systemctl",
            "--no-pager"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.die_with_parent = true;
  return run_capture(o, timeout_ms);
}

std::string SystemdManager::log() const {
  std::string text = log_path_.empty() ? "" : slurp(log_path_);
  if (text.size() > 4000) text = "..." + text.substr(text.size() - 4000);
  return text;
}

}  // namespace sealrun::testing
