// SPDX-License-Identifier: Apache-2.0
// Integration test of `sealrun sweep` on this host's real cgroup v1 hierarchies: a "controller"
// (a forked child of the test) creates a resource group, records its grant, starts a job in the
// group that survives it, and also leaves an unrecorded group with a process in it; then it is
// SIGKILLed. `sealrun sweep` must stop and remove both groups, leave no job process, remove the
// record, report each action and exit 0 — and never touch the run of a live controller.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "containment/grant_journal.h"
#include "containment/resgroup/cgroupfs_io.h"
#include "containment/resgroup/resource_group.h"
#include "core/proc.h"
#include "core/process.h"
#include "core/syscall.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

namespace fs = std::filesystem;
using resgroup::Backend;
using resgroup::GroupLimits;

constexpr GroupLimits kLimits{256ULL << 20, 256ULL << 20, 0, 64};

struct Spawned {
  pid_t controller = -1;
  pid_t job = -1;
  pid_t stray_job = -1;
  std::vector<std::string> locators;
  std::vector<std::string> stray_locators;
};

void send_line(int fd, const std::string& s) {
  std::string line = s + "\n";
  (void)!::write(fd, line.data(), line.size());
}

// The child: everything a controller does before the job runs, then it waits to be killed.
[[noreturn]] void fake_controller(const std::string& state_dir, const std::string& id, int out) {
  auto sleeper = find_program("sleep");
  auto g = resgroup::create_group(id, kLimits, Backend::kCgroupV1);
  auto stray = resgroup::create_group(id + "-unrecorded", kLimits, Backend::kCgroupV1);
  if (!sleeper || !g || !stray) _exit(10);
  SpawnOptions o;
  o.argv = {*sleeper, "1000"};
  o.new_session = true;  // like a daemonising job: nothing ties it to its controller
  o.join_cgroup_fds = (*g)->join_fds();
  auto job = spawn(o);
  o.join_cgroup_fds = (*stray)->join_fds();
  auto stray_job = spawn(o);
  if (!job || !stray_job) _exit(11);
  auto journal = GrantJournal::open(state_dir);
  if (!journal) _exit(12);
  GrantRecord r;
  r.id = id;
  r.owner_uid = ::geteuid();
  r.controller_pid = ::getpid();
  r.controller_start = *own_process_start();
  r.mechanism = "bwrap";
  r.job_pid = job->pid();
  r.job_start = *process_starttime(job->pid());
  r.group_backend = "cgroup-v1";
  r.group_locators = (*g)->locators();
  r.created_at = utc_timestamp_now();
  if (!journal->record(r).ok()) _exit(13);
  send_line(out, std::to_string(job->pid()));
  send_line(out, std::to_string(stray_job->pid()));
  for (const auto& l : (*g)->locators()) send_line(out, "G " + l);
  for (const auto& l : (*stray)->locators()) send_line(out, "S " + l);
  send_line(out, "ready");
  for (;;) ::pause();
}

