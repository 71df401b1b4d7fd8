// Stopping admitted runs on the real test cluster: `scancel` mid-run (Slurm's SIGTERM reaches
// sealrun, which stops the job, confirms it and writes the receipt well within KillWait), and a
// node restart mid-run (slurmd, the step daemon and the sealrun controller SIGKILLed, slurmd
// started again), after which `sealrun sweep` on the node finds and removes what was left.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "tests/slurm/cluster_support.h"

namespace sealrun::testing::slurm {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

class StopTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(wait_until(node_ready, 60000, 100)) << "node not ready"; }
};

// True once the run's own pids group holds a process: its job is running.
bool job_running(const std::string& run_id) {
  for (const auto& g : sealrun_groups(run_id))
    if (g.find("/pids/") != std::string::npos && !read_text(g + "/cgroup.procs").empty())
      return true;
  return false;
}

// The first process whose command line starts with `prefix` (NUL-separated words joined by ' ').
pid_t process_starting(const std::string& prefix) {
  for (pid_t pid : processes_with(prefix)) {
    std::string cmdline = read_text("/proc/" + std::to_string(pid) + "/cmdline");
    for (char& c : cmdline)
      if (c == '\0') c = ' ';
    if (cmdline.rfind(prefix, 0) == 0) return pid;
  }
  return -1;
}

TEST_F(StopTest, ScancelStopsTheRunAndTheReceiptIsWritten) {
  Workspace ws(ordinary_user());
  // A unique sleep length marks the job's processes.
  Frozen a = ws.freeze("long.json", "sleep 1801.25");
  std::string err;
  auto job = ws.sbatch(ws.run_line(a, "cancel"), &err);
  ASSERT_TRUE(job.has_value()) << err;
  ASSERT_TRUE(wait_until([] { return job_running("cancel"); }, 60000)) << "the job never ran";

  auto t0 = Clock::now();
  ASSERT_EQ(run_as(root_identity(), {"scancel", std::to_string(*job)}, "/").status.code, 0);
  ASSERT_TRUE(wait_until([&] { return fs::exists(ws.receipt_path("cancel")); }, 30000, 10));
  auto receipt_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  auto info = wait_job_finished(*job);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->state, "CANCELLED");
  // Well within KillWait (30 s): Slurm never had to SIGKILL sealrun.
  EXPECT_LT(receipt_ms, 10000);
  std::cout << "receipt written " << receipt_ms << " ms after scancel\n";

  auto r = ws.receipt("cancel");
  EXPECT_EQ(r["state"], "failed");
  EXPECT_TRUE(r["exit"] == 5 || r["exit"] == 7) << r["exit"];
  EXPECT_EQ(r["stop_confirmed"], true) << r.dump();
  EXPECT_NE(r["reason"].get<std::string>().find("SIGTERM"), std::string::npos) << r["reason"];
  std::string out = read_text(ws.dir() + "/slurm-" + std::to_string(*job) + ".out");
  EXPECT_EQ(out.substr(out.rfind('\n', out.size() - 2) + 1), ws.receipt_path("cancel") + "\n")
      << out;
  // Nothing left: no process of the job, no group of the run.
  EXPECT_TRUE(wait_until([] { return processes_with("1801.25").empty(); }, 5000));
  EXPECT_TRUE(sealrun_groups("cancel").empty());
  EXPECT_FALSE(fs::exists(ws.state() + "/grants/cancel.json"));
}

