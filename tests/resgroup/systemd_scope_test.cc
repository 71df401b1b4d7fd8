// Integration tests of the systemd back end against a real systemd 252 manager booted in throwaway
// namespaces (tests/support/systemd_manager.h, docs/testbed.md). The job runs through
// systemd_job_helper inside the manager's pid namespace; every claim the back end makes is also
// checked from outside (systemctl in the manager's root, the harness's host cgroup directories).
#include "containment/resgroup/systemd_scope.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/support/systemd_manager.h"
#include "tests/support/temp_dir.h"

namespace sealrun::resgroup {
namespace {

using nlohmann::json;
using testing::SystemdManager;

constexpr uint64_t kMiB = 1024 * 1024;

class SystemdScopeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "booting a systemd manager needs root (docs/testbed.md)";
    auto root = testing::ensure_systemd_root(SEALRUN_SOURCE_DIR, SEALRUN_BINARY_DIR "/fixtures");
    ASSERT_TRUE(root.ok()) << root.error().message();
    auto m = SystemdManager::boot(*root);
    ASSERT_TRUE(m.ok()) << m.error().message();
    manager_ = std::move(m).value();
  }

  // Runs the helper's `run` mode inside the manager; returns its JSON report.
  json run_job(const std::string& run_id, uint64_t memory_max, uint64_t pids_max,
               const std::vector<std::string>& job, int64_t job_wait_ms = 120000) {
    std::vector<std::string> argv{SYSTEMD_JOB_HELPER, "run"};
    for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
             {"--bus", manager_->bus_address()},
             {"--cgroupfs", manager_->cgroupfs_root()},
             {"--run-id", run_id},
             {"--memory-max", std::to_string(memory_max)},
             {"--memory-high", std::to_string(memory_max / 2)},
             {"--swap-max", "0"},
             {"--pids-max", std::to_string(pids_max)},
             {"--grace-ms", "2000"},
             {"--job-wait-ms", std::to_string(job_wait_ms)}}) {
      argv.push_back(flag);
      argv.push_back(value);
    }
    argv.push_back("--");
    argv.insert(argv.end(), job.begin(), job.end());
    auto done = manager_->run_inside(argv, 240000);
    EXPECT_TRUE(done.ok()) << done.error().message();
    if (!done.ok()) return json();
    EXPECT_TRUE(done->status.success()) << done->status.describe() << "\n"
                                        << done->out << "\n"
                                        << done->err;
    json report = json::parse(done->out, nullptr, false);
    EXPECT_FALSE(report.is_discarded()) << done->out << "\n" << done->err;
    // Kept in the test's XML output (--gtest_output=xml) for anyone who wants the figures.
    RecordProperty("report_" + run_id, done->out);
    return report;
  }

  // The unit is gone as the manager sees it, and its cgroup is gone as the host sees it.
  void expect_scope_gone(const std::string& unit) {
    auto shown = manager_->systemctl({"show", "-p", "LoadState", "-p", "ActiveState", unit});
    ASSERT_TRUE(shown.ok()) << shown.error().message();
    EXPECT_NE(shown->out.find("LoadState=not-found"), std::string::npos) << shown->out;
    EXPECT_NE(shown->out.find("ActiveState=inactive"), std::string::npos) << shown->out;
    for (const char* h : {"memory", "systemd", "pids"}) {
      std::string dir = manager_->host_group(h) + "/system.slice/" + unit;
      EXPECT_FALSE(std::filesystem::exists(dir)) << dir << " still exists";
    }
  }

  std::unique_ptr<SystemdManager> manager_;
};

