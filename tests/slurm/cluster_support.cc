// SPDX-License-Identifier: Apache-2.0
// The slurm tests' shared helpers: see cluster_support.h.
#include "tests/slurm/cluster_support.h"

#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace sealrun::testing::slurm {

namespace fs = std::filesystem;

Identity root_identity() { return {"root", 0, 0, "/root"}; }

Identity ordinary_user() {
  const char* env = ::getenv("SEALRUN_JOB_USER");
  std::string name = env != nullptr && *env != '\0' ? env : "sealrun";
  struct passwd* pw = ::getpwnam(name.c_str());
  if (pw == nullptr) {
    ADD_FAILURE() << "user " << name << " does not exist: run .ci/setup";
    return {name, 65534, 65534, "/"};
  }
  return {name, pw->pw_uid, pw->pw_gid, pw->pw_dir};
}

std::string cluster_dir() { return SEALRUN_SLURM_CLUSTER_DIR; }
std::string slurm_conf() { return cluster_dir() + "/etc/slurm.conf"; }
std::string sealrun_bin() { return std::string(SEALRUN_BINARY_DIR) + "/sealrun"; }

Captured run_as(const Identity& who, std::vector<std::string> argv, const std::string& cwd,
                int64_t timeout_ms) {
  if (!argv.empty() && argv[0].find('/') == std::string::npos) {
    auto p = find_program(argv[0]);
    if (!p) {
      ADD_FAILURE() << p.error().message();
      return {};
    }
    argv[0] = *p;
  }
  SpawnOptions o;
  o.argv = argv;
  o.cwd = cwd;
  o.env =
      std::vector<std::string>{"SLURM_CONF=" + slurm_conf(), "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                               "HOME=" + who.home, "USER=" + who.name, "LOGNAME=" + who.name};
  if (who.uid != 0) {
    o.uid = who.uid;
    o.gid = who.gid;
  }
  auto r = run_capture(o, timeout_ms);
  if (!r) {
    ADD_FAILURE() << argv[0] << ": " << r.error().message();
    return {};
  }
  return *r;
}

bool wait_until(const std::function<bool()>& done, int64_t timeout_ms, int64_t interval_ms) {
  for (int64_t waited = 0;; waited += interval_ms) {
    if (done()) return true;
    if (waited >= timeout_ms) return false;
    ::usleep(static_cast<useconds_t>(interval_ms * 1000));
  }
}

bool node_ready() {
  auto c = run_as(root_identity(), {"sinfo", "-h", "-N", "-o", "%T"}, "/", 10000);
  std::string s = c.out.substr(0, c.out.find('\n'));
  return c.status.success() && (s == "idle" || s == "mixed" || s == "allocated");
}

std::optional<JobInfo> job_info(uint64_t job_id) {
  auto c = run_as(root_identity(), {"scontrol", "-o", "show", "job", std::to_string(job_id)}, "/",
                  10000);
  if (!c.status.success()) return std::nullopt;
  JobInfo info;
  std::istringstream words(c.out);
  std::string w;
  while (words >> w) {
    if (w.rfind("JobState=", 0) == 0) info.state = w.substr(9);
    if (w.rfind("ExitCode=", 0) == 0) info.exit_code = w.substr(9);
    if (w.rfind("Requeue=", 0) == 0) info.requeue = w.substr(8);
  }
  return info;
}

std::optional<JobInfo> wait_job_finished(uint64_t job_id, int64_t timeout_ms) {
  std::optional<JobInfo> last;
  wait_until(
      [&] {
        last = job_info(job_id);
        return last && last->state != "PENDING" && last->state != "RUNNING" &&
               last->state != "COMPLETING" && last->state != "CONFIGURING";
      },
      timeout_ms, 50);
  return last;
}

Workspace::Workspace(Identity who) : who_(std::move(who)) {
  // The ordinary user reaches its workspace through the temp dir (mkdtemp makes it 0700).
  fs::permissions(dir_.path(), fs::perms(0755));
  for (const char* d : {"src", "tc", "state"}) fs::create_directory(dir_ / d);
  write_text(dir_ / "src/input.txt", "input\n");
  write_text(dir_ / "tc/tool.txt", "a toolchain file\n");
  // The job's /bin: a static busybox and its applet links, pinned with --tree (a job sees no
  // host path that is not pinned, docs/view.md).
  fs::create_directory(dir_ / "bb");
  fs::copy_file("/bin/busybox", dir_ / "bb/busybox");
  for (const char* applet : {"sh", "cat", "echo", "head", "dd", "sleep", "true", "grep", "touch",
                             "ls", "mkdir", "env", "id", "yes", "seq", "awk", "sed", "wc", "tr"})
    fs::create_symlink("busybox", dir_ / (std::string("bb/") + applet));
  for (const auto& e : fs::recursive_directory_iterator(dir_.path()))
    EXPECT_EQ(::lchown(e.path().c_str(), who_.uid, who_.gid), 0) << e.path();
  EXPECT_EQ(::chown(dir_.str().c_str(), who_.uid, who_.gid), 0);
}

Frozen Workspace::freeze(const std::string& name, const std::string& script,
                         const std::vector<std::string>& sets) {
  std::vector<std::string> argv = {sealrun_bin(),
                                   "admit",
                                   "freeze",
                                   "--out",
                                   dir_ / name,
                                   "--source",
                                   dir_ / "src",
                                   "--toolchain",
                                   dir_ / "tc",
                                   "--toolchain-mount",
                                   "/opt/toolchain",
                                   "--tree",
                                   dir_ / "bb" + "=/bin",
                                   "--state-dir",
                                   dir_ / "state",
                                   "--env",
                                   "PATH=/usr/bin:/bin",
                                   "--set",
                                   "limits.memory_max_bytes=67108864",
                                   "--set",
                                   "limits.memory_high_bytes=60000000",
                                   "--set",
                                   "limits.pids_max=32",
                                   "--set",
                                   "limits.census_interval_ms=200"};
  for (const auto& s : sets) {
    argv.push_back("--set");
    argv.push_back(s);
  }
  argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
  auto c = run_as(who_, argv, dir_.str());
  EXPECT_EQ(c.status.code, 0) << c.err;
  return {dir_ / name, c.out.substr(0, 64)};
}

std::vector<std::string> Workspace::run_argv(const Frozen& a, const std::string& id) const {
  return {sealrun_bin(), "run", a.path, "--sha256", a.sha256, "--id", id, "--state-dir", state()};
}

std::string Workspace::run_line(const Frozen& a, const std::string& id) const {
  std::string line = "exec";
  for (const auto& w : run_argv(a, id)) line += " " + w;
  return line;
}

std::optional<uint64_t> Workspace::sbatch(const std::string& wrap, std::string* err,
                                          const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {"sbatch", "--parsable", "-o", dir_ / "slurm-%j.out"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), {"--wrap", wrap});
  auto c = run_as(who_, argv, dir_.str(), 30000);
  if (err) *err = c.err;
  if (!c.status.success()) return std::nullopt;
  return std::stoull(c.out);
}

