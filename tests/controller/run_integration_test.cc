// SPDX-License-Identifier: Apache-2.0
// `sealrun run` end to end with real bwrap and real cgroup v1 limits: the verdicts of
// docs/contract.md and the docs/acceptance.md cases that concern the pipeline as a whole.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/syscall.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string last_line(const std::string& out) {
  std::string s = out;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s.substr(s.rfind('\n') == std::string::npos ? 0 : s.rfind('\n') + 1);
}

void expect_verifies(RunTest& t, const std::string& id) {
  auto v = t.sealrun({"receipt", "verify", t.receipt_path(id)});
  EXPECT_EQ(v.status.code, 0) << v.out << v.err;
}

TEST_F(RunTest, BuiltRunRecordsOutputsAndAVerifiableReceipt) {
  auto a = freeze(
      "cat input.txt > /out/copy.txt; echo $SOURCE_DATE_EPOCH > /out/epoch; "
      "echo to-stdout; ls /opt/toolchain > /out/toolchain-listing");
  auto c = run(a, "ok1");
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  EXPECT_EQ(last_line(c.out), receipt_path("ok1"));
  json r = receipt("ok1");
  EXPECT_EQ(r["state"], "built");
  EXPECT_EQ(r["exit"], 0);
  EXPECT_EQ(r["stop_confirmed"], true);
  EXPECT_EQ(r["grant"]["mechanism"], "bwrap");
  ASSERT_EQ(r["outputs"].size(), 3u);
  EXPECT_EQ(r["outputs"][0]["path"], "copy.txt");
  EXPECT_EQ(read_text(state_ + "/results/ok1/out/copy.txt"), "input\n");
  EXPECT_EQ(read_text(state_ + "/results/ok1/out/toolchain-listing"), "tool.txt\n");
  EXPECT_EQ(r["commands"][0]["stdout"]["tail"], "to-stdout\n");
  EXPECT_EQ(r["memory"]["backend"], "cgroup-v1");
  EXPECT_FALSE(fs::exists(state_ + "/owned/ok1"));  // the owned root is removed
  expect_verifies(*this, "ok1");
}

TEST_F(RunTest, AdmissionBytesThatDifferFromTheShaAreRefusedAndNothingRuns) {
  auto a = freeze("touch /out/ran");
  std::string bytes = read_text(a.path);
  bytes[bytes.find("/out/ran") + 5] = 'X';  // one byte
  write_text(a.path, bytes);
  auto c = run(a, "tampered");
  EXPECT_EQ(c.status.code, 3) << c.out << c.err;
  json r = receipt("tampered");
  EXPECT_EQ(r["state"], "not_run");
  EXPECT_TRUE(r["commands"].empty());
  EXPECT_FALSE(fs::exists(state_ + "/results/tampered/out/ran"));
  EXPECT_FALSE(fs::exists(state_ + "/results/tampered/out/raX"));
  expect_verifies(*this, "tampered");
}

TEST_F(RunTest, AlteredSourceFileIsRefusedNamingIt) {
  auto a = freeze("touch /out/ran");
  write_text(src_ + "/input.txt", "inpuT\n");
  auto c = run(a, "altered");
  EXPECT_EQ(c.status.code, 3);
  json r = receipt("altered");
  EXPECT_NE(r["reason"].get<std::string>().find("input.txt"), std::string::npos) << r["reason"];
  EXPECT_TRUE(r["commands"].empty());
}

TEST_F(RunTest, ASecondRunWithTheSameIdIsRefusedAndTheFirstReceiptIsIntact) {
  auto a = freeze("true");
  ASSERT_EQ(run(a, "twice").status.code, 0);
  std::string built = state_ + "/results/twice/receipt.json";
  std::string first = read_text(built);
  auto c = run(a, "twice");
  EXPECT_EQ(c.status.code, 2);
  EXPECT_NE(c.err.find("was used before"), std::string::npos) << c.err;
  EXPECT_EQ(read_text(built), first);
  // The refusal has a receipt of its own, elsewhere.
  EXPECT_NE(receipt_path("twice"), built);
  EXPECT_EQ(receipt("twice")["state"], "not_run");
}

TEST_F(RunTest, NoBwrapMeansExit4NamingTheDimensionsAndTheMechanism) {
  auto a = freeze("touch /out/ran");
  auto c = sealrun({"run", a.path, "--sha256", a.sha256, "--id", "nobwrap", "--state-dir", state_},
                   std::vector<std::string>{"PATH=/nonexistent"});
  EXPECT_EQ(c.status.code, 4) << c.out << c.err;
  json r = receipt("nobwrap");
  std::string reason = r["reason"];
  EXPECT_EQ(r["state"], "not_run");
  EXPECT_NE(reason.find("bwrap"), std::string::npos) << reason;
  EXPECT_NE(reason.find("filesystem"), std::string::npos) << reason;
  EXPECT_FALSE(fs::exists(state_ + "/results/nobwrap/out/ran"));
}

TEST_F(RunTest, WallClockLimitStopsTheJob) {
  auto a = freeze("sleep 60", {"limits.wall_clock_s=1"});
  int64_t start = monotonic_ms();
  auto c = run(a, "slow");
  EXPECT_EQ(c.status.code, 5) << c.out << c.err;
  EXPECT_LT(monotonic_ms() - start, 30000);
  json r = receipt("slow");
  EXPECT_EQ(r["state"], "failed");
  EXPECT_EQ(r["commands"][0]["timed_out"], true);
  EXPECT_EQ(r["stop_confirmed"], true);
  expect_verifies(*this, "slow");
}