TEST_F(SystemdScopeTest, MemoryMaxOomKillsAJobAndTheScopeIsGoneAfterStop) {
  json r = run_job("oom1", 64 * kMiB, 64, {SYSTEMD_JOB_HELPER, "allocate", "150"});
  ASSERT_TRUE(r.is_object());
  SCOPED_TRACE(r.dump(2));

  EXPECT_TRUE(r["probe"]["available"].get<bool>());
  EXPECT_TRUE(r["probe"]["memory_max"].get<bool>());
  EXPECT_FALSE(r["probe"]["memory_high"].get<bool>());  // cgroup v1 host
  EXPECT_FALSE(r["probe"]["swap_max"].get<bool>());
  EXPECT_EQ(r["locators"], json::array({"sealrun-oom1.scope"}));
  EXPECT_EQ(r["join_fds"], 0);
  ASSERT_EQ(r["adopt"], "ok");

  // Read back before the job ran: MemoryMax is in memory.limit_in_bytes; MemoryHigh and
  // MemorySwapMax were accepted by the manager but are not applied on v1, and say so.
  const json& rb = r["read_back"];
  EXPECT_TRUE(rb["memory_max_bytes"]["applied"].get<bool>());
  EXPECT_EQ(rb["memory_max_bytes"]["observed"], 64 * kMiB);
  EXPECT_FALSE(rb["memory_high_bytes"]["applied"].get<bool>());
  EXPECT_NE(rb["memory_high_bytes"]["note"].get<std::string>().find("v1"), std::string::npos);
  EXPECT_FALSE(rb["swap_max_bytes"]["applied"].get<bool>());
  EXPECT_NE(rb["swap_max_bytes"]["note"].get<std::string>().find("v1"), std::string::npos);
  EXPECT_TRUE(rb["pids_max"]["applied"].get<bool>());

  // The 150 MiB allocation was killed by the kernel's OOM killer inside the 64 MiB scope.
  EXPECT_EQ(r["job"]["signal"], SIGKILL);
  EXPECT_GE(r["memory"]["events_oom_kill"].get<uint64_t>(), 1u);
  ASSERT_TRUE(r["memory"]["peak"].is_number());
  EXPECT_GE(r["memory"]["peak"].get<uint64_t>(), 60 * kMiB);
  EXPECT_LE(r["memory"]["peak"].get<uint64_t>(), 64 * kMiB);
  EXPECT_GE(r["memory_after_stop_oom_kill"].get<uint64_t>(), 1u);

  EXPECT_TRUE(r["stop"]["confirmed"].get<bool>());
  EXPECT_EQ(r["remove"], "ok");
  expect_scope_gone("sealrun-oom1.scope");
}

TEST_F(SystemdScopeTest, TasksMaxStopsAForkLoopAndStopKillsTheLeftovers) {
  constexpr int kPidsMax = 16;
  json r = run_job("forks1", 256 * kMiB, kPidsMax, {SYSTEMD_JOB_HELPER, "forkloop"});
  ASSERT_TRUE(r.is_object());
  SCOPED_TRACE(r.dump(2));
  ASSERT_EQ(r["adopt"], "ok");
  EXPECT_TRUE(r["read_back"]["pids_max"]["applied"].get<bool>());
  EXPECT_EQ(r["read_back"]["pids_max"]["observed"], kPidsMax + 1);  // + the keeper
  EXPECT_EQ(r["job"]["exit"], 0);

  // The job itself is one task, so exactly pids_max - 1 forks succeed, then EAGAIN.
  json forks = json::parse(r["job_stdout"].get<std::string>(), nullptr, false);
  ASSERT_FALSE(forks.is_discarded()) << r["job_stdout"];
  EXPECT_EQ(forks["forked"], kPidsMax - 1);
  EXPECT_EQ(forks["errno"], EAGAIN);

  // The job exited but its children were still in the scope; stop() found and killed them.
  EXPECT_EQ(r["stop"]["processes_signalled"], kPidsMax - 1);
  EXPECT_TRUE(r["stop"]["confirmed"].get<bool>());
  EXPECT_EQ(r["remove"], "ok");
  expect_scope_gone("sealrun-forks1.scope");
}

TEST_F(SystemdScopeTest, StopKillsAJobThatIgnoresTermAndItsSetsidOrphan) {
  json r = run_job("stubborn1", 256 * kMiB, 64, {SYSTEMD_JOB_HELPER, "stubborn"}, 1000);
  ASSERT_TRUE(r.is_object());
  SCOPED_TRACE(r.dump(2));
  ASSERT_EQ(r["adopt"], "ok");
  EXPECT_EQ(r["job"]["running"], true);  // still running when the stop began
  // The job and its orphan (in its own session, reparented away from the job) were both in the
  // scope; both ignored TERM through the 2 s grace, and the KILL ended them.
  EXPECT_EQ(r["stop"]["processes_signalled"], 2);
  bool outlived = false;
  for (const auto& a : r["stop"]["actions"]) {
    outlived |= a.get<std::string>().find("outlived the 2000 ms grace") != std::string::npos;
  }
  EXPECT_TRUE(outlived);
  EXPECT_TRUE(r["stop"]["confirmed"].get<bool>());
  EXPECT_EQ(r["job_after_stop"]["signal"], SIGKILL);
  EXPECT_EQ(r["remove"], "ok");
  expect_scope_gone("sealrun-stubborn1.scope");
}