TEST_F(StopTest, AfterANodeRestartSweepRemovesWhatTheRunLeft) {
  Workspace ws(ordinary_user());
  Frozen a = ws.freeze("long.json", "sleep 1802.25");
  std::string err;
  auto job = ws.sbatch(ws.run_line(a, "restart"), &err);
  ASSERT_TRUE(job.has_value()) << err;
  ASSERT_TRUE(wait_until([] { return job_running("restart"); }, 60000)) << "the job never ran";
  // bwrap's init (the sandbox's pid 1, the job's parent) asks for its death signal only after it
  // has forked the job, just before it starts waiting for it: a crash in between would leave it
  // (bwrap's own window, not sealrun's). Wait until it waits.
  ASSERT_TRUE(wait_until(
      [] {
        for (pid_t job : processes_with("1802.25")) {
          const std::string proc = "/proc/" + std::to_string(job);
          if (read_text(proc + "/comm") != "sleep\n") continue;  // bwrap's lines name it too
          const std::string stat = read_text(proc + "/stat");
          const size_t close = stat.rfind(')');
          pid_t parent = 0;
          if (close == std::string::npos ||
              std::sscanf(stat.c_str() + close + 1, " %*c %d", &parent) != 1)
            continue;
          if (read_text("/proc/" + std::to_string(parent) + "/wchan") == "do_wait") return true;
        }
        return false;
      },
      10000))
      << "the sandbox's init never waited for the job";

  // The node "crashes": slurmd, the job's step daemon and the sealrun controller die at once.
  pid_t slurmd = std::stoi(read_text(cluster_dir() + "/run/slurmd.pid"));
  pid_t stepd = process_starting("slurmstepd: [" + std::to_string(*job) + ".batch]");
  pid_t controller = process_starting(sealrun_bin() + " run " + a.path);
  ASSERT_GT(stepd, 0);
  ASSERT_GT(controller, 0);
  for (pid_t p : {slurmd, stepd, controller}) ASSERT_EQ(::kill(p, SIGKILL), 0) << p;
  ASSERT_TRUE(wait_until(
      [&] {
        for (pid_t p : {slurmd, stepd, controller})
          if (::kill(p, 0) == 0) return false;
        return true;
      },
      10000));
  // bwrap dies with its parent (--die-with-parent): the job's processes go too.
  EXPECT_TRUE(wait_until([] { return processes_with("1802.25").empty(); }, 10000))
      << describe_processes(processes_with("1802.25"));
  // What the killed run leaves: its groups, its owned root and its grant record.
  EXPECT_FALSE(sealrun_groups("restart").empty());
  EXPECT_TRUE(fs::exists(ws.state() + "/grants/restart.json"));
  EXPECT_TRUE(fs::exists(ws.state() + "/owned/restart"));

  // The node comes back: the fixture starts only what is not running (slurmd).
  auto up =
      run_as(root_identity(),
             {"/bin/bash", std::string(SEALRUN_SOURCE_DIR) + "/tests/fixtures/slurm_cluster.sh",
              "start", cluster_dir()},
             "/", 120000);
  ASSERT_EQ(up.status.code, 0) << up.out << up.err;
  // slurmctld ends the lost job as a node failure once the node registers without it, but only
  // after its BatchStartTimeout and a ping have passed; the admin's scancel ends it now. Either
  // way it is not requeued (the gate made it non-requeueable): its --id would be refused anyway.
  (void)run_as(root_identity(), {"scancel", std::to_string(*job)}, "/");
  auto info = wait_job_finished(*job, 30000);
  ASSERT_TRUE(info.has_value());
  EXPECT_TRUE(info->state == "CANCELLED" || info->state == "NODE_FAIL") << info->state;

  // `sealrun sweep` on the node, as the run's user, with the run's state directory.
  auto s = run_as(ws.who(), {sealrun_bin(), "sweep", "--state-dir", ws.state()}, ws.dir());
  EXPECT_EQ(s.status.code, 0) << s.out << s.err;
  EXPECT_NE(s.out.find("[restart] cgroup-v1 group"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("owned root"), std::string::npos) << s.out;
  EXPECT_TRUE(sealrun_groups("restart").empty()) << s.out << s.err;
  EXPECT_FALSE(fs::exists(ws.state() + "/grants/restart.json"));
  EXPECT_FALSE(fs::exists(ws.state() + "/owned/restart"));
  // A second sweep finds nothing.
  auto again = run_as(ws.who(), {sealrun_bin(), "sweep", "--state-dir", ws.state()}, ws.dir());
  EXPECT_EQ(again.status.code, 0) << again.out << again.err;
  EXPECT_EQ(again.out.find("[restart]"), std::string::npos) << again.out;
}

}  // namespace
}  // namespace sealrun::testing::slurm
