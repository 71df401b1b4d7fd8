// SPDX-License-Identifier: Apache-2.0
// ACCEPTANCE 29: SIGKILL to the controller within its first second(s) — at the moment each thing
// a run creates appears — and `sealrun sweep` then finds and removes everything the run created
// (owned roots, its temporaries, podman's probe storage, rootless pause processes, runroot links,
// resource groups), says so, and afterwards nothing of the run is left: no process, no group, no
// directory, no link. Real `sealrun`, real bwrap and rootless podman, real cgroups.
//
// Each kill point polls for the moment something exists (a record, a directory, a pause.pid, a
// link) rather than sleeping; two fixed delays reproduce the report (10 and 250 ms after start).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

#include "containment/mechanism.h"
#include "core/syscall.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;

using Probe = std::function<bool()>;

// The first entry of `dir` whose name starts with `prefix`, or "".
std::string first_entry(const std::string& dir, const std::string& prefix = "") {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind(prefix, 0) == 0) return e.path().string();
  return {};
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class SigkillSweep : public RunTest {
 public:  // the kill points' predicates read the fixture
  void SetUp() override {
    RunTest::SetUp();
    if (::geteuid() != 0)
      GTEST_SKIP() << "runs jobs as the job user and makes cgroups: root (CI is root)";
    // Rootless podman (the job user) takes its storage by path.
    fs::permissions(dir_.path(), fs::perms::owner_all | fs::perms::others_exec);
  }

  // Starts `sealrun run` for `id`, waits until `ready()` holds (or `delay_ms`, when set), then
  // SIGKILLs the controller and reaps it. Returns false when the moment never came.
  bool kill_when(const Frozen& a, const std::string& id, const std::vector<std::string>& extra,
                 const Probe& ready, int64_t delay_ms = -1) {
    std::vector<std::string> args = {"run",  a.path, "--sha256",    a.sha256,
                                     "--id", id,     "--state-dir", state_};
    args.insert(args.end(), extra.begin(), extra.end());
    SpawnOptions o = sealrun_options(args);
    auto log = open_at(AT_FDCWD, dir_ / (id + ".log"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (!log) return false;
    o.stdout_fd = log->get();
    o.stderr_fd = log->get();
    auto controller = spawn(o);
    EXPECT_TRUE(controller.ok()) << controller.error().message();
    if (!controller.ok()) return false;
    bool seen = false;
    int64_t start = monotonic_ms();
    int64_t deadline = start + 120 * 1000;
    while (monotonic_ms() < deadline) {
      if (delay_ms >= 0 ? monotonic_ms() - start >= delay_ms : ready()) {
        seen = true;
        break;
      }
      auto exited = controller->wait_for(0);
      if (exited.ok() && exited->has_value()) break;  // it finished first: the moment was missed
      ::usleep(500);
    }
    (void)controller->signal(SIGKILL);
    (void)controller->wait();
    EXPECT_TRUE(seen) << "the kill point never came; the controller said: "
                      << read_text(dir_ / (id + ".log"));
    return seen;
  }

  // `sealrun sweep`, which must end clean and say so.
  Captured sweep() {
    auto s = sealrun({"sweep", "--state-dir", state_});
    EXPECT_EQ(s.status.code, 0) << s.out << s.err;
    EXPECT_NE(s.out.find("sweep: nothing left behind"), std::string::npos) << s.out << s.err;
    return s;
  }

  // Everything of the run still there, each described; empty when nothing is.
  std::vector<std::string> leftovers(const std::string& id, const std::string& marker) {
    std::vector<std::string> left;
    for (const char* sub : {"owned", "tmp", "exports"}) {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(state_ + "/" + sub, ec))
        left.push_back("directory " + e.path().string());
    }
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(state_ + "/grants", ec))
      if (e.path().filename() != ".lock") left.push_back("record " + e.path().string());
    // Processes: the run's (its paths in their command line, environment or working directory —
    // podman's pause process carries the storage's XDG_RUNTIME_DIR) or the job's (its marker).
    for (const auto& e : fs::directory_iterator("/proc", ec)) {
      std::string pid = e.path().filename();
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      if (pid == std::to_string(::getpid())) continue;
      std::string stat = slurp(e.path() / "stat");
      if (stat.empty() || stat.find(") Z ") != std::string::npos) continue;
      std::string cmd = slurp(e.path() / "cmdline"), env = slurp(e.path() / "environ");
      std::string cwd = fs::read_symlink(e.path() / "cwd", ec).string();
      if (cmd.find("gtest") != std::string::npos) continue;
      for (char& c : cmd)
        if (c == '\0') c = ' ';
      if (cmd.find(dir_.str()) != std::string::npos || env.find(dir_.str()) != std::string::npos ||
          cwd.rfind(dir_.str(), 0) == 0 || cmd.find(marker) != std::string::npos)
        left.push_back("process " + pid + ": " + cmd);
    }
    // Resource groups named after the run, below our own groups.
    for (const char* controller : {"memory", "pids", "freezer"}) {
      std::string own;
      std::istringstream lines(slurp("/proc/self/cgroup"));
      for (std::string line; std::getline(lines, line);) {
        size_t a = line.find(':'), b = line.find(':', a + 1);
        std::string ctls = line.substr(a + 1, b - a - 1);
        if (("," + ctls + ",").find(std::string(",") + controller + ",") != std::string::npos)
          own = line.substr(b + 1);
      }
      std::string base = std::string("/sys/fs/cgroup/") + controller + own;
      for (const auto& g : fs::directory_iterator(base, ec))
        if (g.path().filename().string().rfind("sealrun-" + id + ".", 0) == 0)
          left.push_back("group " + g.path().string());
    }
    // Short links pointing into this test's directory.
    for (const auto& l : fs::directory_iterator(default_short_link_dir(), ec))
      if (fs::read_symlink(l.path(), ec).string().rfind(dir_.str(), 0) == 0)
        left.push_back("link " + l.path().string());
    return left;
  }

  void expect_swept(const std::string& id, const std::string& marker,
                    const std::vector<std::string>& must_say) {
    auto s = sweep();
    if (std::getenv("SEALRUN_TEST_VERBOSE") != nullptr) std::cerr << "[" << id << "]\n" << s.out;
    for (const auto& what : must_say)
      EXPECT_NE(s.out.find(what), std::string::npos) << "sweep did not say '" << what << "':\n"
                                                     << s.out;
    auto left = leftovers(id, marker);
    std::string all;
    for (const auto& l : left) all += "  " + l + "\n";
    EXPECT_TRUE(left.empty()) << "left behind after sweep:\n" << all << "sweep said:\n" << s.out;
    // A second sweep finds nothing more to do.
    // A second sweep finds nothing more of this run (other runs on the host are not ours to judge).
    auto again = sweep();
    EXPECT_EQ(again.out.find("[" + id + "]"), std::string::npos) << again.out;
    for (const char* did : {"removed", "killed"})
      EXPECT_EQ(again.out.find(dir_.str() + "/state/", 0) != std::string::npos &&
                    again.out.find(did) != std::string::npos,
                false)
          << again.out;
  }

  // Under owned/: as the controller sees it, in its own mount namespace (live()).
  bool exists(const std::string& rel) const {
    std::error_code ec;
    return fs::exists(fs::symlink_status(live(state_, state_ + "/" + rel), ec));
  }
  std::string temp_dir() const { return first_entry(state_ + "/tmp"); }
  std::string probe_dir() const {
    std::string t = temp_dir();
    return t.empty() ? "" : first_entry(t, "podman-probe-");
  }
};