std::string Workspace::receipt_path(const std::string& id) const {
  return state() + "/results/" + id + "/receipt.json";
}

nlohmann::json Workspace::receipt(const std::string& id) const {
  auto doc = nlohmann::json::parse(read_text(receipt_path(id)), nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << receipt_path(id) << " is not JSON";
  return doc;
}

std::vector<std::string> sealrun_groups(const std::string& run_id) {
  std::vector<std::string> found;
  std::string prefix = "sealrun-" + run_id + ".";
  for (const char* h : {"memory", "pids", "freezer"}) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(std::string("/sys/fs/cgroup/") + h, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_directory(ec) && it->path().filename().string().rfind(prefix, 0) == 0)
        found.push_back(it->path());
  }
  return found;
}

std::string describe_processes(const std::vector<pid_t>& pids) {
  std::string out;
  for (pid_t pid : pids) {
    const fs::path proc = fs::path("/proc") / std::to_string(pid);
    std::string cmdline = read_text(proc / "cmdline");
    for (char& c : cmdline)
      if (c == '\0') c = ' ';
    out += "  pid " + std::to_string(pid) + ": " + cmdline +
           "\n    stat: " + read_text(proc / "stat") + "\n";
  }
  return out.empty() ? "  (none)\n" : out;
}

std::vector<pid_t> processes_with(const std::string& marker) {
  std::vector<pid_t> found;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = read_text(e.path() / "cmdline");
    std::string stat = read_text(e.path() / "stat");
    for (char& c : cmdline)
      if (c == '\0') c = ' ';
    if (stat.find(") Z ") == std::string::npos && cmdline.find(marker) != std::string::npos &&
        name != std::to_string(::getpid()))
      found.push_back(std::stoi(name));
  }
  return found;
}

void expect_fully_enforced(const nlohmann::json& r) {
  ASSERT_TRUE(r.contains("grant")) << r.dump();
  const auto& g = r["grant"];
  EXPECT_EQ(g["mode"], "enforcing");
  EXPECT_TRUE(g["unenforced_required"].empty()) << g.dump();
  for (const char* dim : {"memory", "process_count", "filesystem", "network", "syscalls"}) {
    bool has = false;
    for (const auto& e : g["enforced"]) has = has || e == dim;
    EXPECT_TRUE(has) << dim << " not enforced: " << g.dump();
  }
  ASSERT_TRUE(r["memory"].contains("limits")) << r["memory"].dump();
  int checked = 0;
  for (const auto& l : r["memory"]["limits"]) {
    if (l["name"] == "memory_max_bytes" || l["name"] == "pids_max") {
      EXPECT_TRUE(l["applied"].get<bool>()) << l.dump();
      EXPECT_EQ(l["observed"], l["requested"]) << l.dump();
      ++checked;
    }
    if (l["name"] == "swap_max_bytes") {
      EXPECT_TRUE(l["applied"].get<bool>()) << l.dump();
    }
  }
  EXPECT_EQ(checked, 2) << r["memory"].dump();
}

}  // namespace sealrun::testing::slurm
