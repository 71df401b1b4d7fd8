// SPDX-License-Identifier: Apache-2.0
// /out on the kernel's bound (issue 28 item 3): as root with loop devices, the job's /out is a file
// system of the run's own, sized to result_max_bytes with result_max_inodes inodes, under bwrap and
// podman alike. A 4 GiB fallocate and 400,000 empty files against a 64 MiB / 10,000-inode /out end
// in ENOSPC inside the job, and the host holds at most that bound of it; what the job left is
// copied into results/<id>/out as it was (kinds, links, modes, holes). Also: /out and /src are
// nosuid,nodev under both mechanisms, and the receipt names the limits reached.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kMiB = 1 << 20;

std::string stderr_tail(const json& r) { return r["commands"][0]["stderr"]["tail"]; }

bool has(const json& list, const std::string& v) {
  for (const auto& e : list)
    if (e == v) return true;
  return false;
}

class ResultSpace : public RunTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    RunTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "a file system of the run's own needs root";
  }
};

TEST_P(ResultSpace, FallocateAndManyFilesEndInEnospcWithinTheBound) {
  const std::string mechanism = GetParam();
  Frozen a = freeze_for(
      mechanism,
      "grep -E ' /(out|src) ' /proc/self/mountinfo >&2; "
      "fallocate -l 4G /out/big; echo fallocate-exit=$? >&2; rm -f /out/big; "
      "i=0; while [ $i -lt 400000 ] && true 2>/dev/null >/out/f$i; do "
      "i=$((i+1)); done; echo made=$i >&2",
      "r40-" + mechanism + ".json",
      {"--set", "limits.result_max_bytes=67108864", "--set", "limits.result_max_inodes=10000"});
  const std::string id = "r40-" + mechanism;
  auto c = run(a, id, {"--mechanism", mechanism});
  json r = receipt(id);
  ASSERT_TRUE(r["result_space"].is_object()) << c.out << c.err << r.dump(1);
  EXPECT_EQ(r["result_space"]["kind"], "filesystem") << r["result_space"].dump();
  EXPECT_EQ(r["result_space"]["size_bytes"], 64 * kMiB);
  EXPECT_EQ(r["result_space"]["inodes"], 10000);
  std::string err = stderr_tail(r);
  EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;
  EXPECT_EQ(err.find("fallocate-exit=0"), std::string::npos) << err;
  size_t at = err.find("made=");
  ASSERT_NE(at, std::string::npos) << err;
  uint64_t made = std::stoull(err.substr(at + 5));
  EXPECT_LT(made, 10000u) << err;
  EXPECT_GT(made, 9000u) << err;
  // Every bind the job writes through is nosuid,nodev (bwrap's rule, now podman's too).
  for (const char* mount : {" /out ", " /src "}) {
    size_t line = err.find(mount);
    ASSERT_NE(line, std::string::npos) << mount << err;
    std::string text = err.substr(line, err.find('\n', line) - line);
    EXPECT_NE(text.find("nosuid"), std::string::npos) << text;
    EXPECT_NE(text.find("nodev"), std::string::npos) << text;
  }
  // The host holds at most the bound: what was taken into results/<id>/out, and every census
  // sample of the result tree.
  uint64_t blocks = 0, entries = 0;
  for (const auto& e : fs::recursive_directory_iterator(state_ + "/results/" + id + "/out")) {
    struct stat st {};
    ASSERT_EQ(::lstat(e.path().c_str(), &st), 0);
    blocks += static_cast<uint64_t>(st.st_blocks) * 512;
    ++entries;
  }
  EXPECT_LE(blocks, 64 * kMiB);
  EXPECT_LE(entries, 10000u);
  for (const auto& s : r["samples"]) EXPECT_LE(s["result_bytes"].get<uint64_t>(), 65 * kMiB) << s;
  EXPECT_TRUE(has(r["limits_hit"], "result_space")) << r["limits_hit"];
  // Nothing of the file system is left.
  EXPECT_FALSE(fs::exists(state_ + "/owned/" + id + "+out"));
  EXPECT_FALSE(fs::exists(state_ + "/ownedfs/" + id + "+out.img"));
  EXPECT_FALSE(fs::exists(state_ + "/ownedfs/" + id + "+out.json"));
}

