// SPDX-License-Identifier: Apache-2.0
// The run pipeline driven with fake mechanisms and groups (PipelineDeps), on real admissions of a
// tiny source and toolchain: stages run in docs/contract.md's order, a failure at every point is
// followed by the cleanup of what was acquired, the most serious exit code wins, and the reason a
// person reads is the one the priority rule picks. A run that executed nothing keeps no id.
#include "controller/run/run_pipeline.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "admission/freeze.h"
#include "containment/grant.h"
#include "core/exit_codes.h"
#include "tests/support/temp_dir.h"

namespace sealrun::run {
namespace {

using testing::TempDir;
using testing::write_text;

// What the fakes may be told to do, and the log of what they were asked, in order.
struct Script {
  bool grant_memory = true;     // the fake group back end offers memory and pids
  bool probe_available = true;  // the mechanism's probe
  bool group_fails = false;     // make_group fails
  bool max_applied = true;      // read_back shows memory.max as applied
  bool spawn_fails = false;     // start() fails
  ExitStatus job_status{0, 0};  // how the job ends
  bool write_output = true;     // the job leaves out/result.txt
  uint64_t oom_kills = 0;       // memory_report()'s oom_kill count
  bool stop_confirmed = true;   // the group's stop
  bool cleanup_fails = false;   // the mechanism's cleanup
  std::vector<std::string> log;
};

class FakeJob : public ContainedJob {
 public:
  FakeJob(Script& s, std::string out_dir) : s_(s), out_dir_(std::move(out_dir)) {}
  pid_t pid() const override { return ::getpid(); }
  Result<JobExit> wait() override {
    s_.log.push_back("wait");
    if (s_.write_output) write_text(out_dir_ + "/result.txt", "built\n");
    return JobExit{s_.job_status, false};
  }
  Status stop(int64_t) override {
    s_.log.push_back("job.stop");
    return ok_status();
  }
  Result<std::vector<std::string>> cleanup() override {
    s_.log.push_back("job.cleanup");
    if (s_.cleanup_fails) return Error::make("the fake container would not go");
    return std::vector<std::string>{"fake: nothing left"};
  }

 private:
  Script& s_;
  std::string out_dir_;
};

class FakeMechanism : public Mechanism {
 public:
  explicit FakeMechanism(Script& s) : s_(s) {}
  MechanismKind kind() const override { return MechanismKind::kBwrap; }
  // Like the real mechanisms, the probe runs once; spawn's re-check reuses it.
  MechanismProbe probe() override {
    if (probed_) return *probed_;
    s_.log.push_back("probe");
    MechanismProbe p;
    p.name = "bwrap";
    p.available = s_.probe_available;
    if (!p.available) p.unavailable_reason = "fake: not installed";
    for (auto d : DimensionSet::all().list())
      p.dimensions.push_back({d, d != Dimension::kMemory && d != Dimension::kProcessCount, "fake"});
    probed_ = p;
    return p;
  }
  std::vector<SweepStep> sweep_leftovers(const LeftoverRun&) override { return {}; }

 protected:
  Result<std::unique_ptr<ContainedJob>> start(const Grant& grant, resgroup::ResourceGroup*,
                                              const JobIo&) override {
    s_.log.push_back("spawn");
    if (s_.spawn_fails) return Error::make("fake: exec failed");
    std::string out;
    for (const auto& m : grant.spec.mounts)
      if (m.target == "/out") out = m.source;
    return std::unique_ptr<ContainedJob>(std::make_unique<FakeJob>(s_, out));
  }

 private:
  Script& s_;
  std::optional<MechanismProbe> probed_;
};

class FakeGroup : public resgroup::ResourceGroup {
 public:
  explicit FakeGroup(Script& s) : s_(s) {}
  resgroup::Backend backend() const override { return resgroup::Backend::kCgroupV1; }
  std::vector<std::string> locators() const override { return {}; }
  std::vector<int> join_fds() const override { return {}; }
  Status adopt(pid_t) override { return ok_status(); }
  Result<std::vector<resgroup::LimitReadback>> read_back() override {
    s_.log.push_back("group.read_back");
    uint64_t max = 64ull << 20;
    return std::vector<resgroup::LimitReadback>{
        {"memory_max_bytes", max, s_.max_applied ? max : max * 2, s_.max_applied, ""}};
  }
  Result<resgroup::MemoryReport> memory_report() override {
    resgroup::MemoryReport m;
    m.peak_bytes = 1234;
    m.events_oom_kill = s_.oom_kills;
    return m;
  }
  Result<resgroup::StopReport> stop(int64_t) override {
    s_.log.push_back("group.stop");
    resgroup::StopReport r;
    r.confirmed = s_.stop_confirmed;
    r.actions = {s_.stop_confirmed ? "empty" : "2 processes would not die"};
    return r;
  }
  Status remove() override {
    s_.log.push_back("group.remove");
    return ok_status();
  }