Spawned start_and_kill_controller(const std::string& state_dir, const std::string& id) {
  Spawned s;
  auto p = make_pipe();
  EXPECT_TRUE(p.ok());
  pid_t pid = ::fork();
  if (pid == 0) {
    p->read_end.reset();
    fake_controller(state_dir, id, p->write_end.get());
  }
  s.controller = pid;
  p->write_end.reset();
  std::string text;
  char buf[4096];
  while (text.find("ready\n") == std::string::npos) {
    ssize_t n = ::read(p->read_end.get(), buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  std::istringstream in(text);
  std::string line;
  int i = 0;
  while (std::getline(in, line)) {
    if (i == 0) s.job = std::stoi(line);
    if (i == 1) s.stray_job = std::stoi(line);
    if (line.rfind("G ", 0) == 0) s.locators.push_back(line.substr(2));
    if (line.rfind("S ", 0) == 0) s.stray_locators.push_back(line.substr(2));
    ++i;
  }
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  return s;
}

Result<Captured> run_sweep(const std::string& state_dir) {
  SpawnOptions o;
  o.argv = {std::string(SEALRUN_BINARY_DIR) + "/sealrun",
            "sweep",
            "--state-dir",
            state_dir,
            "--json",
            "--grace-ms",
            "200"};
  return run_capture(o, 120000);
}

bool exits_within(UniqueFd& pidfd, int ms) {
  struct pollfd p {
    pidfd.get(), POLLIN, 0
  };
  return ::poll(&p, 1, ms) == 1;
}

TEST(SweepReal, RemovesWhatAKilledControllerLeft) {
  testing::TempDir tmp;
  std::string state = tmp / "state";
  std::string id = fmt::format("sweep-{}", ::getpid());
  Spawned s = start_and_kill_controller(state, id);
  ASSERT_GT(s.job, 0);
  ASSERT_EQ(s.locators.size(), 3u);
  ASSERT_EQ(s.stray_locators.size(), 3u);
  UniqueFd job(pidfd_open_raw(s.job, 0)), stray_job(pidfd_open_raw(s.stray_job, 0));
  ASSERT_TRUE(job.valid() && stray_job.valid()) << "the jobs must outlive their controller";
  for (const auto& l : s.locators) ASSERT_TRUE(fs::exists(l)) << l;
  ASSERT_TRUE(fs::exists(state + "/grants/" + id + ".json"));

  auto c = run_sweep(state);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->status.code, 0) << c->out << c->err;
  auto doc = nlohmann::json::parse(c->out);
  EXPECT_EQ(doc["left"], 0) << c->out;
  EXPECT_EQ(doc["records_removed"], 1) << c->out;
  int removed_groups = 0, stray_groups = 0;
  for (const auto& a : doc["actions"]) {
    std::string what = a["what"], outcome = a["outcome"];
    if (what.find("group") != std::string::npos && outcome.find("removed") != std::string::npos)
      (what.find("stray") != std::string::npos ? stray_groups : removed_groups)++;
  }
  EXPECT_EQ(removed_groups, 3) << c->out;
  EXPECT_GE(stray_groups, 3) << c->out;

  EXPECT_TRUE(exits_within(job, 5000)) << "the recorded job survived the sweep";
  EXPECT_TRUE(exits_within(stray_job, 5000)) << "the unrecorded group's process survived";
  for (const auto& l : s.locators) EXPECT_FALSE(fs::exists(l)) << l;
  for (const auto& l : s.stray_locators) EXPECT_FALSE(fs::exists(l)) << l;
  EXPECT_FALSE(fs::exists(state + "/grants/" + id + ".json"));

  // A second sweep finds nothing of ours.
  auto again = run_sweep(state);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->status.code, 0) << again->out;
}

TEST(SweepReal, NeverTouchesALiveControllersRun) {
  testing::TempDir tmp;
  std::string state = tmp / "state";
  std::string id = fmt::format("live-{}", ::getpid());
  auto g = resgroup::create_group(id, kLimits, Backend::kCgroupV1);
  ASSERT_TRUE(g.ok()) << g.error().message();
  auto sleeper = find_program("sleep");
  SpawnOptions o;
  o.argv = {*sleeper, "1000"};
  o.join_cgroup_fds = (*g)->join_fds();
  auto job = spawn(o);
  ASSERT_TRUE(job.ok());
  auto journal = GrantJournal::open(state);
  ASSERT_TRUE(journal.ok());
  GrantRecord r;
  r.id = id;
  r.controller_pid = ::getpid();  // we are alive
  r.controller_start = *own_process_start();
  r.job_pid = job->pid();
  r.group_backend = "cgroup-v1";
  r.group_locators = (*g)->locators();
  ASSERT_TRUE(journal->record(r).ok());

  auto c = run_sweep(state);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->status.code, 0) << c->out << c->err;
  EXPECT_NE(c->out.find("is alive: not touched"), std::string::npos) << c->out;
  EXPECT_TRUE(job->running());
  EXPECT_FALSE(job->wait_for(0)->has_value()) << "the live run's job was killed";
  for (const auto& l : (*g)->locators()) EXPECT_TRUE(fs::exists(l)) << l;
  EXPECT_TRUE(fs::exists(state + "/grants/" + id + ".json"));

  auto stop = (*g)->stop(100);
  ASSERT_TRUE(stop.ok() && stop->confirmed);
  (void)job->wait();
  ASSERT_TRUE((*g)->remove().ok());
}