// The runner's writable source likewise: an action's admission takes its outputs from a writable
// /src (mounts.outputs_from "source"), which is then the result space holding the source copy.
TEST_P(ResultSpace, TheWritableSourceEndsInEnospcWithinTheBound) {
  const std::string mechanism = GetParam();
  Frozen a = freeze_for(
      mechanism,
      "grep -E ' /src ' /proc/self/mountinfo >&2; cd /src; "
      "fallocate -l 4G big; echo fallocate-exit=$? >&2; rm -f big; "
      "i=0; while [ $i -lt 400000 ] && true 2>/dev/null >f$i; do "
      "i=$((i+1)); done; echo made=$i >&2",
      "r40src-" + mechanism + ".json",
      {"--set", "mounts.source_writable=true", "--set", "mounts.outputs_from=source", "--set",
       "limits.result_max_bytes=67108864", "--set", "limits.result_max_inodes=10000"});
  const std::string id = "r40src-" + mechanism;
  auto c = run(a, id, {"--mechanism", mechanism});
  json r = receipt(id);
  ASSERT_TRUE(r["result_space"].is_object()) << c.out << c.err << r.dump(1);
  EXPECT_EQ(r["result_space"]["kind"], "filesystem") << r["result_space"].dump();
  std::string err = stderr_tail(r);
  EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;
  EXPECT_EQ(err.find("fallocate-exit=0"), std::string::npos) << err;
  size_t at = err.find("made=");
  ASSERT_NE(at, std::string::npos) << err;
  uint64_t made = std::stoull(err.substr(at + 5));
  EXPECT_LT(made, 10000u) << err;
  EXPECT_GT(made, 9000u) << err;
  size_t line = err.find(" /src ");
  ASSERT_NE(line, std::string::npos) << err;
  std::string text = err.substr(line, err.find('\n', line) - line);
  EXPECT_NE(text.find("nosuid"), std::string::npos) << text;
  EXPECT_NE(text.find("nodev"), std::string::npos) << text;
  EXPECT_EQ(text.find(" ro,"), std::string::npos) << text;  // writable
  // The new files are the outputs, taken into results/<id>/out: at most the bound.
  uint64_t blocks = 0, entries = 0;
  for (const auto& e : fs::recursive_directory_iterator(state_ + "/results/" + id + "/out")) {
    struct stat st {};
    ASSERT_EQ(::lstat(e.path().c_str(), &st), 0);
    blocks += static_cast<uint64_t>(st.st_blocks) * 512;
    ++entries;
  }
  EXPECT_LE(blocks, 64 * kMiB);
  EXPECT_GT(entries, 9000u);
  EXPECT_LE(entries, 10000u);
  for (const auto& s : r["samples"]) EXPECT_LE(s["result_bytes"].get<uint64_t>(), 65 * kMiB) << s;
  EXPECT_TRUE(has(r["limits_hit"], "result_space")) << r["limits_hit"];
  EXPECT_FALSE(fs::exists(state_ + "/owned/" + id + "+out"));
  EXPECT_FALSE(fs::exists(state_ + "/ownedfs/" + id + "+out.img"));
  // The host's tree is what was admitted.
  EXPECT_FALSE(fs::exists(src_ + "/f0"));
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, ResultSpace, ::testing::Values("bwrap", "podman"));

// A writable source that does not fit in result_max_bytes stays the census's to guard, and the
// receipt says why; the run goes on as before.
TEST_F(RunTest, AWritableSourceTooBigForItsResultSpaceIsGuardedByTheCensus) {
  if (::geteuid() != 0) GTEST_SKIP() << "a file system of the run's own needs root";
  write_text(src_ + "/many.txt", std::string(20 * kMiB, 'x'));
  Frozen a = freeze("echo new > made.txt",
                    {"mounts.source_writable=true", "mounts.outputs_from=source",
                     "limits.result_max_bytes=16777216"},
                    "too-big.json");
  auto c = run(a, "too-big");
  json r = receipt("too-big");
  EXPECT_EQ(r["result_space"]["kind"], "directory") << r["result_space"].dump();
  EXPECT_NE(r["result_space"].value("why_not", "").find("source copy"), std::string::npos)
      << r["result_space"].dump();
  EXPECT_FALSE(fs::exists(state_ + "/owned/too-big+out"));
  EXPECT_FALSE(fs::exists(state_ + "/ownedfs/too-big+out.img"));
}