 private:
  Script& s_;
};

class Pipeline : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_ / "src");
    std::filesystem::create_directories(dir_ / "tc/bin");
    write_text(dir_ / "src/build.sh", "echo hi\n");
    write_text(dir_ / "tc/bin/cc", "fake compiler\n");
    admission::FreezeRequest f;
    f.out = dir_ / "adm.json";
    f.source = dir_ / "src";
    f.toolchain = dir_ / "tc";
    f.toolchain_mount = "/opt/tc";  // the temp dir is under /tmp, which the job gets its own of
    f.sets = {"limits.memory_max_bytes=67108864", "limits.memory_high_bytes=60000000"};
    f.argv = {"/bin/sh", "build.sh"};
    auto frozen = admission::freeze_admission(f);
    ASSERT_TRUE(frozen.ok()) << frozen.error().message();
    sha_ = frozen->sha256;
  }

  RunOutcome run(const std::string& id, std::string sha = "") {
    PipelineDeps deps;
    deps.make_mechanism = [this](MechanismKind, const MechanismContext&) {
      return std::unique_ptr<Mechanism>(std::make_unique<FakeMechanism>(s_));
    };
    deps.probe_groups = [this] {
      resgroup::BackendProbe p;
      p.backend = resgroup::Backend::kCgroupV1;
      p.available = s_.grant_memory;
      p.memory_max = p.pids_max = s_.grant_memory;
      return std::vector<resgroup::BackendProbe>{p};
    };
    deps.make_group = [this](const std::string&, const resgroup::GroupLimits&,
                             const std::vector<resgroup::BackendProbe>&)
        -> Result<std::unique_ptr<resgroup::ResourceGroup>> {
      s_.log.push_back("group.create");
      if (s_.group_fails) return Error::make("fake: no cgroup for you");
      return std::unique_ptr<resgroup::ResourceGroup>(std::make_unique<FakeGroup>(s_));
    };
    RunRequest req;
    req.admission_path = dir_ / "adm.json";
    req.sha256 = sha.empty() ? sha_ : sha;
    req.id = id;
    req.state_dir = dir_ / "state";
    return run_pipeline(req, deps);
  }

  nlohmann::json receipt(const RunOutcome& o) {
    std::ifstream in(o.receipt_path);
    return nlohmann::json::parse(in);
  }
  bool exists(const std::string& rel) { return std::filesystem::exists(dir_ / rel); }

  TempDir dir_;
  std::string sha_;
  Script s_;
};

TEST_F(Pipeline, BuiltRunsEveryStageInOrderAndReleasesEverything) {
  auto o = run("ok");
  EXPECT_EQ(o.exit_code, kExitOk) << o.receipt.reason << o.message;
  EXPECT_EQ(o.receipt.state, "built");
  EXPECT_EQ(s_.log,
            (std::vector<std::string>{"probe", "group.create", "group.read_back", "spawn", "wait",
                                      "group.stop", "group.remove", "job.cleanup"}));
  EXPECT_EQ(o.receipt_path, dir_ / "state/results/ok/receipt.json");
  auto r = receipt(o);
  EXPECT_EQ(r["outputs"].size(), 1u);
  EXPECT_EQ(r["outputs"][0]["path"], "result.txt");
  EXPECT_TRUE(r["stop_confirmed"].get<bool>());
  EXPECT_FALSE(exists("state/owned/ok"));
  EXPECT_FALSE(exists("state/grants/ok.json")) << "the grant record is forgotten once all is gone";
  // The id was consumed by a run that executed: a second run with it is a usage error.
  s_.log.clear();
  auto again = run("ok");
  EXPECT_EQ(again.exit_code, kExitUsage);
  EXPECT_NE(again.receipt.reason.find("used before"), std::string::npos);
  EXPECT_TRUE(s_.log.empty()) << "refused before any stage touched anything";
}

TEST_F(Pipeline, AnAdmissionRefusalExecutesNothingAndKeepsNoId) {
  std::string wrong = sha_;
  wrong[0] = wrong[0] == 'a' ? 'b' : 'a';
  auto o = run("r1", wrong);
  EXPECT_EQ(o.exit_code, kExitAdmissionRefused);
  EXPECT_EQ(o.receipt.state, "not_run");
  EXPECT_TRUE(s_.log.empty());
  EXPECT_NE(o.receipt_path.find("/refusals/r1/"), std::string::npos) << o.receipt_path;
  EXPECT_FALSE(exists("state/results/r1"));
  EXPECT_FALSE(exists("state/owned/r1"));
  // The id is free: the right hash now runs, and the refusal's receipt is kept beside it.
  std::string refusal = o.receipt_path;
  auto ok = run("r1");
  EXPECT_EQ(ok.exit_code, kExitOk) << ok.receipt.reason;
  EXPECT_TRUE(std::filesystem::exists(refusal));
}

TEST_F(Pipeline, AChangedPinIsRefusedNamingIt) {
  write_text(dir_ / "src/build.sh", "echo changed\n");
  auto o = run("pin");
  EXPECT_EQ(o.exit_code, kExitAdmissionRefused);
  EXPECT_NE(o.receipt.reason.find("source"), std::string::npos) << o.receipt.reason;
  EXPECT_TRUE(s_.log.empty());
}