TEST_F(SystemdScopeTest, ALeftoverScopeBlocksItsRunIdUntilSweptAway) {
  // From the test process itself (outside the manager's namespaces) the bus socket is reachable
  // through the manager's root directory.
  std::string through_root = "/proc/" + std::to_string(manager_->pid()) + "/root";
  SystemdTarget target{"unix:path=" + through_root + "/run/dbus/system_bus_socket",
                       through_root + "/sys/fs/cgroup"};
  BackendProbe probe = probe_systemd(target);
  EXPECT_TRUE(probe.available) << probe.why;
  EXPECT_NE(probe.why.find("systemd 252"), std::string::npos) << probe.why;

  // A scope with the name of run "taken" already exists (made by hand with systemd-run).
  auto started = manager_->run_inside(
      {"/bin/sh", "-c",
       "chroot " + manager_->root() +
           " systemd-run --scope --unit sealrun-taken.scope /bin/sleep 300 >/dev/null 2>&1 &"},
      30000);
  ASSERT_TRUE(started.ok()) << started.error().message();
  std::string state;
  for (int i = 0; i < 250 && state != "active"; ++i) {
    auto s = manager_->systemctl({"is-active", "sealrun-taken.scope"});
    state = s.ok() ? s->out.substr(0, s->out.find('\n')) : "";
    if (state != "active") usleep(20000);
  }
  ASSERT_EQ(state, "active");
  auto taken = create_systemd_group("taken", GroupLimits{}, target);
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.error().message().find("already exists"), std::string::npos)
      << taken.error().message();
  auto free_id = create_systemd_group("free", GroupLimits{}, target);
  EXPECT_TRUE(free_id.ok()) << free_id.error().message();

  // Sweep's view: the leftover is listed, stopped with its process, and unloaded.
  auto listed = list_sealrun_scopes(target);
  ASSERT_TRUE(listed.ok()) << listed.error().message();
  EXPECT_EQ(*listed, std::vector<std::string>{"sealrun-taken.scope"});
  auto refused = stop_leftover_scope("dbus.service", 1000, target);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("dbus.service"), std::string::npos);
  // Looking for its cgroup in the wrong place is an error, never a confirmed stop.
  SystemdTarget blind = target;
  blind.cgroupfs_root = manager_->cgroupfs_root();  // only valid inside the manager's mount ns
  auto wrong = stop_leftover_scope("sealrun-taken.scope", 1000, blind);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message().find("not visible"), std::string::npos);
  auto swept = stop_leftover_scope("sealrun-taken.scope", 1000, target);
  ASSERT_TRUE(swept.ok()) << swept.error().message();
  EXPECT_TRUE(swept->confirmed);
  EXPECT_EQ(swept->processes_signalled, 1u);  // the sleep
  expect_scope_gone("sealrun-taken.scope");
  auto again = list_sealrun_scopes(target);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
  // dbus itself was left alone.
  auto dbus = manager_->systemctl({"is-active", "dbus.service"});
  ASSERT_TRUE(dbus.ok());
  EXPECT_EQ(dbus->out, "active\n");
}

TEST(SystemdProbe, NoManagerOnThisBusIsReportedUnavailable) {
  testing::TempDir dir;
  SystemdTarget target{"unix:path=" + dir / "no-such-socket", dir.str()};
  BackendProbe probe = probe_systemd(target);
  EXPECT_EQ(probe.backend, Backend::kSystemd);
  EXPECT_FALSE(probe.available);
  EXPECT_NE(probe.why.find("no-such-socket"), std::string::npos) << probe.why;
  auto group = create_systemd_group("r1", GroupLimits{}, target);
  EXPECT_FALSE(group.ok());
  auto bad = create_systemd_group("bad/id", GroupLimits{}, target);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("bad/id"), std::string::npos);
}

}  // namespace
}  // namespace sealrun::resgroup