TEST_F(RunTest, OwnedGrowthGuardStopsTheJobWithExit6) {
  auto a = freeze("dd if=/dev/zero of=/scratch/big bs=1M count=64 2>/dev/null; sleep 60",
                  {"limits.owned_max_bytes=16777216"});
  int64_t start = monotonic_ms();
  auto c = run(a, "grow");
  EXPECT_EQ(c.status.code, 6) << c.out << c.err;
  EXPECT_LT(monotonic_ms() - start, 30000);
  json r = receipt("grow");
  EXPECT_EQ(r["guard"]["name"], "owned_max_bytes");
  // In a directory the census sees the bytes pass the limit; on a file system of its own the
  // kernel refuses them (ENOSPC) and the guard reports the space full before they could.
  if (r["owned_space"]["kind"] == "directory")
    EXPECT_GE(r["guard"]["observed"].get<uint64_t>(), 16777216u);
  else
    EXPECT_NE(r["reason"].get<std::string>().find("owned space full"), std::string::npos)
        << r["reason"];
  EXPECT_EQ(r["stop_confirmed"], true);
  expect_verifies(*this, "grow");
}

TEST_F(RunTest, AllocationPastMemoryMaxIsAnOomKillNamedInTheReceipt) {
  auto a = freeze("x=$(head -c 300000000 /dev/zero | tr '\\0' x); echo survived > /out/survived",
                  {"limits.memory_high_bytes=60000000", "limits.memory_max_bytes=67108864"});
  auto c = run(a, "oom");
  EXPECT_EQ(c.status.code, 5) << c.out << c.err;
  json r = receipt("oom");
  EXPECT_EQ(r["state"], "failed");
  EXPECT_NE(r["reason"].get<std::string>().find("memory"), std::string::npos) << r["reason"];
  EXPECT_GE(r["memory"]["events"]["oom_kill"].get<uint64_t>(), 1u);
  EXPECT_EQ(
      r["memory"]["swap_used_bytes"].is_null() ? 0 : r["memory"]["swap_used_bytes"].get<uint64_t>(),
      0u);
  EXPECT_FALSE(fs::exists(state_ + "/results/oom/out/survived"));
  expect_verifies(*this, "oom");
}

TEST_F(RunTest, ForkBombIsHeldByThePidsLimitAndTheGroupIsEmptiedAfterwards) {
  // After starting the bomb the job forks nothing more (dash exits when a fork fails, and with the
  // pids limit reached `sleep` could not start): it counts for a while, then writes with a builtin.
  auto a = freeze(
      "bomb() { bomb | bomb & }; bomb; i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done; "
      "echo done > /out/done",
      {"limits.pids_max=64", "limits.wall_clock_s=20"});
  auto c = run(a, "bomb");
  json r = receipt("bomb");
  EXPECT_EQ(r["stop_confirmed"], true) << c.out << c.err;
  bool limit_seen = false;
  for (const auto& l : r["memory"]["limits"])
    if (l["name"] == "pids_max") limit_seen = l["observed"] == 64 && l["applied"] == true;
  EXPECT_TRUE(limit_seen) << r["memory"].dump();
  EXPECT_TRUE(fs::exists(state_ + "/results/bomb/out/done"));  // the job itself went on
}

TEST_F(RunTest, PodmanRunFromThePinnedImageIsBuiltAndLeavesNothing) {
  auto built = busybox_fixture_dir();
  ASSERT_TRUE(built.ok()) << built.error().message();
  const std::string fixtures = *built;
  auto c0 =
      sealrun({"admit", "freeze", "--out", dir_ / "podman.json", "--source", src_, "--toolchain",
               toolchain_, "--toolchain-mount", "/opt/toolchain", "--image",
               fixtures + "/busybox.oci.tar", "--", "/bin/sh", "-c",
               "cat input.txt > /out/copy.txt; grep -E 'NoNewPrivs|CapEff' /proc/self/status"});
  ASSERT_EQ(c0.status.code, 0) << c0.err;
  Frozen a{dir_ / "podman.json", c0.out.substr(0, 64)};
  // Rootless podman takes its storage by path, as the job user: the state directory's parents
  // must be searchable (the run refuses with that advice otherwise; docs/proofs.md says so).
  fs::permissions(dir_.path(),
                  fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  auto c = run(a, "pm", {"--mechanism", "podman"});
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  json r = receipt("pm");
  EXPECT_EQ(r["grant"]["mechanism"], "podman");
  EXPECT_EQ(r["state"], "built");
  std::string tail = r["commands"][0]["stdout"]["tail"];
  EXPECT_NE(tail.find("NoNewPrivs:\t1"), std::string::npos) << tail;
  EXPECT_NE(tail.find("CapEff:\t0000000000000000"), std::string::npos) << tail;
  EXPECT_EQ(read_text(state_ + "/results/pm/out/copy.txt"), "input\n");
  EXPECT_FALSE(fs::exists(state_ + "/owned/pm"));
  expect_verifies(*this, "pm");
}

}  // namespace
}  // namespace sealrun::testing