// A live `sleep` (not the job of any run) and a journal in `state` whose record of run `id`,
// under a dead controller, names it as the job with `job_start`, or its real start time when that
// is empty, and `boot_id`. Sweep must leave it alone.
Child record_sleeper_as_job(const std::string& state, const std::string& id,
                            const std::string& job_start, const std::string& boot_id) {
  auto sleeper = find_program("sleep");
  EXPECT_TRUE(sleeper.ok());
  SpawnOptions o;
  o.argv = {*sleeper, "1000"};
  auto other = spawn(o);
  EXPECT_TRUE(other.ok()) << other.error().message();
  auto journal = GrantJournal::open(state);
  EXPECT_TRUE(journal.ok());
  GrantRecord r;
  r.id = id;
  r.controller_pid = 999999;  // not running
  r.controller_start = "0";
  r.job_pid = other->pid();
  r.job_start = job_start.empty() ? *process_starttime(other->pid()) : job_start;
  r.boot_id = boot_id;
  EXPECT_TRUE(journal->record(r).ok());
  return std::move(*other);
}

TEST(SweepReal, AJobPidWithAnotherStarttimeIsARecycledPidAndNotTouched) {
  // The record's controller is dead and the pid is alive and started after it: only the recorded
  // starttime tells that this process is not the job.
  testing::TempDir tmp;
  std::string state = tmp / "state";
  // The recorded job started long before this process.
  Child other = record_sleeper_as_job(state, "recycled", "1", "");
  auto c = run_sweep(state);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->out.find("started at another time than the job"), std::string::npos) << c->out;
  EXPECT_FALSE(other.wait_for(200)->has_value()) << "sweep killed a process that was not the job";
  other.kill_and_reap();
}

TEST(SweepReal, AJobOfAnotherBootIsNotLookedUpEvenWithTheSamePidAndStarttime) {
  // Start times count from boot: after a reboot, the recorded pid and start time may name a new
  // process (here: exactly this one's). The record's boot id tells sweep that its job is gone.
  testing::TempDir tmp;
  std::string state = tmp / "state";
  Child other =
      record_sleeper_as_job(state, "rebooted", "", "00000000-0000-0000-0000-000000000000");
  auto c = run_sweep(state);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->out.find("gone with the reboot"), std::string::npos) << c->out;
  EXPECT_FALSE(other.wait_for(200)->has_value()) << "sweep killed a process of this boot";
  EXPECT_FALSE(fs::exists(state + "/grants/rebooted.json")) << c->out;
  other.kill_and_reap();
}

TEST(SweepReal, ATamperedRecordIsRefusedAndKept) {
  testing::TempDir tmp;
  std::string state = tmp / "state";
  auto journal = GrantJournal::open(state);
  ASSERT_TRUE(journal.ok());
  GrantRecord r;
  r.id = "tampered";
  r.controller_pid = 999999;  // not running
  r.controller_start = "1";
  r.group_backend = "cgroup-v1";
  r.group_locators = {"/sys/fs/cgroup/memory/process_api"};
  ASSERT_TRUE(journal->record(r).ok());
  auto c = run_sweep(state);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->status.code, 7) << c->out;
  EXPECT_NE(c->out.find("refused"), std::string::npos) << c->out;
  EXPECT_TRUE(fs::exists("/sys/fs/cgroup/memory/process_api"));
  EXPECT_TRUE(fs::exists(state + "/grants/tampered.json"));
}

}  // namespace
}  // namespace sealrun