TEST_F(Pipeline, BadRequestsAreUsageErrors) {
  EXPECT_EQ(run("a/b").exit_code, kExitUsage);
  EXPECT_EQ(run("x", "xyz").exit_code, kExitUsage);
  EXPECT_TRUE(s_.log.empty());
}

TEST_F(Pipeline, NoGrantMeansNoSpawnAndAFreeId) {
  s_.grant_memory = false;  // memory and process_count are required by default
  auto o = run("g");
  EXPECT_EQ(o.exit_code, kExitContainmentUnavailable);
  EXPECT_NE(o.receipt.reason.find("memory"), std::string::npos) << o.receipt.reason;
  // The refusal says what to do about it (as root, only report-only mode is left).
  EXPECT_NE(o.receipt.reason.find("--mode report-only"), std::string::npos) << o.receipt.reason;
  if (::geteuid() != 0) {
    EXPECT_NE(o.receipt.reason.find("as root"), std::string::npos) << o.receipt.reason;
  }
  EXPECT_EQ(std::count(s_.log.begin(), s_.log.end(), "spawn"), 0);
  EXPECT_FALSE(exists("state/results/g"));
  EXPECT_FALSE(exists("state/owned/g"));
  EXPECT_FALSE(exists("state/grants/g.json"));
}

TEST_F(Pipeline, AGroupThatCannotBeMadeOrReadBackRefuses) {
  s_.group_fails = true;
  EXPECT_EQ(run("g1").exit_code, kExitContainmentUnavailable);
  s_.group_fails = false;
  s_.max_applied = false;
  s_.log.clear();
  auto o = run("g2");
  EXPECT_EQ(o.exit_code, kExitContainmentUnavailable);
  EXPECT_NE(o.receipt.reason.find("memory.max"), std::string::npos);
  // The group that was made is stopped and removed although the job never started.
  EXPECT_EQ(std::count(s_.log.begin(), s_.log.end(), "group.remove"), 1);
  EXPECT_EQ(std::count(s_.log.begin(), s_.log.end(), "spawn"), 0);
}

TEST_F(Pipeline, ASpawnFailureIsContainmentUnavailableAndCleansUp) {
  s_.spawn_fails = true;
  auto o = run("sp");
  EXPECT_EQ(o.exit_code, kExitContainmentUnavailable);
  EXPECT_EQ(o.receipt.state, "not_run");
  EXPECT_NE(o.receipt.reason.find("exec failed"), std::string::npos);
  EXPECT_EQ(std::count(s_.log.begin(), s_.log.end(), "group.remove"), 1);
  EXPECT_FALSE(exists("state/owned/sp"));
}

TEST_F(Pipeline, AFailedJobIsFiveWithItsExitAsTheReason) {
  s_.job_status = ExitStatus{2, 0};
  auto o = run("f");
  EXPECT_EQ(o.exit_code, kExitJobFailed);
  EXPECT_EQ(o.receipt.state, "failed");
  EXPECT_EQ(o.receipt.reason, "the job ended with exit 2");
}

TEST_F(Pipeline, AnOomKillIsTheReasonRatherThanTheSignal) {
  s_.job_status = ExitStatus{-1, 9};
  s_.oom_kills = 1;
  auto o = run("oom");
  EXPECT_EQ(o.exit_code, kExitJobFailed);
  EXPECT_NE(o.receipt.reason.find("out of memory"), std::string::npos) << o.receipt.reason;
}

TEST_F(Pipeline, AnOomKillInTheGroupFailsARunWhoseJobExitedZero) {
  s_.oom_kills = 2;  // a child was killed, the job (e.g. a careless build tool) still exited 0
  auto o = run("oom0");
  EXPECT_EQ(o.exit_code, kExitJobFailed);
  EXPECT_EQ(o.receipt.state, "failed");
  EXPECT_NE(o.receipt.reason.find("OOM-killed"), std::string::npos) << o.receipt.reason;
}

TEST_F(Pipeline, AnUnconfirmedStopIsSevenAndBeatsAFailedJob) {
  s_.job_status = ExitStatus{1, 0};
  s_.stop_confirmed = false;
  auto o = run("st");
  EXPECT_EQ(o.exit_code, kExitStopUnconfirmed);
  EXPECT_EQ(o.receipt.reason, "the job's stop could not be confirmed");
  EXPECT_FALSE(o.receipt.stop_confirmed);
  // Something may be left: the grant record stays for `sealrun sweep`, and so does the id.
  EXPECT_TRUE(exists("state/grants/st.json"));
  EXPECT_TRUE(exists("state/results/st/receipt.json"));
}

TEST_F(Pipeline, AFailedCleanupIsSeven) {
  s_.cleanup_fails = true;
  auto o = run("cl");
  EXPECT_EQ(o.exit_code, kExitStopUnconfirmed);
  EXPECT_NE(o.receipt.reason.find("cleanup failed"), std::string::npos) << o.receipt.reason;
  EXPECT_EQ(o.receipt.state, "failed");
}

}  // namespace
}  // namespace sealrun::run