// --- bubblewrap ---------------------------------------------------------------------------------

struct Point {
  const char* name;
  std::function<bool(const SigkillSweep&, const std::string& id)> ready;
  int64_t delay_ms = -1;
  std::vector<std::string> sweep_says;
};

TEST_F(SigkillSweep, BwrapAtEveryEarlyMoment) {
  const std::vector<Point> points = {
      {"10ms", nullptr, 10, {}},
      {"temporaries",
       [](const SigkillSweep& t, const std::string&) { return !t.temp_dir().empty(); },
       -1,
       {"temporaries"}},
      {"record",
       [](const SigkillSweep& t, const std::string& id) {
         return t.exists("grants/" + id + ".json");
       },
       -1,
       {"record"}},
      {"owned",
       [](const SigkillSweep& t, const std::string& id) { return t.exists("owned/" + id); },
       -1,
       {"owned root"}},
      {"scratch",
       [](const SigkillSweep& t, const std::string& id) {
         return t.exists("owned/" + id + "/scratch");
       },
       -1,
       {"owned root"}},
      {"250ms", nullptr, 250, {}},
  };
  for (const auto& p : points) {
    SCOPED_TRACE(p.name);
    std::string id = std::string("bw-") + p.name;
    std::string marker = "marker-" + id;
    auto a = freeze("touch /out/started; sleep 120 # " + marker, {}, id + ".json");
    bool killed = kill_when(
        a, id, {"--mechanism", "bwrap"}, [&] { return p.ready ? p.ready(*this, id) : false; },
        p.delay_ms);
    if (!killed) continue;
    expect_swept(id, marker, p.sweep_says);
  }
}