// What the job left is what results/<id>/out holds: kinds, hard links, modes, holes.
TEST_F(RunTest, TheOutputsAreTakenOffTheResultSpaceAsTheyWere) {
  if (::geteuid() != 0) GTEST_SKIP() << "a file system of the run's own needs root";
  Frozen a = freeze(
      "grep ' /out ' /proc/self/mountinfo >&2; cd /out && echo hello > a && ln a b && ln -s a s && "
      "mkfifo p && chmod 0751 a && "
      "truncate -s 100M sparse && mkdir -p d/e/f && echo deep > d/e/f/g && chmod 0700 d",
      {}, "copy.json");
  auto c = run(a, "copy");
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  json r = receipt("copy");
  EXPECT_EQ(r["result_space"]["kind"], "filesystem") << r["result_space"].dump();
  // The job's /out was that file system (on a loop device), not results/<id>/out.
  EXPECT_NE(stderr_tail(r).find(" - ext4 /dev/loop"), std::string::npos) << stderr_tail(r);
  const std::string out = state_ + "/results/copy/out/";
  struct stat sa {
  }, sb{}, ss{}, sp{}, sd{}, sg{};
  ASSERT_EQ(::lstat((out + "a").c_str(), &sa), 0);
  ASSERT_EQ(::lstat((out + "b").c_str(), &sb), 0);
  EXPECT_EQ(sa.st_ino, sb.st_ino);  // still one file
  EXPECT_EQ(sa.st_mode & 07777, 0751u);
  ASSERT_EQ(::lstat((out + "s").c_str(), &ss), 0);
  EXPECT_TRUE(S_ISLNK(ss.st_mode));
  EXPECT_EQ(fs::read_symlink(out + "s"), "a");
  ASSERT_EQ(::lstat((out + "p").c_str(), &sp), 0);
  EXPECT_TRUE(S_ISFIFO(sp.st_mode));
  ASSERT_EQ(::lstat((out + "sparse").c_str(), &sd), 0);
  EXPECT_EQ(sd.st_size, 100 * static_cast<off_t>(kMiB));
  EXPECT_LT(sd.st_blocks, 64);  // still a hole, not 100 MiB of zeros on the host
  ASSERT_EQ(::lstat((out + "d/e/f/g").c_str(), &sg), 0);
  struct stat sdir {};
  ASSERT_EQ(::lstat((out + "d").c_str(), &sdir), 0);
  EXPECT_EQ(sdir.st_mode & 07777, 0700u);
  // Nothing of the file system itself (mke2fs's lost+found, the filler inodes) is an output.
  EXPECT_FALSE(fs::exists(out + "lost+found"));
  EXPECT_FALSE(fs::exists(out + ".sealrun-spare-inodes"));
  EXPECT_EQ(r["outputs_total"], 6) << r["outputs"].dump(1);  // a b s p sparse d/e/f/g
  // The output list names the second name as a link of the first.
  bool linked = false;
  for (const auto& o : r["outputs"])
    linked = linked || (o["path"] == "b" && o.contains("hardlink_of"));
  EXPECT_TRUE(linked) << r["outputs"].dump(1);
}

// A fork refused at pids.max is in the receipt's limits_hit.
TEST_F(RunTest, APidsLimitHitIsInTheReceipt) {
  if (::geteuid() != 0) GTEST_SKIP() << "resource groups need root here";
  Frozen a = freeze("for i in $(seq 60); do sleep 3 & done 2>/dev/null; wait; true",
                    {"limits.pids_max=16"}, "pids.json");
  auto c = run(a, "pids");
  json r = receipt("pids");
  EXPECT_TRUE(has(r["limits_hit"], "pids")) << c.out << c.err << r["limits_hit"];
  EXPECT_FALSE(has(r["limits_hit"], "memory")) << r["limits_hit"];
}