// --- rootless podman ----------------------------------------------------------------------------

TEST_F(SigkillSweep, PodmanDuringItsProbeAndItsStart) {
  auto built = busybox_fixture_dir();
  ASSERT_TRUE(built.ok()) << built.error().message();
  const std::string fixtures = *built;
  auto link_into_test = [](const SigkillSweep& t) {
    std::error_code ec;
    for (const auto& l : fs::directory_iterator(default_short_link_dir(), ec))
      if (fs::read_symlink(l.path(), ec).string().rfind(t.dir_.str(), 0) == 0) return true;
    return false;
  };
  const std::vector<Point> points = {
      {"probe-dir",
       [](const SigkillSweep& t, const std::string&) { return !t.probe_dir().empty(); },
       -1,
       {"temporaries"}},
      {"probe-link",
       [&](const SigkillSweep& t, const std::string&) { return link_into_test(t); },
       -1,
       {"podman probe storage"}},
      {"probe-pause",
       [](const SigkillSweep& t, const std::string&) {
         std::string p = t.probe_dir();
         return !p.empty() && fs::exists(p + "/owned/podman/tmp/pause.pid");
       },
       -1,
       {"killed podman pause process"}},
      {"run-storage",
       [](const SigkillSweep& t, const std::string& id) {
         return t.exists("owned/" + id + "/podman/xdg");
       },
       -1,
       {"owned root"}},
      {"run-pause",
       [](const SigkillSweep& t, const std::string& id) {
         return t.exists("owned/" + id + "/podman/tmp/pause.pid");
       },
       -1,
       {"killed podman pause process"}},
      {"container",
       [](const SigkillSweep& t, const std::string& id) {
         return t.exists("owned/" + id + "/podman/container.id");
         // The storage is out of sweep's sight once the controller's mount namespace is gone (its
         // podman processes live in their pause process's): they are killed by their
         // XDG_RUNTIME_DIR, and the container goes with its storage's file system.
       },
       -1,
       {"killed podman"}},
  };
  for (const auto& p : points) {
    SCOPED_TRACE(p.name);
    std::string id = std::string("pm-") + p.name;
    std::string marker = "marker-" + id;
    auto c0 = sealrun({"admit", "freeze", "--out", dir_ / (id + ".json"), "--source", src_,
                       "--toolchain", toolchain_, "--toolchain-mount", "/opt/toolchain", "--image",
                       fixtures + "/busybox.oci.tar", "--", "/bin/sh", "-c",
                       "touch /out/started; sleep 120 # " + marker});
    ASSERT_EQ(c0.status.code, 0) << c0.err;
    Frozen a{dir_ / (id + ".json"), c0.out.substr(0, 64)};
    bool killed = kill_when(a, id, {"--mechanism", "podman"}, [&] { return p.ready(*this, id); });
    if (!killed) continue;
    expect_swept(id, marker, p.sweep_says);
  }
}

}  // namespace
}  // namespace sealrun::testing