// `admit check` refuses what `run` refuses: a writable mount on a reserved system path.
TEST_F(RunTest, AdmitCheckRefusesAViewRunRefuses) {
  Frozen a = freeze("true", {"mounts.scratch=/etc"}, "etc-scratch.json");
  auto check = sealrun({"admit", "check", a.path, "--sha256", a.sha256, "--state-dir", state_});
  EXPECT_EQ(check.status.code, 3) << check.out << check.err;
  EXPECT_NE(check.err.find("would refuse its view"), std::string::npos) << check.err;
  auto c = run(a, "etc-scratch");
  EXPECT_EQ(c.status.code, 4) << c.out << c.err;
}

// `sealrun sweep` after a SIGKILL to the controller while its job runs, the job having written an
// output: the outputs of a run that no receipt vouches for are gone, results/<id> stays (the id
// named a run that executed). With a result space they were on its file system (torn down); without
// one (a result_max_bytes below 16 MiB) they were in results/<id>/out, and sweep removes them.
class SweepKilled : public RunTest, public ::testing::WithParamInterface<uint64_t> {};

TEST_P(SweepKilled, RemovesTheOutputsOfAKilledRun) {
  if (::geteuid() != 0) GTEST_SKIP() << "runs jobs as the job user and makes cgroups: root";
  const uint64_t bound = GetParam();
  const std::string id = "killed-" + std::to_string(bound >> 20);
  Frozen a = freeze("echo planted > /out/x; mkdir /out/d; echo y > /out/d/y; sleep 600",
                    {"limits.result_max_bytes=" + std::to_string(bound)}, id + ".json");
  const bool has_space = bound >= 16 * kMiB;
  const std::string written =
      has_space ? state_ + "/owned/" + id + "+out/out/d/y" : state_ + "/results/" + id + "/out/d/y";
  auto controller = spawn(
      sealrun_options({"run", a.path, "--sha256", a.sha256, "--id", id, "--state-dir", state_}));
  ASSERT_TRUE(controller.ok()) << controller.error().message();
  bool seen = false;
  for (int i = 0; i < 1200 && !seen; ++i) {
    std::error_code ec;  // the result space is in the controller's mount namespace (live())
    seen = fs::exists(live(state_, written), ec);
    if (!seen) ::usleep(100 * 1000);
  }
  (void)controller->signal(SIGKILL);
  (void)controller->wait();
  ASSERT_TRUE(seen) << "the job never wrote " << written;
  auto s = sealrun({"sweep", "--state-dir", state_});
  EXPECT_EQ(s.status.code, 0) << s.out << s.err;
  EXPECT_NE(s.out.find("sweep: nothing left behind"), std::string::npos) << s.out << s.err;
  const std::string results = state_ + "/results/" + id;
  EXPECT_TRUE(fs::is_directory(results)) << s.out;
  EXPECT_TRUE(fs::is_empty(results + "/out")) << s.out;
  EXPECT_FALSE(fs::exists(results + "/outputs.jsonl"));
  EXPECT_FALSE(fs::exists(results + "/receipt.json"));
  EXPECT_FALSE(fs::exists(state_ + "/owned/" + id + "+out"));
  EXPECT_FALSE(fs::exists(state_ + "/ownedfs/" + id + "+out.img"));
  if (!has_space) {
    EXPECT_NE(s.out.find("no receipt vouches for them"), std::string::npos) << s.out;
  }
  // The id stays used: a new run under it is refused.
  auto again = run(a, id);
  EXPECT_EQ(again.status.code, 2) << again.out << again.err;
}

INSTANTIATE_TEST_SUITE_P(Bounds, SweepKilled, ::testing::Values(8 * kMiB, 64 * kMiB),
                         [](const auto& info) {
                           return info.param >= 16 * kMiB ? std::string("ResultSpace")
                                                          : std::string("Directory");
                         });

}  // namespace
}  // namespace sealrun::testing
